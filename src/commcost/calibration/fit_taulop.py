"""tau-Lop tables o^c(m) and L^c(m, tau) from Ring_tau measurements (paper 000 section 5.2).

Ring_tau^c (paper 000 section 5.2): tau processes each send m bytes to
their successor and receive from their predecessor through channel c, all
at once, so tau transmissions share the channel. The time measured for one
size and one concurrency is (paper 000 eq. 1-3 under the || operator)

    tau || T^c(m) = o^c(m) + k L^c(m, tau)

where k is the number of transfers a transmission of the channel makes
(k = 2 for the shared-memory channel: sender -> shared buffer -> receiver;
k = 1 for a network channel whose one transfer is tabulated). Hence

    L^c(m, tau) = (T(m, tau) - o^c(m)) / k.

Steps of :func:`fit_taulop_channel`:

1. **Cell location**: the measurements of each (m, tau) cell are reduced to
   one robust time, the Huber location of their logarithms (a robust
   geometric mean; same loss, f_scale rule and sandwich interval as
   :mod:`commcost.calibration.robust_fit`). Paper 004 section 5.2 fits with
   Huber's regressor for the same reason: a few disturbed repetitions must
   not move the value.
2. **Overhead o(m)**: from a measured overhead if given (``overhead_s``:
   one constant, repetitions of a size-independent overhead, or values per
   size with ``overhead_nbytes``, each size reduced to its Huber location
   and interpolated linearly onto the table's sizes, flat beyond the
   measured sizes). Otherwise Ring_tau alone cannot separate o from L, and
   o is taken as a constant: the intercept alpha of a robust Hockney fit
   T(m, 1) = alpha + beta m of the tau = 1 measurements (the part of the
   cost that does not grow with the size), capped at half the smallest
   tau = 1 cell time so that every L(m, 1) stays positive; the report says
   which source was used and whether the cap applied. Either way the sum
   o + k L, which is what predictions use, follows the measurements.
3. **Projection onto the model's constraints** (paper 000 section 3;
   :meth:`TauLopChannel.violations`):
   o and every L column non-decreasing in m, L > 0, and
   L(m, 1) <= L(m, tau) <= tau L(m, 1). The rule, in this order:

   * o: isotonic (non-decreasing) regression in m, weighted by the number
     of measurements per size, then clipped at 0;
   * each L column: isotonic regression in m of ln L (pool-adjacent-
     violators, weighted by the cell's measurement count; a pooled block
     takes the weighted geometric mean), after flooring raw values at
     1e-6 of the smallest cell time (a non-positive raw L arises only when
     the overhead exceeds the measured time);
   * columns tau >= 2 clipped into [L(m, 1), tau L(m, 1)] (tau = 1, the
     best-measured column, is the reference).

   Clipping between non-decreasing bounds keeps a non-decreasing column
   non-decreasing, so the result satisfies every constraint. ``moved_s``
   and ``moved_rel`` report how far the projection moved each value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commcost.calibration.fit_p2p import fit_hockney
from commcost.calibration.robust_fit import ProportionalErrors, fit_linear_law, proportional_error
from commcost.errors import InputError
from commcost.models.taulop.params import TauLopChannel
from commcost.models.taulop.repair import nondecreasing

_FLOOR = 1e-6  # raw L values below this fraction of the smallest cell time are floored before the projection


def _location(values: np.ndarray, loss: str) -> tuple[float, float, float]:
    """Robust location of repeated measurements and its 95 % interval (NaN with one value)."""
    if values.size == 1:
        return float(values[0]), float("nan"), float("nan")
    fit = fit_linear_law(np.ones((values.size, 1)), values, ("t",), loss=loss, x=np.zeros(values.size))
    lo, hi = fit.interval("t")
    return fit.value("t"), lo, hi


@dataclass(frozen=True, eq=False)
class TauLopFit(ProportionalErrors):
    """A fitted tau-Lop channel table and how it was obtained.

    ``channel`` passes :meth:`TauLopChannel.violations` (no violation).
    ``L_raw_s`` is (T(m, tau) - o(m)) / k before the projection onto the
    constraints, ``moved_s = L - L_raw`` and ``moved_rel = L / L_raw - 1``
    (NaN where L_raw <= 0); ``o_raw_s`` and ``o_moved_s`` likewise for o.
    ``T_s`` are the cell locations and ``T_ci95_s`` their 95 % intervals
    (shape (sizes, tau_max, 2)); ``L_ci95_s`` = (T_ci95 - o) / k, which
    ignores the overhead's own uncertainty. ``mu`` is the proportional
    error of every measurement against o(m) + k L(m, tau) of the table.
    """

    channel: TauLopChannel
    transfers: int
    overhead_source: str  # "measured" or "intercept"
    overhead_capped: bool
    counts: np.ndarray
    T_s: np.ndarray
    T_ci95_s: np.ndarray
    o_raw_s: np.ndarray
    L_raw_s: np.ndarray
    nbytes: np.ndarray
    tau: np.ndarray
    measured_s: np.ndarray

    @property
    def L_s(self) -> np.ndarray:
        return self.channel.L_s

    @property
    def o_s(self) -> np.ndarray:
        return self.channel.o_s

    @property
    def L_ci95_s(self) -> np.ndarray:
        return (self.T_ci95_s - self.o_raw_s[:, None, None]) / self.transfers

    @property
    def moved_s(self) -> np.ndarray:
        return self.channel.L_s - self.L_raw_s

    @property
    def moved_rel(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.L_raw_s > 0, self.channel.L_s / self.L_raw_s - 1.0, np.nan)

    @property
    def o_moved_s(self) -> np.ndarray:
        return self.channel.o_s - self.o_raw_s

    def predicted_s(self, nbytes: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """o(m) + k L(m, tau) from the table (interpolated and extended by the table's rules)."""
        m = np.asarray(nbytes, dtype=np.float64)
        taus = np.asarray(tau, dtype=np.int64)
        out = np.empty(np.broadcast(m, taus).shape)
        mb, tb = np.broadcast_arrays(m, taus)
        for t in np.unique(tb):
            sel = tb == t
            out[sel] = self.channel.o(mb[sel]) + self.transfers * self.channel.L(mb[sel], int(t))
        return out

    @property
    def mu(self) -> np.ndarray:
        return proportional_error(self.measured_s, self.predicted_s(self.nbytes, self.tau))

    def report(self) -> dict[str, Any]:
        rel = np.abs(self.moved_rel)
        return {
            "table": self.channel.to_dict(), "transfers": self.transfers,
            "overhead_source": self.overhead_source, "overhead_capped": self.overhead_capped,
            "points": int(self.measured_s.size), "mu_mean": self.mu_mean, "mu_max": self.mu_max,
            "projection": {
                "L_cells_moved": int(np.count_nonzero(self.moved_s)),
                "L_max_moved_rel": float(np.nanmax(rel)) if np.any(np.isfinite(rel)) else None,
                "L_cells_raw_nonpositive": int(np.count_nonzero(self.L_raw_s <= 0)),
                "o_max_moved_s": float(np.max(np.abs(self.o_moved_s))),
            },
        }


def _overhead(sizes: np.ndarray, overhead_s: Any, overhead_nbytes: Any, loss: str) -> tuple[np.ndarray, np.ndarray]:
    """o at the table's sizes from the measured overheads, and the weights for its isotonic projection."""
    o = np.atleast_1d(np.asarray(overhead_s, dtype=np.float64))
    if not np.all(np.isfinite(o)) or np.any(o < 0):
        raise InputError("every measured overhead must be a finite time >= 0", where="overhead_s")
    if overhead_nbytes is None:
        value = _location(o, loss)[0] if np.all(o > 0) else float(np.median(o))
        return np.full(sizes.shape, value), np.ones(sizes.shape)
    om = np.asarray(overhead_nbytes, dtype=np.float64)
    if om.shape != o.shape:
        raise InputError("expected one size per measured overhead", where="overhead_nbytes")
    at = np.unique(om)
    loc = np.array([_location(o[om == s], loss)[0] if np.all(o[om == s] > 0) else float(np.median(o[om == s]))
                    for s in at])
    return np.interp(sizes, at, loc), np.ones(sizes.shape)


def fit_taulop_channel(nbytes: np.ndarray, tau: np.ndarray, time_s: np.ndarray, *, transfers: int = 1,
                       overhead_s: np.ndarray | float | None = None, overhead_nbytes: np.ndarray | None = None,
                       loss: str = "huber") -> TauLopFit:
    """Fit one channel's tau-Lop tables from Ring_tau rows (nbytes, tau, time_s) (paper 000 section 5.2).

    ``time_s`` of a row is the time of ``tau`` concurrent transmissions of
    ``nbytes`` each, o(m) + k L(m, tau) with k = ``transfers``. Every size
    must be measured at every tau = 1..max(tau). The method (cell location,
    overhead source, projection onto the constraints) is in the module
    docstring. Returns a :class:`TauLopFit` whose ``channel`` has no
    constraint violation.
    """
    m = np.asarray(nbytes, dtype=np.float64)
    t = np.asarray(time_s, dtype=np.float64)
    taus_in = np.asarray(tau)
    if not (m.shape == t.shape == taus_in.shape) or m.ndim != 1 or m.size == 0:
        raise InputError("expected nbytes, tau and time_s as 1-D arrays of one length", where="time_s")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InputError("every measured time must be a finite number > 0", where="time_s")
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise InputError("every message size must be a finite number of bytes >= 0", where="nbytes")
    if not np.all(np.isfinite(taus_in.astype(np.float64))) or np.any(taus_in < 1) or \
            np.any(taus_in != np.round(taus_in)):
        raise InputError("every tau must be an integer >= 1", where="tau")
    if int(transfers) != transfers or transfers < 1:
        raise InputError("transfers must be an integer >= 1", where="transfers")
    k = int(transfers)
    taus = taus_in.astype(np.int64)
    sizes = np.unique(m)
    tau_max = int(taus.max())
    T = np.empty((sizes.size, tau_max))
    ci = np.empty((sizes.size, tau_max, 2))
    counts = np.zeros((sizes.size, tau_max), dtype=np.int64)
    row = np.searchsorted(sizes, m)
    for i in range(sizes.size):
        for j in range(tau_max):
            cell = t[(row == i) & (taus == j + 1)]
            if cell.size == 0:
                raise InputError(f"no measurement at m = {sizes[i]:g}, tau = {j + 1}; expected every size "
                                 f"at every tau = 1..{tau_max}", where="tau")
            counts[i, j] = cell.size
            T[i, j], ci[i, j, 0], ci[i, j, 1] = _location(cell, loss)

    capped = False
    if overhead_s is not None:
        o_raw, o_w = _overhead(sizes, overhead_s, overhead_nbytes, loss)
        source = "measured"
    else:
        one = taus == 1
        if np.unique(m[one]).size >= 2:
            intercept = fit_hockney(m[one], t[one], loss=loss).alpha_s
        else:
            intercept = float(T[0, 0])
        cap = 0.5 * float(T[:, 0].min())
        capped = intercept > cap
        o_raw = np.full(sizes.shape, min(intercept, cap))
        o_w = counts[:, 0].astype(np.float64)
        source = "intercept"

    L_raw = (T - o_raw[:, None]) / k
    # projection onto the constraints (module docstring, step 3)
    o = np.maximum(nondecreasing(o_raw, o_w), 0.0)
    floor = _FLOOR * float(T.min()) / k
    L = np.empty_like(L_raw)
    for j in range(tau_max):
        L[:, j] = np.exp(nondecreasing(np.log(np.maximum(L_raw[:, j], floor)), counts[:, j]))
    L1 = L[:, :1]
    L[:, 1:] = np.minimum(np.maximum(L[:, 1:], L1), L1 * np.arange(2, tau_max + 1))
    channel = TauLopChannel(sizes, o, L)
    problems = channel.violations()
    if problems:  # pragma: no cover - the projection guarantees none
        raise AssertionError(f"tau-Lop projection left violations: {problems[:3]}")
    return TauLopFit(channel, k, source, capped, counts, T, ci, o_raw, L_raw, m, taus, t)
