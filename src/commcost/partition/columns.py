"""Column-based 2D partition of an N x N block matrix (Beaumont et al.; paper 000 section 2, Fig. 3, 8, 10).

Processes are sorted by non-increasing speed and cut into consecutive
groups, one group per column. A column's width is proportional to the sum
of its processes' speeds and each rectangle's height to its process's
speed within the column, so every area is proportional to speed. The cut
minimizes the sum of the rectangles' half-perimeters (the communication
volume of SUMMA): with normalized speeds a_i (sum 1), a column C of k
processes of total speed W_C contributes k W_C + 1, found by dynamic
programming over the sorted list. Ties go to more columns. Columns are
laid out left to right, fastest first, and processes top to bottom inside
them, fastest first (as in Fig. 8: p1 above p4 in the first column).
Widths and heights are rounded to whole blocks that sum exactly to N.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from commcost.errors import InputError
from commcost.kernels.partition2d import Partition2D
from commcost.partition.apportion import apportion
from commcost.partition.balance import balance
from commcost.partition.fpm import SpeedFunction

TIE = 1e-9


def column_groups(speeds: np.ndarray, columns: int | None = None) -> list[np.ndarray]:
    """Ranks of each column, fastest first: the cut of the sorted speeds minimizing sum of half-perimeters."""
    speeds = np.asarray(speeds, dtype=np.float64)
    p = len(speeds)
    if p == 0 or np.any(~(speeds > 0)):
        raise InputError("expected at least one process and every speed > 0")
    if columns is not None and not 1 <= columns <= p:
        raise InputError(f"expected 1 <= columns <= P = {p}, got {columns}", where="columns")
    order = np.argsort(-speeds, kind="stable")
    a = speeds[order] / speeds.sum()
    prefix = np.concatenate(([0.0], np.cumsum(a)))
    inf = float("inf")
    # best[c][j]: least cost of the first j processes in c columns; back[c][j]: where the last column starts.
    best = np.full((p + 1, p + 1), inf)
    back = np.zeros((p + 1, p + 1), dtype=np.int64)
    best[0][0] = 0.0
    for c in range(1, p + 1):
        for j in range(c, p + 1):
            i = np.arange(c - 1, j)
            cost = best[c - 1][i] + (j - i) * (prefix[j] - prefix[i]) + 1.0
            k = int(np.argmin(cost))
            best[c][j], back[c][j] = cost[k], i[k]
    if columns is None:
        finals = best[:, p]
        columns = int(np.flatnonzero(finals <= finals.min() + TIE).max())
    groups, j = [], p
    for c in range(columns, 0, -1):
        i = int(back[c][j])
        groups.append(order[i:j])
        j = i
    return groups[::-1]


def column_partition(speeds: Sequence[float] | np.ndarray, n: int, hosts: Sequence[str], block: int = 32,
                     columns: int | None = None) -> Partition2D:
    """The column-based partition of an n x n block matrix for processes of the given speeds (or areas)."""
    speeds = np.asarray(speeds, dtype=np.float64)
    if len(hosts) != len(speeds):
        raise InputError(f"expected one host per process: {len(hosts)} hosts, {len(speeds)} speeds")
    groups = column_groups(speeds, columns)
    if len(groups) > n or max(len(g) for g in groups) > n:
        raise InputError(f"N = {n} blocks is too small for {len(speeds)} processes in {len(groups)} columns")
    widths = apportion(np.array([speeds[g].sum() for g in groups]), n)
    p = len(speeds)
    x, y, w, h = (np.zeros(p, dtype=np.int64) for _ in range(4))
    left = 0
    for group, width in zip(groups, widths):
        heights = apportion(speeds[group], n)
        x[group], w[group], h[group] = left, width, heights
        y[group] = np.concatenate(([0], np.cumsum(heights)[:-1]))
        left += width
    return Partition2D(n, block, tuple(hosts), x, y, w, h)


def balanced_partition(fpms: Sequence[SpeedFunction], n: int, hosts: Sequence[str], block: int = 32,
                       columns: int | None = None) -> Partition2D:
    """FPM-balanced areas (n_i / s_i(n_i) equal, :func:`balance`) laid out by :func:`column_partition`."""
    return column_partition(balance(fpms, float(n * n)), n, hosts, block, columns)
