"""A 2D block partition: one rectangle of an N x N block matrix per process (paper 000 Fig. 2, 8, 10).

This is the noun the data-parallel kernels read: where each process's
rectangle sits (x = first block column, y = first block row), its width w
and height h in blocks, and the host (node) the process runs on. Paper 000
Fig. 2 calls it the partition table (X, Y, Width, Height per process); the
balancing algorithms that produce it live in :mod:`commcost.partition`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from commcost.errors import InputError


@dataclass(frozen=True, eq=False)
class Partition2D:
    """Rectangles of an ``n`` x ``n`` block matrix, one per rank; blocks are ``block`` x ``block`` elements.

    ``x``, ``y``, ``w``, ``h`` are int arrays indexed by rank; ``hosts[r]``
    names the node of rank r. The rectangles tile the matrix exactly.
    """

    n: int
    block: int
    hosts: tuple[str, ...]
    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    h: np.ndarray

    def __post_init__(self) -> None:
        for attr in ("x", "y", "w", "h"):
            object.__setattr__(self, attr, np.ascontiguousarray(getattr(self, attr), dtype=np.int64))
        self.validate()

    @property
    def nprocs(self) -> int:
        """P: the number of rectangles (processes)."""
        return len(self.hosts)

    @property
    def area(self) -> np.ndarray:
        """n_i: blocks assigned to each rank (w * h)."""
        return self.w * self.h

    def node_of_rank(self) -> np.ndarray:
        """Node index of each rank, nodes numbered in order of first appearance of their host."""
        index: dict[str, int] = {}
        return np.array([index.setdefault(host, len(index)) for host in self.hosts], dtype=np.int64)

    def rank_intra(self) -> np.ndarray:
        """Position of each rank among the ranks of its host (0, 1, ... in rank order)."""
        seen: dict[str, int] = {}
        out = []
        for host in self.hosts:
            out.append(seen.get(host, 0))
            seen[host] = out[-1] + 1
        return np.array(out, dtype=np.int64)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(i, j) of each rank: i the index of its column (distinct x, left to right), j its place in it (by y)."""
        xs = np.unique(self.x)
        i = np.searchsorted(xs, self.x)
        j = np.zeros(self.nprocs, dtype=np.int64)
        for col in range(len(xs)):
            members = np.flatnonzero(i == col)
            j[members[np.argsort(self.y[members], kind="stable")]] = np.arange(len(members))
        return i.astype(np.int64), j

    def validate(self) -> None:
        """InputError unless the rectangles lie inside the matrix and tile it exactly once."""
        n, p = self.n, self.nprocs
        if n < 1 or self.block < 1:
            raise InputError(f"expected N >= 1 blocks and a block size >= 1, got N={n}, kb={self.block}")
        if not all(len(a) == p for a in (self.x, self.y, self.w, self.h)):
            raise InputError("expected x, y, w, h for every process")
        x, y, w, h = self.x, self.y, self.w, self.h
        outside = np.flatnonzero((w < 1) | (h < 1) | (x < 0) | (y < 0) | (x + w > n) | (y + h > n))
        if len(outside):
            rank = int(outside[0])
            raise InputError(f"rank {rank}: rectangle x={x[rank]} y={y[rank]} w={w[rank]} h={h[rank]} is not inside "
                             f"the {n} x {n} block matrix (expected w, h >= 1 and x+w, y+h <= {n})",
                             where=f"rank {rank}")
        twice = first_overlap(x, y, w, h)
        if twice is not None:
            a, b = twice
            row, col = max(y[a], y[b]), max(x[a], x[b])
            raise InputError(f"ranks {a} and {b} both cover block (row {row}, column {col}); "
                             "expected the rectangles to tile the matrix exactly once")
        if int(self.area.sum()) != n * n:
            raise InputError(f"the rectangles cover {int(self.area.sum())} of the {n * n} blocks; "
                             "expected them to tile the matrix exactly once")

MAX_CELLS = 1 << 24  # distinct columns x distinct rows up to which overlaps are found on a coverage grid


def first_overlap(x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray) -> tuple[int, int] | None:
    """Two ranks whose rectangles share a block (the lowest such pair found), or None: in O(P) memory.

    On the grid of distinct rectangle edges (one cell per distinct column range x distinct row range)
    each rectangle adds 1 to the cells it covers (a 2D difference array and two cumulative sums); a cell
    above 1 is covered twice. Partitions whose edges do not fit such a grid (more than ``MAX_CELLS``
    cells) are swept left to right instead, keeping the row ranges of the rectangles open at each column:
    they are disjoint while nothing overlaps, so a new one need only be compared with its neighbours.
    """
    xs = np.unique(np.concatenate([x, x + w]))
    ys = np.unique(np.concatenate([y, y + h]))
    if len(xs) * len(ys) <= MAX_CELLS:
        grid = np.zeros((len(xs), len(ys)), np.int32)
        x0, x1 = np.searchsorted(xs, x), np.searchsorted(xs, x + w)
        y0, y1 = np.searchsorted(ys, y), np.searchsorted(ys, y + h)
        for sign, i, j in ((1, x0, y0), (-1, x1, y0), (-1, x0, y1), (1, x1, y1)):
            np.add.at(grid, (i, j), sign)
        cover = grid.cumsum(axis=0).cumsum(axis=1)
        if cover.max(initial=0) <= 1:
            return None
        i, j = (int(v) for v in np.argwhere(cover > 1)[0])
        ranks = np.flatnonzero((x <= xs[i]) & (x + w > xs[i]) & (y <= ys[j]) & (y + h > ys[j]))
        return int(ranks[0]), int(ranks[1])
    return _swept_overlap(x, y, w, h)


def _swept_overlap(x, y, w, h) -> tuple[int, int] | None:
    """:func:`first_overlap` by a sweep over columns (rectangles leave before others enter at one column)."""
    leave = np.stack([x + w, np.zeros_like(x), np.arange(len(x))], axis=1)
    enter = np.stack([x, np.ones_like(x), np.arange(len(x))], axis=1)
    events = np.concatenate([leave, enter])
    events = events[np.lexsort((events[:, 2], events[:, 1], events[:, 0]))]
    starts: list[int] = []  # the open row ranges, by first row: disjoint
    owners: list[int] = []
    for _, kind, rank in events.tolist():
        lo, hi = int(y[rank]), int(y[rank] + h[rank])
        at = bisect.bisect_left(starts, lo)
        if kind == 0:
            while owners[at] != rank:
                at += 1
            del starts[at], owners[at]
            continue
        if at > 0 and y[owners[at - 1]] + h[owners[at - 1]] > lo:
            return tuple(sorted((owners[at - 1], rank)))  # type: ignore[return-value]
        if at < len(starts) and starts[at] < hi:
            return tuple(sorted((owners[at], rank)))  # type: ignore[return-value]
        starts.insert(at, lo)
        owners.insert(at, rank)
    return None


def overlap(lo_a: np.ndarray | int, len_a: np.ndarray | int,
            lo_b: np.ndarray | int, len_b: np.ndarray | int) -> np.ndarray:
    """Length of the intersection of intervals [lo_a, lo_a+len_a) and [lo_b, lo_b+len_b) (0 if disjoint)."""
    return np.maximum(0, np.minimum(np.asarray(lo_a) + len_a, np.asarray(lo_b) + len_b)
                      - np.maximum(lo_a, lo_b))
