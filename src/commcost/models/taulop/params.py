"""tau-Lop parameters: per channel the overhead o^c(m) and the transfer time L^c(m, tau), as tables.

Paper 000 section 3: a transmission of m bytes through channel c costs
T^c(m) = o^c(m) + sum over its transfers k of L^k(m, 1) (eq. 1-3), and tau
concurrent transmissions sharing the channel cost
tau || T^c(m) = o^c(m) + sum_k L^k(m, tau): the overhead belongs to the
processor and is not affected by concurrency.

Tables are interpolated linearly in m. Beyond a table, rules that a
parameter file chooses (``[taulop] beyond_m``, ``beyond_tau``):

* below the first size m_0 the value at m_0 is used (a message smaller than
  the smallest measured one costs what that one costs);
* above the last size M, ``beyond_m = "chunks"`` (the default) follows paper
  000 section 3, L(A m, tau) = A L(m, tau): a message of q M + r bytes costs
  q whole chunks of M plus the remainder r priced from the table,
  q v(M) + v(r) (v(0) = 0), for o and for every L; it is also what the
  authors' library libtaulop does. ``beyond_m = "slope"`` extends the last
  segment instead (a one-row table through the origin);
* above the largest measured concurrency tau_max, ``beyond_tau = "linear"``
  (the default) takes the channel as saturated,
  L(m, tau) = L(m, tau_max) * tau / tau_max, the upper bound of the
  constraint L(m, tau) <= L(m, A tau) <= A L(m, tau) (measured Infiniband
  rows keep growing); ``beyond_tau = "hold"`` keeps L(m, tau_max), the lower
  bound and libtaulop's rule.

The model's constraints (paper 000 section 3): L(m, 1) <= L(m, k) <= k L(m, 1)
for every row, and o and every L column non-decreasing in m. Tables measured
on real machines break them through noise; they are loaded as measured, with
one warning per table (:meth:`TauLopChannel.constraint_summary`), unless the
file or the command asks to be strict. Only what no table may hold (sizes
not increasing, negative or non-finite values) is always an error.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from commcost.errors import InputError

_RTOL = 1e-9  # measured tables are rounded when written; allow that much slack in the checks
BEYOND_M = ("chunks", "slope")
BEYOND_TAU = ("linear", "hold")


@dataclass(frozen=True)
class Violation:
    """One table cell that breaks a constraint of the model: ``excess`` is by how much, relative to the bound."""

    row: int
    what: str
    excess: float


@dataclass(frozen=True, eq=False)
class TauLopChannel:
    """The tau-Lop tables of one channel: sizes m (bytes), o(m) and L(m, tau) for tau = 1..tau_max (seconds)."""

    m: np.ndarray
    o_s: np.ndarray
    L_s: np.ndarray  # shape (len(m), tau_max)
    beyond_m: str = "chunks"  # past the last size: "chunks" (paper 000) or "slope" (module docstring)
    beyond_tau: str = "linear"  # past tau_max: "linear" (saturated) or "hold"

    def __post_init__(self) -> None:
        if self.beyond_m not in BEYOND_M:
            raise ValueError(f"beyond_m must be one of {BEYOND_M}, got {self.beyond_m!r}")
        if self.beyond_tau not in BEYOND_TAU:
            raise ValueError(f"beyond_tau must be one of {BEYOND_TAU}, got {self.beyond_tau!r}")
        object.__setattr__(self, "m", np.asarray(self.m, dtype=np.float64))
        object.__setattr__(self, "o_s", np.asarray(self.o_s, dtype=np.float64))
        L = np.asarray(self.L_s, dtype=np.float64)
        object.__setattr__(self, "L_s", L.reshape(len(self.m), -1) if L.ndim == 1 else L)

    @property
    def tau_max(self) -> int:
        """The largest concurrency the table was measured at."""
        return self.L_s.shape[1]

    def problems(self) -> list[tuple[int, str]]:
        """What no table may hold, as (row index, what is wrong): sizes not increasing, times negative or
        not finite, shapes that do not match. Always an error."""
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
        for i, k in zip(*np.nonzero(~np.isfinite(L) | (L < 0))):
            problems.append((int(i), f"L(m={m[i]:g}, tau={k + 1}) = {L[i, k]:g} must be a time >= 0"))
        return sorted(problems)

    def constraint_violations(self) -> list[Violation]:
        """The cells that break the model's constraints (module docstring), worst first (by how far, relative
        to the bound they break). Meaningful once :meth:`problems` is empty."""
        out: list[Violation] = []
        m, o, L = self.m, self.o_s, self.L_s
        L1 = L[:, :1]
        taus = np.arange(1, L.shape[1] + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            below = (L < L1 * (1 - _RTOL)) & (L1 > 0)
            for i, k in zip(*np.nonzero(below)):
                out.append(Violation(int(i), f"L(m={m[i]:g}, tau={k + 1}) = {L[i, k]:g} is below L(m, 1) = "
                                             f"{L[i, 0]:g}; expected L(m,1) <= L(m,tau)", 1 - L[i, k] / L[i, 0]))
            above = L > L1 * taus * (1 + _RTOL)
            for i, k in zip(*np.nonzero(above)):
                bound = (k + 1) * L[i, 0]
                out.append(Violation(int(i), f"L(m={m[i]:g}, tau={k + 1}) = {L[i, k]:g} exceeds {k + 1} * L(m, 1) = "
                                             f"{bound:g}; expected L(m,tau) <= tau * L(m,1)",
                                     L[i, k] / bound - 1 if bound > 0 else np.inf))
            for i in np.flatnonzero(np.diff(o) < -_RTOL * np.abs(o[1:])):
                out.append(Violation(int(i) + 1, f"o(m={m[i + 1]:g}) = {o[i + 1]:g} is below o at the previous "
                                                 f"size ({o[i]:g}); expected o non-decreasing in m",
                                     1 - o[i + 1] / o[i]))
            drops = np.diff(L, axis=0) < -_RTOL * np.abs(L[1:])
            for i, k in zip(*np.nonzero(drops)):
                out.append(Violation(int(i) + 1, f"L(m={m[i + 1]:g}, tau={k + 1}) = {L[i + 1, k]:g} is below its "
                                                 f"value at the previous size ({L[i, k]:g}); expected L "
                                                 "non-decreasing in m", 1 - L[i + 1, k] / L[i, k]))
        out.sort(key=lambda v: (-v.excess, v.row))
        return out

    def violations(self) -> list[tuple[int, str]]:
        """Every problem and every constraint violation, as (row index, what is wrong), by row."""
        problems = self.problems()
        if problems:
            return problems
        return sorted((v.row, v.what) for v in self.constraint_violations())

    def constraint_summary(self, row_name=lambda row: f"row {row}") -> str | None:
        """One line on the constraint violations of the table (None when it has none): how many cells, and
        the worst, placed by ``row_name(row)``."""
        found = self.constraint_violations()
        if not found:
            return None
        worst = found[0]
        cells = "cell breaks" if len(found) == 1 else "cells break"
        off = f" (off by {100 * worst.excess:.0f}%)" if np.isfinite(worst.excess) else ""
        return (f"{len(found)} {cells} tau-Lop's constraints (measured noise?); worst at {row_name(worst.row)}: "
                f"{worst.what}{off}; loaded as measured (strict refuses it; "
                "'commcost params repair' projects the table onto the constraints)")

    def check(self, strict: bool = True) -> "TauLopChannel":
        """Raise InputError naming the first problem or, when ``strict``, the worst constraint violation;
        return self otherwise."""
        problems = self.problems()
        if problems:
            row, what = problems[0]
            raise InputError(what, where=f"row {row}")
        if strict:
            found = self.constraint_violations()
            if found:
                raise InputError(found[0].what, where=f"row {found[0].row}")
        return self

    def L_column(self, tau: int) -> np.ndarray:
        """L(m_i, tau) at the table's sizes, with the saturation rule above tau_max."""
        if tau < 1:
            raise ValueError("tau must be >= 1")
        if tau <= self.tau_max:
            return self.L_s[:, tau - 1]
        if self.beyond_tau == "hold":
            return self.L_s[:, -1]
        return self.L_s[:, -1] * (tau / self.tau_max)

    def o(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Overhead o(m), interpolated by the rules above."""
        return _interp(self.m, self.o_s, np.asarray(nbytes, dtype=np.float64), self.beyond_m)

    def L(self, nbytes: np.ndarray | float, tau: int) -> np.ndarray:
        """Transfer time L(m, tau), interpolated by the rules above."""
        return _interp(self.m, self.L_column(tau), np.asarray(nbytes, dtype=np.float64), self.beyond_m)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a TOML section (the rules beyond the table belong to the file's [taulop])."""
        return {"m": self.m.tolist(), "o_s": self.o_s.tolist(), "L_s": self.L_s.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any], strict: bool = True) -> "TauLopChannel":
        """Tables from plain data: m = [...], o_s = [...], L_s = [[L(m0,1), L(m0,2), ...], ...]; ``strict``
        refuses constraint violations (:meth:`check`)."""
        unknown = set(data) - {"m", "o_s", "L_s"}
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]!r}; expected m, o_s, L_s", where=sorted(unknown)[0])
        for key in ("m", "o_s", "L_s"):
            if key not in data:
                raise InputError(f"missing {key}; expected m, o_s and L_s tables", where=key)
        for key in ("m", "o_s", "L_s"):  # a boolean is no number (numpy would read true as 1.0)
            if not isinstance(data[key], list):
                raise InputError(f"expected a list of numbers, got {data[key]!r}", where=key)
        try:
            m = np.asarray(data["m"], dtype=np.float64)
            o = np.asarray(data["o_s"], dtype=np.float64)
            L = np.asarray(data["L_s"], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(f"expected arrays of numbers ({exc})") from None
        if m.ndim != 1 or o.shape != m.shape or L.ndim != 2 or L.shape[0] != len(m):
            raise InputError(
                f"expected m and o_s of equal length and L_s with one row per m; got {m.size} sizes, "
                f"{o.size} overheads, L_s of shape {L.shape}",
                where="L_s",
            )
        return cls(m, o, L).check(strict)


def _interp(xs: np.ndarray, ys: np.ndarray, x: np.ndarray, beyond_m: str = "chunks") -> np.ndarray:
    """Linear interpolation with a flat start and, past the last point, the ``beyond_m`` rule
    (module docstring), as :func:`_at_many` evaluates a compiled grid."""
    if beyond_m == "chunks" and xs[-1] > 0:
        return _at_many((xs, ys, 0.0, float(xs[-1])), x)
    if len(xs) >= 2:
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    else:
        slope = ys[-1] / xs[-1] if xs[-1] > 0 else 0.0
    return _at_many((xs, ys, float(slope), 0.0), x)


def _interp_columns(xs: np.ndarray, columns: np.ndarray, x: np.ndarray, beyond_m: str) -> np.ndarray:
    """:func:`_interp` of every column of ``columns`` (one row per size ``xs``) at ``x``: shape (len(x),
    columns)."""
    def inner(at: np.ndarray) -> np.ndarray:  # np.interp per column: flat at both ends
        j = np.clip(np.searchsorted(xs, at, side="right") - 1, 0, max(len(xs) - 2, 0))
        if len(xs) < 2:
            return np.broadcast_to(columns[0], (len(at), columns.shape[1])).copy()
        slope = (columns[j + 1] - columns[j]) / (xs[j + 1] - xs[j])[:, None]
        out = slope * (at - xs[j])[:, None] + columns[j]
        out = np.where((at <= xs[0])[:, None], columns[0], out)
        return np.where((at >= xs[-1])[:, None], columns[-1], out)

    past = (x > xs[-1])[:, None]
    if beyond_m == "chunks" and xs[-1] > 0:
        period = float(xs[-1])
        count = np.floor(x / period)
        rest = x - count * period
        tail = count[:, None] * columns[-1] + np.where((rest > 0)[:, None], inner(rest), 0.0)
        return np.where(past, tail, inner(x))
    if len(xs) >= 2:
        slope = (columns[-1] - columns[-2]) / (xs[-1] - xs[-2])
    else:
        slope = columns[-1] / xs[-1] if xs[-1] > 0 else np.zeros(columns.shape[1])
    return np.where(past, columns[-1] + slope * (x - xs[-1])[:, None], inner(x))


@dataclass(frozen=True, eq=False)
class TransmissionLaw:
    """T^c(m, tau) = o^c(m) + sum_k L^k(m, tau) of one channel, compiled for fast calls.

    For each tau up to the largest tau_max of its tables, the sum is one
    piecewise-linear function of m on the union of the tables' sizes, with
    the same rules beyond them as the tables (paper 000 eq. 1-3 under the
    || operator; module docstring). Beyond that every table is saturated:
    with ``beyond_tau = "linear"``, T(m, tau) = o(m) + tau * S(m) with
    S(m) = sum_k L^k(m, tau_max_k) / tau_max_k; with ``"hold"``,
    T(m, tau) = T(m, tau_saturated).

    A compiled grid is ``(xs, ys, slope, period)``: past the last size it goes
    on along ``slope`` when ``period`` is 0, and in whole chunks of
    ``period`` (= the last size) otherwise. Chunks of a sum are the sum of
    the chunks only when its tables end at the same size; a channel whose
    tables end at different sizes is refused under ``beyond_m = "chunks"``.
    """

    overhead: TauLopChannel
    transfers: tuple[TauLopChannel, ...]
    _cache: dict[int, Any] = field(default_factory=dict, repr=False)

    tau_saturated: int = field(init=False)  # above it every transfer table is saturated
    hold: bool = field(init=False)  # beyond tau_saturated: hold T(m, tau_saturated) (else o + tau S)

    def __post_init__(self) -> None:
        tables = (self.overhead, *self.transfers)
        rules = {(t.beyond_m, t.beyond_tau) for t in tables}
        if len(rules) > 1:
            raise ValueError(f"the tables of one channel must share their rules beyond the table, got {rules}")
        beyond_m = self.overhead.beyond_m
        ends = sorted({float(t.m[-1]) for t in tables})
        if beyond_m == "chunks" and len(ends) > 1:
            raise InputError(f"beyond_m = \"chunks\" prices a message past a table in whole chunks of its last "
                             f"size, but this channel's tables end at different sizes ({ends[0]:g} and "
                             f"{ends[-1]:g} bytes); expected tables that end at the same size, or "
                             "beyond_m = \"slope\"")
        object.__setattr__(self, "tau_saturated", max((t.tau_max for t in self.transfers), default=1))
        object.__setattr__(self, "hold", self.overhead.beyond_tau == "hold")

    @property
    def rules(self) -> dict[str, str]:
        """The rules beyond the tables, as the parameter file names them."""
        return {"beyond_m": self.overhead.beyond_m, "beyond_tau": self.overhead.beyond_tau}

    def _grid(self, values: Callable[[np.ndarray], np.ndarray]) -> tuple[list[float], list[float], float, float]:
        tables = (self.overhead, *self.transfers)
        xs = np.unique(np.concatenate([t.m for t in tables]))
        ys = values(xs)
        if self.overhead.beyond_m == "chunks" and xs[-1] > 0:
            return xs.tolist(), ys.tolist(), 0.0, float(xs[-1])
        # slope past the last size: each table continues along its own last segment
        far = np.array([xs[-1] + 1.0])
        return xs.tolist(), ys.tolist(), float(values(far)[0] - ys[-1]), 0.0

    def _compiled(self, tau: int) -> tuple[list[float], list[float], float, float]:
        hit = self._cache.get(tau)
        if hit is None:
            if tau > self.tau_saturated:
                raise ValueError("saturated concurrencies use the o + tau*S form")
            hit = self._grid(lambda x: self.overhead.o(x) + sum(t.L(x, tau) for t in self.transfers))
            self._cache[tau] = hit
        return hit

    def compiled_all(self) -> list[tuple[list[float], list[float], float, float]]:
        """The compiled grids of every concurrency 1..tau_saturated at once (as :meth:`_compiled` gives them
        one by one, to rounding): the tables' columns interpolated together, for a law of thousands of
        concurrencies (a fit's tables reach twice its largest P)."""
        sat = self.tau_saturated
        if all(t in self._cache for t in range(1, sat + 1)):
            return [self._cache[t] for t in range(1, sat + 1)]
        tables = (self.overhead, *self.transfers)
        xs = np.unique(np.concatenate([t.m for t in tables]))
        chunks = self.overhead.beyond_m == "chunks" and xs[-1] > 0
        at = xs if chunks else np.r_[xs, xs[-1] + 1.0]  # and one byte past the end: the slope beyond
        taus = np.arange(1, sat + 1)
        transfers = np.zeros((len(at), sat))
        for t in self.transfers:  # summed as _compiled sums them, then the overhead: the same numbers
            columns = np.stack([t.L_column(int(k)) for k in taus], axis=1) if t.tau_max < sat \
                else t.L_s[:, :sat]
            transfers = transfers + _interp_columns(t.m, columns, at, t.beyond_m)
        values = self.overhead.o(at)[:, None] + transfers
        for k in range(sat):
            ys = values[:len(xs), k]
            grid = (xs.tolist(), ys.tolist(), 0.0, float(xs[-1])) if chunks else \
                (xs.tolist(), ys.tolist(), float(values[-1, k] - ys[-1]), 0.0)
            self._cache.setdefault(k + 1, grid)
        return [self._cache[t] for t in range(1, sat + 1)]

    def _saturated(self) -> tuple[tuple[list[float], list[float], float, float],
                                  tuple[list[float], list[float], float, float]]:
        hit = self._cache.get(-1)
        if hit is None:
            o_grid = self._grid(self.overhead.o)
            s_grid = self._grid(lambda x: sum(t.L(x, t.tau_max) / t.tau_max for t in self.transfers))
            hit = (o_grid, s_grid)
            self._cache[-1] = hit
        return hit

    def time(self, nbytes: float, tau: int) -> float:
        """tau || T^c(m): seconds for ``tau`` concurrent transmissions of ``nbytes`` each."""
        if tau > self.tau_saturated:
            if self.hold:
                return _at(self._compiled(self.tau_saturated), nbytes)
            o_grid, s_grid = self._saturated()
            return _at(o_grid, nbytes) + tau * _at(s_grid, nbytes)
        return _at(self._compiled(tau), nbytes)

    def times(self, nbytes: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Vectorized :meth:`time` over arrays of sizes and concurrencies."""
        nb, tb = np.broadcast_arrays(np.asarray(nbytes, dtype=np.float64), np.asarray(tau, dtype=np.int64))
        if self.hold:
            tb = np.minimum(tb, self.tau_saturated)
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


def _at(grid: tuple[list[float], list[float], float, float], x: float) -> float:
    """A compiled piecewise-linear function at one point (flat start; past the end its slope or its chunks)."""
    xs, ys, slope, period = grid
    if x <= xs[0]:
        return ys[0]
    if x > xs[-1] and period > 0:
        chunks = math.floor(x / period)
        rest = x - chunks * period
        return chunks * ys[-1] + (_at(grid, rest) if rest > 0 else 0.0)
    if x >= xs[-1]:
        return ys[-1] + slope * (x - xs[-1])
    i = bisect.bisect_right(xs, x)
    x0 = xs[i - 1]
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (xs[i] - x0)


def _at_many(grid: tuple[list[float], list[float], float, float], x: np.ndarray) -> np.ndarray:
    """:func:`_at` over an array."""
    xs, ys, slope, period = grid
    if period > 0:
        chunks = np.floor(x / period)
        rest = x - chunks * period
        tail = chunks * ys[-1] + np.where(rest > 0, np.interp(rest, xs, ys), 0.0)
    else:
        tail = ys[-1] + slope * (x - xs[-1])
    return np.where(x > xs[-1], tail, np.interp(x, xs, ys))


SETTINGS = ("beyond_m", "beyond_tau", "strict")


def read_settings(data: dict[str, Any], strict: bool | None = None) -> tuple[str, str, bool]:
    """The keys of a ``[taulop]`` section that are not tables: ``beyond_m``, ``beyond_tau`` (module
    docstring) and ``strict`` (refuse tables that break the constraints); ``strict`` given here (a
    command's ``--strict``) wins over the file's. Errors name the key."""
    beyond_m = data.get("beyond_m", "chunks")
    if beyond_m not in BEYOND_M:
        raise InputError(f"expected one of {', '.join(map(repr, BEYOND_M))}, got {beyond_m!r}", where="beyond_m")
    beyond_tau = data.get("beyond_tau", "linear")
    if beyond_tau not in BEYOND_TAU:
        raise InputError(f"expected one of {', '.join(map(repr, BEYOND_TAU))}, got {beyond_tau!r}",
                         where="beyond_tau")
    in_file = data.get("strict", False)
    if not isinstance(in_file, bool):
        raise InputError(f"expected true or false, got {in_file!r}", where="strict")
    return beyond_m, beyond_tau, in_file if strict is None else strict


@dataclass(frozen=True, eq=False)
class TauLopParams:
    """tau-Lop tables by name: every channel's overhead, and every transfer kind's L table.

    A platform channel named c with transfers (k1, k2, ...) takes o from the
    table named c and L from the tables named k1, k2, ... ``beyond_m`` and
    ``beyond_tau`` (module docstring) apply to every table; ``warnings`` holds
    one line per table loaded with constraint violations.
    """

    tables: dict[str, TauLopChannel]
    beyond_m: str = "chunks"
    beyond_tau: str = "linear"
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", {
            name: t if (t.beyond_m, t.beyond_tau) == (self.beyond_m, self.beyond_tau)
            else replace(t, beyond_m=self.beyond_m, beyond_tau=self.beyond_tau)
            for name, t in self.tables.items()})

    def law(self, channel_name: str, transfers: tuple[str, ...]) -> TransmissionLaw:
        """The compiled T^c(m, tau) of a channel."""
        for name in (channel_name, *transfers):
            if name not in self.tables:
                raise InputError(
                    f"tau-Lop parameters have no table {name!r} (needed by channel {channel_name!r}); "
                    f"expected one of {sorted(self.tables)}",
                    where=f"taulop.{name}",
                )
        try:
            return TransmissionLaw(self.tables[channel_name], tuple(self.tables[k] for k in transfers))
        except InputError as exc:
            raise InputError(f"channel {channel_name!r} (tables {', '.join(dict.fromkeys((channel_name, *transfers)))}"
                             f"): {exc.message}", where="taulop.beyond_m") from None

    @classmethod
    def from_dict(cls, data: dict[str, Any], strict: bool | None = None) -> "TauLopParams":
        """From ``{name: {m, o_s, L_s}}`` and the settings of :func:`read_settings`; errors name the table
        and the row."""
        beyond_m, beyond_tau, strict_now = read_settings(data, strict)
        tables, warnings = {}, []
        for name, table in data.items():
            if name in SETTINGS:
                continue
            if not isinstance(table, dict):
                raise InputError("expected a table with m, o_s and L_s", where=name)
            try:
                tables[name] = TauLopChannel.from_dict(table, strict=strict_now)
            except InputError as exc:
                raise InputError(exc.message, where=f"{name}.{exc.where}" if exc.where else name) from None
            summary = tables[name].constraint_summary(lambda row: f"L_s[{row}]")
            if summary:
                warnings.append(f"[taulop.{name}]: {summary}")
        return cls(tables, beyond_m, beyond_tau, tuple(warnings))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a TOML section."""
        rules: dict[str, Any] = {}
        if self.beyond_m != "chunks":
            rules["beyond_m"] = self.beyond_m
        if self.beyond_tau != "linear":
            rules["beyond_tau"] = self.beyond_tau
        return {**rules, **{name: table.to_dict() for name, table in self.tables.items()}}
