"""Load balancing with functional performance models: n_i / s_i(n_i) equal for all i (paper 000 section 2).

Given the FPMs s_i and the total number of units N_total, find n_i >= 0
with sum n_i = N_total and t_i = n_i / s_i(n_i) the same for every process
(the optimal distribution of Lastovetsky and Reddy, paper 000 ref. [17]).
With constant speeds this is n_i = N_total * s_i / sum_j s_j (Beaumont
et al., paper 000 ref. [15]). With tables, each t_i is tabulated on a
fine grid of sizes (made non-decreasing), inverted by interpolation, and
the common time T is found by bisection on sum_i n_i(T) = N_total.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from commcost.partition.fpm import SpeedFunction

GRID_POINTS = 4097


def balance(fpms: Sequence[SpeedFunction], total: float, tolerance: float = 1e-10) -> np.ndarray:
    """n_i (real) with sum n_i = total and n_i / s_i(n_i) equal, for the FPMs of the processes."""
    if all(f.is_constant for f in fpms):
        speeds = np.array([f.speeds[0] for f in fpms])
        return total * speeds / speeds.sum()
    grids, times = [], []
    for f in fpms:
        grid = np.union1d(np.linspace(0.0, total, GRID_POINTS), f.sizes[f.sizes <= total])
        grids.append(grid)
        times.append(np.maximum.accumulate(f.time(grid)))

    def units(t: float) -> np.ndarray:
        return np.array([np.interp(t, tt, g) for tt, g in zip(times, grids)])

    lo, hi = 0.0, max(float(tt[-1]) for tt in times)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if units(mid).sum() < total:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tolerance * hi:
            break
    n = units(hi)
    return n * (total / n.sum())


def imbalance(fpms: Sequence[SpeedFunction], units: np.ndarray) -> float:
    """max_i t_i / min_i t_i for the given assignment (1 when perfectly balanced)."""
    t = np.array([float(f.time(n)) for f, n in zip(fpms, units)])
    return float(t.max() / t.min())
