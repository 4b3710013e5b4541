"""tau-Lop parameters: per channel the overhead o^c(m) and the transfer time L^c(m, tau), as tables.

Paper 000 section 3: a transmission of m bytes through channel c costs
T^c(m) = o^c(m) + sum over its transfers k of L^k(m, 1) (eq. 1-3), and tau
concurrent transmissions sharing the channel cost
tau || T^c(m) = o^c(m) + sum_k L^k(m, tau): the overhead belongs to the
processor and is not affected by concurrency.

Tables are interpolated linearly in m. The rule beyond a table:

* below the first size m_0 the value at m_0 is used (a message smaller than
  the smallest measured one costs what that one costs);
* above the last size the table is extended along its last segment, so the
  cost keeps growing linearly in m (paper 000: L(A m, tau) = A L(m, tau) for
  large m); a one-row table is extended through the origin;
* above the largest measured concurrency tau_max the channel is taken as
  saturated: L(m, tau) = L(m, tau_max) * tau / tau_max, the upper bound of
  the constraint L(m, tau) <= L(m, A tau) <= A L(m, tau).

Loading checks the model's constraints (paper 000 section 3):
L(m, 1) <= L(m, k) <= k L(m, 1) for every row, and o and every L column
non-decreasing in m.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from commcost.errors import InputError

_RTOL = 1e-9  # measured tables are rounded when written; allow that much slack in the checks


@dataclass(frozen=True, eq=False)
class TauLopChannel:
    """The tau-Lop tables of one channel: sizes m (bytes), o(m) and L(m, tau) for tau = 1..tau_max (seconds)."""

    m: np.ndarray
    o_s: np.ndarray
    L_s: np.ndarray  # shape (len(m), tau_max)

    def __post_init__(self) -> None:
        object.__setattr__(self, "m", np.asarray(self.m, dtype=np.float64))
        object.__setattr__(self, "o_s", np.asarray(self.o_s, dtype=np.float64))
        L = np.asarray(self.L_s, dtype=np.float64)
        object.__setattr__(self, "L_s", L.reshape(len(self.m), -1) if L.ndim == 1 else L)

    @property
    def tau_max(self) -> int:
        """The largest concurrency the table was measured at."""
        return self.L_s.shape[1]

    def violations(self) -> list[tuple[int, str]]:
        """The rows that break the model's constraints, as (row index, what is wrong)."""
        problems: list[tuple[int, str]] = []
        m, o, L = self.m, self.o_s, self.L_s
        if len(m) == 0:
            return [(0, "expected at least one row")]
        if L.shape[0] != len(m) or o.shape != m.shape:
            return [(0, "expected one o and one L row per size m")]
        if L.shape[1] < 1:
            return [(0, "expected L(m, tau) for at least tau = 1")]
        bad = ~np.isfinite(m) | (m < 0)
        for i in np.flatnonzero(bad):
            problems.append((int(i), f"m = {m[i]:g} must be a size >= 0"))
        for i in np.flatnonzero(np.diff(m) <= 0):
            problems.append((int(i) + 1, f"m = {m[i + 1]:g} must be larger than the previous m = {m[i]:g}"))
        for i in np.flatnonzero(~np.isfinite(o) | (o < 0)):
            problems.append((int(i), f"o(m={m[i]:g}) = {o[i]:g} must be a time >= 0"))
        for i, k in zip(*np.nonzero(~np.isfinite(L) | (L <= 0))):
            problems.append((int(i), f"L(m={m[i]:g}, tau={k + 1}) = {L[i, k]:g} must be a time > 0"))
        if problems:
            return problems
        L1 = L[:, :1]
        taus = np.arange(1, L.shape[1] + 1)
        below = L < L1 * (1 - _RTOL)
        above = L > L1 * taus * (1 + _RTOL)
        for i, k in zip(*np.nonzero(below)):
            problems.append((int(i), f"L(m={m[i]:g}, tau={k + 1}) = {L[i, k]:g} is below L(m, 1) = {L[i, 0]:g}; "
                                     "expected L(m,1) <= L(m,tau)"))
        for i, k in zip(*np.nonzero(above)):
            problems.append((int(i), f"L(m={m[i]:g}, tau={k + 1}) = {L[i, k]:g} exceeds {k + 1} * L(m, 1) = "
                                     f"{(k + 1) * L[i, 0]:g}; expected L(m,tau) <= tau * L(m,1)"))
        for i in np.flatnonzero(np.diff(o) < -_RTOL * np.abs(o[1:])):
            problems.append((int(i) + 1, f"o(m={m[i + 1]:g}) = {o[i + 1]:g} is below o at the previous size "
                                         f"({o[i]:g}); expected o non-decreasing in m"))
        drops = np.diff(L, axis=0) < -_RTOL * np.abs(L[1:])
        for i, k in zip(*np.nonzero(drops)):
            problems.append((int(i) + 1, f"L(m={m[i + 1]:g}, tau={k + 1}) = {L[i + 1, k]:g} is below its value at "
                                         f"the previous size ({L[i, k]:g}); expected L non-decreasing in m"))
        return sorted(problems)

    def check(self) -> "TauLopChannel":
        """Raise InputError naming the first row that breaks a constraint; return self otherwise."""
        problems = self.violations()
        if problems:
            row, what = problems[0]
            raise InputError(what, where=f"row {row}")
        return self

    def L_column(self, tau: int) -> np.ndarray:
        """L(m_i, tau) at the table's sizes, with the saturation rule above tau_max."""
        if tau < 1:
            raise ValueError("tau must be >= 1")
        if tau <= self.tau_max:
            return self.L_s[:, tau - 1]
        return self.L_s[:, -1] * (tau / self.tau_max)

    def o(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Overhead o(m), interpolated by the rule above."""
        return _interp(self.m, self.o_s, np.asarray(nbytes, dtype=np.float64))

    def L(self, nbytes: np.ndarray | float, tau: int) -> np.ndarray:
        """Transfer time L(m, tau), interpolated by the rule above."""
        return _interp(self.m, self.L_column(tau), np.asarray(nbytes, dtype=np.float64))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a TOML section."""
        return {"m": self.m.tolist(), "o_s": self.o_s.tolist(), "L_s": self.L_s.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TauLopChannel":
        """Tables from plain data: m = [...], o_s = [...], L_s = [[L(m0,1), L(m0,2), ...], ...]."""
        unknown = set(data) - {"m", "o_s", "L_s"}
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]!r}; expected m, o_s, L_s", where=sorted(unknown)[0])
        for key in ("m", "o_s", "L_s"):
            if key not in data:
                raise InputError(f"missing {key}; expected m, o_s and L_s tables", where=key)
        try:
            m = np.asarray(data["m"], dtype=np.float64)
            o = np.asarray(data["o_s"], dtype=np.float64)
            L = np.asarray(data["L_s"], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(f"expected arrays of numbers ({exc})") from None
        if m.ndim != 1 or o.shape != m.shape or L.ndim != 2 or L.shape[0] != len(m):
            raise InputError(
                f"expected m and o_s of equal length and L_s with one row per m; got {len(m)} sizes, "
                f"{o.size} overheads, L_s of shape {L.shape}",
                where="L_s",
            )
        return cls(m, o, L).check()


def _interp(xs: np.ndarray, ys: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Linear interpolation with a flat start and a linear continuation past the last point."""
    inside = np.interp(x, xs, ys)
    if len(xs) >= 2:
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    else:
        slope = ys[-1] / xs[-1] if xs[-1] > 0 else 0.0
    return np.where(x > xs[-1], ys[-1] + slope * (x - xs[-1]), inside)


@dataclass(frozen=True, eq=False)
class TransmissionLaw:
    """T^c(m, tau) = o^c(m) + sum_k L^k(m, tau) of one channel, compiled for fast calls.

    For each tau up to the largest tau_max of its tables, the sum is one
    piecewise-linear function of m on the union of the tables' sizes, with
    the same continuation rules as the tables (paper 000 eq. 1-3 under the
    || operator). Beyond that every table is saturated, so
    T(m, tau) = o(m) + tau * S(m) with S(m) = sum_k L^k(m, tau_max_k) / tau_max_k.
    """

    overhead: TauLopChannel
    transfers: tuple[TauLopChannel, ...]
    _cache: dict[int, tuple[list[float], list[float], float]] = field(default_factory=dict, repr=False)

    tau_saturated: int = field(init=False)  # above it every transfer table is saturated

    def __post_init__(self) -> None:
        object.__setattr__(self, "tau_saturated", max((t.tau_max for t in self.transfers), default=1))

    def _grid(self, values: Callable[[np.ndarray], np.ndarray]) -> tuple[list[float], list[float], float]:
        tables = (self.overhead, *self.transfers)
        xs = np.unique(np.concatenate([t.m for t in tables]))
        ys = values(xs)
        # slope past the last size: each table continues along its own last segment
        far = np.array([xs[-1] + 1.0])
        return xs.tolist(), ys.tolist(), float(values(far)[0] - ys[-1])

    def _compiled(self, tau: int) -> tuple[list[float], list[float], float]:
        hit = self._cache.get(tau)
        if hit is None:
            if tau > self.tau_saturated:
                raise ValueError("saturated concurrencies use the o + tau*S form")
            hit = self._grid(lambda x: self.overhead.o(x) + sum(t.L(x, tau) for t in self.transfers))
            self._cache[tau] = hit
        return hit

    def _saturated(self) -> tuple[tuple[list[float], list[float], float], tuple[list[float], list[float], float]]:
        hit = self._cache.get(-1)
        if hit is None:
            o_grid = self._grid(self.overhead.o)
            s_grid = self._grid(lambda x: sum(t.L(x, t.tau_max) / t.tau_max for t in self.transfers))
            hit = (o_grid, s_grid)  # type: ignore[assignment]
            self._cache[-1] = hit  # type: ignore[assignment]
        return hit  # type: ignore[return-value]

    def time(self, nbytes: float, tau: int) -> float:
        """tau || T^c(m): seconds for ``tau`` concurrent transmissions of ``nbytes`` each."""
        if tau > self.tau_saturated:
            o_grid, s_grid = self._saturated()
            return _at(o_grid, nbytes) + tau * _at(s_grid, nbytes)
        return _at(self._compiled(tau), nbytes)

    def times(self, nbytes: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Vectorized :meth:`time` over arrays of sizes and concurrencies."""
        nb, tb = np.broadcast_arrays(np.asarray(nbytes, dtype=np.float64), np.asarray(tau, dtype=np.int64))
        out = np.empty(nb.shape)
        saturated = tb > self.tau_saturated
        if np.any(saturated):
            o_grid, s_grid = self._saturated()
            x = nb[saturated]
            out[saturated] = _at_many(o_grid, x) + tb[saturated] * _at_many(s_grid, x)
        for t in np.unique(tb[~saturated]):
            sel = tb == t
            out[sel] = _at_many(self._compiled(int(t)), nb[sel])
        return out


def _at(grid: tuple[list[float], list[float], float], x: float) -> float:
    """A compiled piecewise-linear function at one point (flat start, linear continuation)."""
    xs, ys, slope = grid
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1] + slope * (x - xs[-1])
    i = bisect.bisect_right(xs, x)
    x0 = xs[i - 1]
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (xs[i] - x0)


def _at_many(grid: tuple[list[float], list[float], float], x: np.ndarray) -> np.ndarray:
    """:func:`_at` over an array."""
    xs, ys, slope = grid
    return np.where(x > xs[-1], ys[-1] + slope * (x - xs[-1]), np.interp(x, xs, ys))


@dataclass(frozen=True, eq=False)
class TauLopParams:
    """tau-Lop tables by name: every channel's overhead, and every transfer kind's L table.

    A platform channel named c with transfers (k1, k2, ...) takes o from the
    table named c and L from the tables named k1, k2, ...
    """

    tables: dict[str, TauLopChannel]

    def law(self, channel_name: str, transfers: tuple[str, ...]) -> TransmissionLaw:
        """The compiled T^c(m, tau) of a channel."""
        for name in (channel_name, *transfers):
            if name not in self.tables:
                raise InputError(
                    f"tau-Lop parameters have no table {name!r} (needed by channel {channel_name!r}); "
                    f"expected one of {sorted(self.tables)}",
                    where=f"taulop.{name}",
                )
        return TransmissionLaw(self.tables[channel_name], tuple(self.tables[k] for k in transfers))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TauLopParams":
        """From ``{name: {m, o_s, L_s}}``; errors name the table and the row."""
        tables = {}
        for name, table in data.items():
            if not isinstance(table, dict):
                raise InputError("expected a table with m, o_s and L_s", where=name)
            try:
                tables[name] = TauLopChannel.from_dict(table)
            except InputError as exc:
                raise InputError(exc.message, where=f"{name}.{exc.where}" if exc.where else name) from None
        return cls(tables)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a TOML section."""
        return {name: table.to_dict() for name, table in self.tables.items()}
