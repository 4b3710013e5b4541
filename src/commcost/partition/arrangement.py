"""Communication-optimal 2D arrangement of processes with asymmetric bandwidths (paper 002, MPDATA).

An arrangement of p processes is a factor pair r x c and the process on
each cell: ``grid[i, j]`` holds sub-domain (i, j). Each process belongs to
a group (node, cluster: the platform's level); the bandwidths between
processes depend only on their groups, and differ between the horizontal
exchange (left/right neighbours, ``bh``) and the vertical one (top/bottom,
``bv``), as MPDATA's non-contiguous bars and contiguous slices do.

Paper 002 eq. 1-3, with the ring neighbours (j + 1) mod c and (i + 1) mod r:

    cost_H = sum_i h * sum_j 1 / b_H(Q_ij, Q_i,(j+1)%c)
    cost_V = sum_j w * sum_i 1 / b_V(Q_ij, Q_(i+1)%r,j)
    minimize cost_H + cost_V

h and w are the bytes one process sends left (right) and up (down) per time
step, which depend on the shape (:func:`mpdata_volumes`). Shapes have at
least two rows and two columns (:data:`MIN_SIDE`; paper 002 arranges in
two dimensions): a single row or column would exchange with itself, a
local copy, and would win every comparison by dropping one direction's
traffic. With ``min_side = 1`` such self-exchanges cost nothing.

The heuristic (section 4.2): starting from a linear order in which each
group's processes are adjacent, (1) the best shape r x c for that order,
filled column by column (and, beyond the paper, row by row: see
:func:`best_shape`; step 2 then runs along rows too, :func:`rearrange_rows`);
(2) per column, the permutation of its groups' runs that minimizes the
vertical cost of the first column, then the vertical + horizontal cost of
the first k columns; then the best permutation of whole columns; the new column-major order goes back to (1)
until a fixed point. :func:`exhaustive` searches every placement of group
labels (processes of one group are interchangeable) on every shape, for
small p, to measure the heuristic's gap.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from commcost.errors import InputError

MAX_PERMUTED = 8  # runs (or columns) permuted exhaustively; a column with more runs (or a grid with more
# columns) is left as it is by that step


@dataclass(frozen=True)
class Arrangement:
    """Process per cell (r x c) and its cost under the bandwidths and volumes it was priced with."""

    grid: np.ndarray  # (r, c) process indices
    cost_h: float
    cost_v: float

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.grid.shape[0]), int(self.grid.shape[1])

    @property
    def cost(self) -> float:
        return self.cost_h + self.cost_v

    def order(self) -> np.ndarray:
        """The column-major linear order of the processes (the heuristic's step 1 input)."""
        return self.grid.T.reshape(-1)


def mpdata_volumes(domain: tuple[int, int, int], halo: tuple[int, int], r: int, c: int,
                   value_bytes: int = 8) -> tuple[float, float]:
    """(h, w): bytes a process sends to each horizontal and each vertical neighbour per time step (paper
    002 section 3): nB bars of 1 x jhalo x l to the left and right, nB = n / r; slices of ihalo x (jhalo +
    mB + jhalo) x l up and down, mB = m / c."""
    n, m, depth = domain
    ihalo, jhalo = halo
    h = (n / r) * jhalo * depth * value_bytes
    w = ihalo * (jhalo + m / c + jhalo) * depth * value_bytes
    return h, w


def cost(grid: np.ndarray, group: np.ndarray, bh: np.ndarray, bv: np.ndarray, h: float,
         w: float) -> tuple[float, float]:
    """Paper 002 eq. 1-2 for one arrangement (self-pairs cost nothing)."""
    g = group[grid]
    right = np.roll(g, -1, axis=1)
    down = np.roll(g, -1, axis=0)
    with np.errstate(divide="ignore"):
        inv_h = np.where(grid != np.roll(grid, -1, axis=1), 1.0 / bh[g, right], 0.0)
        inv_v = np.where(grid != np.roll(grid, -1, axis=0), 1.0 / bv[g, down], 0.0)
    return float(h * inv_h.sum()), float(w * inv_v.sum())


MIN_SIDE = 2  # a 2D arrangement: at least two rows and two columns (where p allows)


def factor_pairs(p: int, min_side: int = MIN_SIDE) -> list[tuple[int, int]]:
    """Every r x c = p with both sides >= ``min_side`` (all of them when none has: p prime or small)."""
    pairs = [(r, p // r) for r in range(1, p + 1) if p % r == 0]
    return [(r, c) for r, c in pairs if min(r, c) >= min_side] or pairs


Volumes = Callable[[int, int], tuple[float, float]]


def priced(grid: np.ndarray, group, bh, bv, volumes: Volumes) -> Arrangement:
    """``grid`` with its eq. 1-2 costs, h and w from ``volumes(r, c)``."""
    h, w = volumes(*grid.shape)
    return Arrangement(grid, *cost(grid, group, bh, bv, h, w))


def best_shape(order: np.ndarray, group, bh, bv, volumes: Volumes, min_side: int = MIN_SIDE,
               row_fill: bool = True) -> Arrangement:
    """Step 1: the factor pair whose column-major fill of ``order`` costs least (ties: the first found,
    fewest rows first). With ``row_fill`` (beyond paper 002, which fills column by column only) each
    shape's row-major fill competes too: a group then lies along a row, which is what a grid needs when
    the horizontal messages are the big ones and every column has a single run (step 2 has nothing to
    permute there)."""
    p = len(order)
    order = np.asarray(order)
    grids = [order.reshape(c, r).T.copy() for r, c in factor_pairs(p, min_side)]
    if row_fill:
        grids += [order.reshape(r, c).copy() for r, c in factor_pairs(p, min_side)]
    return min((priced(g, group, bh, bv, volumes) for g in grids), key=lambda a: a.cost)


def _runs(column: np.ndarray, group: np.ndarray) -> list[np.ndarray]:
    """The column's maximal runs of processes of one group, top to bottom."""
    g = group[column]
    cuts = np.flatnonzero(g[1:] != g[:-1]) + 1
    return np.split(column, cuts)


def _orders(n: int):
    """Permutations of n items: all of them up to :data:`MAX_PERMUTED`, else None (local swaps)."""
    return itertools.permutations(range(n)) if n <= MAX_PERMUTED else None


def rearrange(arr: Arrangement, group, bh, bv, volumes: Volumes) -> Arrangement:
    """Step 2 on a fixed shape: group runs permuted column by column (vertical cost of column 1, then
    vertical + horizontal of columns 1..k), then whole columns permuted (whole cost)."""
    grid = arr.grid.copy()
    r, c = grid.shape
    h, w = volumes(r, c)

    def partial(k: int) -> float:
        sub = grid[:, :k + 1]
        if k == 0:
            return cost(sub, group, bh, bv, 0.0, w)[1]
        # columns 0..k: vertical inside each, horizontal between neighbours (no wrap until the last column)
        ch, cv = cost(sub, group, bh, bv, h, w)
        wrap = h * _inv_pairs(sub[:, -1], sub[:, 0], group, bh)
        return ch - (wrap if k + 1 < c else 0.0) + cv

    for k in range(c):
        runs = _runs(grid[:, k], group)
        best, best_col = None, grid[:, k].copy()
        orders = _orders(len(runs))
        if orders is None:
            continue  # too many runs to permute: keep the column as it is
        for perm in orders:
            grid[:, k] = np.concatenate([runs[i] for i in perm])
            value = partial(k)
            if best is None or value < best - 1e-12 * abs(best):
                best, best_col = value, grid[:, k].copy()
        grid[:, k] = best_col
    if c <= MAX_PERMUTED:
        base = grid.copy()
        best_perm, best_cost = None, None
        for perm in itertools.permutations(range(c)):
            if perm[0] != 0 and c > 1:
                continue  # the ring is cyclic: fixing the first column loses nothing
            candidate = base[:, list(perm)]
            value = sum(cost(candidate, group, bh, bv, h, w))
            if best_cost is None or value < best_cost - 1e-12 * abs(best_cost):
                best_perm, best_cost = perm, value
        grid = base[:, list(best_perm)]
    return priced(grid, group, bh, bv, volumes)


def rearrange_rows(arr: Arrangement, group, bh, bv, volumes: Volumes) -> Arrangement:
    """:func:`rearrange` along rows (beyond paper 002): the transposed grid, with the horizontal and vertical
    bandwidths and volumes exchanged, rearranged column by column and transposed back."""
    def swapped(r: int, c: int) -> tuple[float, float]:
        h, w = volumes(c, r)
        return w, h

    t = rearrange(Arrangement(arr.grid.T.copy(), arr.cost_v, arr.cost_h), group, bv, bh, swapped)
    return priced(t.grid.T.copy(), group, bh, bv, volumes)


def _inv_pairs(a: np.ndarray, b: np.ndarray, group, bmat) -> float:
    with np.errstate(divide="ignore"):
        return float(np.where(a != b, 1.0 / bmat[group[a], group[b]], 0.0).sum())


def heuristic(order: np.ndarray, group: np.ndarray, bh: np.ndarray, bv: np.ndarray, volumes: Volumes,
              max_rounds: int = 50, min_side: int = MIN_SIDE, row_fill: bool = True) -> tuple[Arrangement, int]:
    """Paper 002 section 4.2 from the linear ``order`` (each group's processes adjacent, else they are
    gathered first, stably): steps 1 and 2 until the column-major order repeats; returns the best
    arrangement seen and the rounds run."""
    order = np.asarray(order, dtype=np.int64)
    first = {}
    for q in order:
        first.setdefault(int(group[q]), len(first))
    order = np.array(sorted(order, key=lambda q: first[int(group[q])]), dtype=np.int64)  # stable: groups adjacent
    seen = set()
    best = None
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        shaped = best_shape(order, group, bh, bv, volumes, min_side, row_fill)
        arranged = rearrange(shaped, group, bh, bv, volumes)
        if row_fill:  # the same step along rows: runs permuted row by row, then whole rows
            across = rearrange_rows(arranged, group, bh, bv, volumes)
            arranged = across if across.cost < arranged.cost - 1e-12 * arranged.cost else arranged
        for a in (shaped, arranged):
            if best is None or a.cost < best.cost - 1e-12 * best.cost:
                best = a
        key = (arranged.shape, tuple(group[arranged.order()].tolist()))
        if key in seen:
            break
        seen.add(key)
        order = arranged.order()
    return best, rounds


def exhaustive(group: np.ndarray, bh: np.ndarray, bv: np.ndarray, volumes: Volumes,
               limit: int = 12, min_side: int = MIN_SIDE) -> Arrangement:
    """The optimum over every shape and every placement of group labels (processes of a group are
    interchangeable: p! / prod(n_g!) placements per shape), for p <= ``limit``."""
    p = len(group)
    if p > limit:
        raise InputError(f"an exhaustive search over {p} processes is too large; expected at most {limit}",
                         where="--exhaustive")
    placements = np.array(list(_multiset_permutations(group.tolist())), dtype=np.int64)
    members = {g: list(np.flatnonzero(group == g)) for g in np.unique(group)}
    best = None
    for r, c in factor_pairs(p, min_side):
        h, w = volumes(r, c)
        g = placements.reshape(-1, c, r).transpose(0, 2, 1)  # column-major fill, (k, r, c) of labels
        right, down = np.roll(g, -1, axis=2), np.roll(g, -1, axis=1)
        # a process is its own neighbour only in a single column (row)
        ch = h * (1.0 / bh[g, right]).sum(axis=(1, 2)) if c > 1 else np.zeros(len(g))
        cv = w * (1.0 / bv[g, down]).sum(axis=(1, 2)) if r > 1 else np.zeros(len(g))
        k = int(np.argmin(ch + cv))
        if best is None or ch[k] + cv[k] < best[0] - 1e-12 * best[0]:
            best = (float(ch[k] + cv[k]), g[k], float(ch[k]), float(cv[k]))
    _, labels_grid, ch, cv = best
    taken = {gg: iter(m) for gg, m in members.items()}
    grid = np.array([[next(taken[int(x)]) for x in row] for row in labels_grid], dtype=np.int64)
    return Arrangement(grid, ch, cv)


def _multiset_permutations(items: list[int]):
    """Every distinct ordering of ``items`` (with repeats), each once, in lexicographic order."""
    values, counts = np.unique(items, return_counts=True)
    values, counts = values.tolist(), counts.tolist()
    out = [0] * len(items)

    def place(k: int):
        if k == len(out):
            yield tuple(out)
            return
        for i, v in enumerate(values):
            if counts[i]:
                counts[i] -= 1
                out[k] = v
                yield from place(k + 1)
                counts[i] += 1
    yield from place(0)


def placements_count(group: np.ndarray) -> int:
    """p! / prod(n_g!): placements of group labels per shape."""
    _, counts = np.unique(group, return_counts=True)
    return math.factorial(len(group)) // math.prod(math.factorial(int(n)) for n in counts)
