"""A 2D block partition: one rectangle of an N x N block matrix per process (paper 000 Fig. 2, 8, 10).

This is the noun the data-parallel kernels read: where each process's
rectangle sits (x = first block column, y = first block row), its width w
and height h in blocks, and the host (node) the process runs on. Paper 000
Fig. 2 calls it the partition table (X, Y, Width, Height per process); the
balancing algorithms that produce it live in :mod:`commcost.partition`.
"""

from __future__ import annotations

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
        for rank in range(p):
            x, y, w, h = (int(a[rank]) for a in (self.x, self.y, self.w, self.h))
            if w < 1 or h < 1 or x < 0 or y < 0 or x + w > n or y + h > n:
                raise InputError(f"rank {rank}: rectangle x={x} y={y} w={w} h={h} is not inside the "
                                 f"{n} x {n} block matrix (expected w, h >= 1 and x+w, y+h <= {n})",
                                 where=f"rank {rank}")
        over = (overlap(self.x[:, None], self.w[:, None], self.x, self.w)
                * overlap(self.y[:, None], self.h[:, None], self.y, self.h))
        np.fill_diagonal(over, 0)
        if np.any(over):
            a, b = (int(v) for v in np.argwhere(over)[0])
            row, col = max(self.y[a], self.y[b]), max(self.x[a], self.x[b])
            raise InputError(f"ranks {a} and {b} both cover block (row {row}, column {col}); "
                             "expected the rectangles to tile the matrix exactly once")
        if int(self.area.sum()) != n * n:
            raise InputError(f"the rectangles cover {int(self.area.sum())} of the {n * n} blocks; "
                             "expected them to tile the matrix exactly once")

def overlap(lo_a: np.ndarray | int, len_a: np.ndarray | int,
            lo_b: np.ndarray | int, len_b: np.ndarray | int) -> np.ndarray:
    """Length of the intersection of intervals [lo_a, lo_a+len_a) and [lo_b, lo_b+len_b) (0 if disjoint)."""
    return np.maximum(0, np.minimum(np.asarray(lo_a) + len_a, np.asarray(lo_b) + len_b)
                      - np.maximum(lo_a, lo_b))
