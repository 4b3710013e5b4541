"""Open MPI's communication trees (coll/base ``coll_base_topo.c``) as numpy arrays.

Open MPI builds every tree on *virtual ranks* ``v = (rank - root + P) % P``,
so that the root is virtual rank 0 (:func:`to_ranks` maps back); the one
exception is ``ompi_coll_base_topo_build_in_order_bintree``, whose root is
always rank ``P - 1`` and which is not shifted.

A :class:`Tree` holds, per virtual rank, its parent and its depth, and the
tree's edges ``(src[i], dst[i])``. The edges list each parent's children in
the order of Open MPI's ``tree_next[]`` array, which is the order in which
the parent posts its sends; edges of different parents may interleave.
Every builder fills these arrays with a loop over tree levels or digit
positions (O(log P) numpy operations), never a Python loop per rank, so a
million-rank tree takes milliseconds.

The builders, each citing the Open MPI function it reproduces:

* :func:`build_tree` - ``ompi_coll_base_topo_build_tree`` (fan-out tree;
  fanout 2 is the binary tree of bcast's binary_tree and split_binary_tree);
* :func:`build_in_order_bintree` - ``ompi_coll_base_topo_build_in_order_bintree``;
* :func:`build_chain` - ``ompi_coll_base_topo_build_chain`` (fanout 1 is the
  pipeline);
* :func:`build_bmtree` - ``ompi_coll_base_topo_build_bmtree`` (bcast binomial);
* :func:`build_in_order_bmtree` - ``ompi_coll_base_topo_build_in_order_bmtree``;
* :func:`build_kmtree` - ``ompi_coll_base_topo_build_kmtree`` (bcast knomial);
* :func:`build_heap_tree` - coll/sm's fan-out tree (``coll_sm_module.c``, not coll/base's);
* :func:`build_flat_tree` - coll/sm's reduce: every rank straight to the root, on real ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAXTREEFANOUT = 32
"""``MAXTREEFANOUT`` of ``coll_base_topo.h``: the most children a fan-out tree or chain root may have."""


@dataclass(frozen=True, eq=False)
class Tree:
    """A tree on ranks ``0..P-1``: parent and depth per rank, and the edges in Open MPI's send order.

    ``parent[root] == -1``; ``depth[root] == 0``. ``src``/``dst`` hold one
    edge per non-root rank; for every parent, its edges appear in the order
    of Open MPI's ``tree_next[]`` (the order it sends to its children).
    """

    nprocs: int
    root: int
    parent: np.ndarray
    depth: np.ndarray
    src: np.ndarray
    dst: np.ndarray

    @property
    def height(self) -> int:
        """The largest depth (0 for a single rank)."""
        return int(self.depth.max()) if self.nprocs else 0

    def children(self, rank: int) -> list[int]:
        """The children of ``rank`` in Open MPI's ``tree_next[]`` order (for tests and inspection)."""
        return [int(c) for c in self.dst[self.src == rank]]

    def by_depth(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The edges sorted (stably) by the depth of their parent, and where each depth starts.

        Returns ``(src, dst, starts)`` where the edges whose parent has depth
        d are ``src[starts[d]:starts[d + 1]]``; each parent's children keep
        their send order.
        """
        pdepth = self.depth[self.src]
        nlevels = max(self.height, 1)
        key = pdepth.astype(np.int16 if nlevels < 2**15 else np.int64, copy=False)
        order = np.argsort(key, kind="stable")
        starts = np.searchsorted(pdepth[order], np.arange(nlevels + 1))
        return self.src[order], self.dst[order], starts


def to_ranks(vranks: np.ndarray | int, root: int, nprocs: int) -> np.ndarray:
    """Real ranks of virtual ranks: ``(v + root) % P``, the inverse of Open MPI's shift by the root.

    Virtual ranks may run up to ``2 P - 1`` (a ring's ``v + 1``).
    """
    ranks = np.asarray(vranks, dtype=np.int64) + root
    return np.where(ranks >= nprocs, ranks - nprocs, ranks) if ranks.ndim else ranks % nprocs


def _tree(nprocs: int, root: int, src: list[np.ndarray], dst: list[np.ndarray],
          depth: np.ndarray) -> Tree:
    """Assemble a :class:`Tree` from edge batches (each parent's children in order) and depths."""
    s = np.concatenate(src).astype(np.int64) if src else np.zeros(0, np.int64)
    d = np.concatenate(dst).astype(np.int64) if dst else np.zeros(0, np.int64)
    parent = np.full(nprocs, -1, dtype=np.int64)
    parent[d] = s
    return Tree(nprocs, root, parent, depth.astype(np.int64, copy=False), s, d)


def _level_starts(fanout: int, nprocs: int) -> list[int]:
    """First rank of each level of a fan-out tree (``calculate_num_nodes_up_to_level``), up to P."""
    starts, width = [0], 1
    while starts[-1] < nprocs:
        starts.append(starts[-1] + width)
        width *= fanout
    return starts


def build_tree(fanout: int, nprocs: int) -> Tree:
    """The fan-out tree of ``ompi_coll_base_topo_build_tree`` on virtual ranks (root 0).

    Level L holds ``fanout**L`` consecutive ranks; rank v of level L has
    children ``v + delta * (i + 1)`` for ``i = 0..fanout-1`` while below P,
    with ``delta = fanout**L``, in that order. Fanout 2 on P = 7::

        0 -> 1, 2;  1 -> 3, 5;  2 -> 4, 6

    Open MPI refuses fanouts outside ``1..MAXTREEFANOUT`` (returns NULL).
    """
    if not 1 <= fanout <= MAXTREEFANOUT:
        raise ValueError(f"ompi_coll_base_topo_build_tree needs 1 <= fanout <= {MAXTREEFANOUT}, got {fanout}")
    depth = np.zeros(nprocs, dtype=np.int64)
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    starts = _level_starts(fanout, nprocs)
    for level in range(len(starts) - 1):
        lo, hi = starts[level], min(starts[level + 1], nprocs)
        delta = fanout ** level
        parents = np.arange(lo, hi, dtype=np.int64)
        for i in range(fanout):  # child index outermost: each parent's children in tree_next order
            child = parents + delta * (i + 1)
            keep = child < nprocs
            if not keep.any():
                break
            src.append(parents[keep])
            dst.append(child[keep])
            depth[child[keep]] = level + 1
    return _tree(nprocs, 0, src, dst, depth)


def build_in_order_bintree(nprocs: int) -> Tree:
    """The in-order binary tree of ``ompi_coll_base_topo_build_in_order_bintree`` (root P-1, unshifted).

    A subtree of size s over ranks ``[delta, delta + s)`` has its root at
    ``delta + s - 1``, its left child ``delta + s - 2`` (root of the ranks
    ``[delta + s//2, delta + s - 1)``) and, when s > 2, its right child
    ``delta + s//2 - 1`` (root of ``[delta, delta + s//2)``). P = 7::

        6 -> 5, 2;  5 -> 4, 3;  2 -> 1, 0

    Open MPI uses it for non-commutative reductions; bcast does not.
    """
    depth = np.zeros(nprocs, dtype=np.int64)
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    delta = np.array([0], dtype=np.int64)
    size = np.array([nprocs], dtype=np.int64)
    level = 0
    while len(size):
        root = delta + size - 1
        right = size >> 1
        has_left = size >= 2
        has_right = size >= 3
        # left child first (tree_next[0]), then right (tree_next[1]); one batch each keeps that order
        lroot = root[has_left] - 1
        rroot = delta[has_right] + right[has_right] - 1
        src += [root[has_left], root[has_right]]
        dst += [lroot, rroot]
        depth[lroot] = level + 1
        depth[rroot] = level + 1
        # the left subtree: [delta + right, delta + size - 1), but for size 2 just [delta, delta + 1)
        lsize = np.where(size[has_left] == 2, 1, size[has_left] - right[has_left] - 1)
        ldelta = root[has_left] - lsize
        delta = np.concatenate([ldelta, delta[has_right]])
        size = np.concatenate([lsize, right[has_right]])
        keep = size >= 2
        delta, size = delta[keep], size[keep]
        level += 1
    return _tree(nprocs, nprocs - 1, src, dst, depth)


def build_chain(fanout: int, nprocs: int) -> Tree:
    """The chains of ``ompi_coll_base_topo_build_chain`` on virtual ranks (root 0).

    The root feeds ``fanout`` chains (at most P - 1; Open MPI forces a
    fanout below 1 to 1 and one above ``MAXTREEFANOUT`` to it) that split
    ranks ``1..P-1`` in order: the first ``(P-1) % fanout`` chains (all of
    them when it divides) are one rank longer. The root sends to the chain
    heads in order. Fanout 4 on P = 10::

        0 -> 1, 4, 6, 8;  1 -> 2 -> 3;  4 -> 5;  6 -> 7;  8 -> 9

    Fanout 1 is the pipeline ``0 -> 1 -> ... -> P-1``.
    """
    fanout = min(max(fanout, 1), MAXTREEFANOUT, max(nprocs - 1, 1))
    v = np.arange(1, nprocs, dtype=np.int64)
    if nprocs < 2:
        return _tree(nprocs, 0, [], [], np.zeros(nprocs, np.int64))
    maxlen = -(-(nprocs - 1) // fanout)
    mark = (nprocs - 1) % fanout or fanout + 1  # chains [0, mark) have maxlen ranks, the rest maxlen - 1
    long_part = mark * maxlen
    in_long = (v - 1) < long_part
    column = np.where(in_long, (v - 1) // maxlen,
                      mark + (v - 1 - long_part) // max(maxlen - 1, 1))
    head = np.where(in_long, 1 + column * maxlen, long_part + 1 + (column - mark) * (maxlen - 1))
    depth = np.zeros(nprocs, dtype=np.int64)
    depth[1:] = v - head + 1
    heads = np.unique(head)  # ascending = chain order = the root's tree_next order
    inner = v[v != head]
    return _tree(nprocs, 0, [np.zeros(len(heads), np.int64), inner - 1], [heads, inner], depth)


def build_bmtree(nprocs: int) -> Tree:
    """The binomial tree of ``ompi_coll_base_topo_build_bmtree`` on virtual ranks (root 0).

    Rank v's parent is v minus its highest set bit; its children are
    ``v + m`` for the powers of two m above v (``opal_next_poweroftwo(v)``,
    2 of it, ...) while below P, in increasing m. P = 8::

        0 -> 1, 2, 4;  1 -> 3, 5;  2 -> 6;  3 -> 7
    """
    depth = np.zeros(nprocs, dtype=np.int64)
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    mask = 1
    while mask < nprocs:  # increasing mask outermost: children in tree_next order
        count = min(mask, nprocs - mask)
        parents = np.arange(count, dtype=np.int64)
        src.append(parents)
        dst.append(parents + mask)
        depth[mask:mask + count] = depth[:count] + 1
        mask <<= 1
    return _tree(nprocs, 0, src, dst, depth)


def build_in_order_bmtree(nprocs: int) -> Tree:
    """The binomial tree of ``ompi_coll_base_topo_build_in_order_bmtree`` on virtual ranks (root 0).

    Rank v's parent is v minus its lowest set bit; its children are
    ``v + m`` for the powers of two m below v's lowest set bit (all of them
    for the root) while below P, in increasing m. P = 8::

        0 -> 1, 2, 4;  2 -> 3;  4 -> 5, 6;  6 -> 7
    """
    depth = np.zeros(nprocs, dtype=np.int64)
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    mask = 1
    while mask < nprocs:
        parents = np.arange(0, nprocs - mask, 2 * mask, dtype=np.int64)
        src.append(parents)
        dst.append(parents + mask)
        mask <<= 1
    tree = _tree(nprocs, 0, src, dst, depth)
    v = np.arange(nprocs, dtype=np.int64)
    tree.depth[:] = _popcount(v)
    return tree


def build_kmtree(radix: int, nprocs: int) -> Tree:
    """The k-nomial tree of ``ompi_coll_base_topo_build_kmtree`` on virtual ranks (root 0).

    Rank v's parent is v with its lowest non-zero base-``radix`` digit
    cleared; its children are ``v + r * m`` for the digit weights m below
    that digit (for the root: below the first power of ``radix`` >= P), m
    decreasing and, for each m, ``r = 1..radix-1``, while below P. Radix 3
    on P = 9::

        0 -> 3, 6, 1, 2;  3 -> 4, 5;  6 -> 7, 8
    """
    if radix < 2:
        raise ValueError(f"ompi_coll_base_topo_build_kmtree needs radix >= 2, got {radix}")
    depth = np.zeros(nprocs, dtype=np.int64)
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    weights = [1]
    while weights[-1] < nprocs:
        weights.append(weights[-1] * radix)
    for m in reversed(weights[:-1]):  # decreasing weight outermost, then r: tree_next order
        parents = np.arange(0, nprocs, radix * m, dtype=np.int64)
        for r in range(1, radix):
            child = parents + r * m
            keep = child < nprocs
            if not keep.any():
                break
            p = parents[keep]
            src.append(p)
            dst.append(child[keep])
            depth[child[keep]] = depth[p] + 1
    return _tree(nprocs, 0, src, dst, depth)


def _popcount(v: np.ndarray) -> np.ndarray:
    """Number of set bits of each entry (``np.bitwise_count`` where numpy has it)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(v).astype(np.int64)
    count = np.zeros_like(v)
    work = v.copy()
    while work.any():
        count += work & 1
        work >>= 1
    return count


def build_heap_tree(degree: int, nprocs: int) -> Tree:
    """coll/sm's fan-out tree on virtual ranks (root 0), as ``coll_sm_module.c`` lays it out in shared memory.

    Rank v's parent is ``(v - 1) // degree`` and its children are the
    consecutive ranks ``v degree + 1 .. v degree + degree`` below P (a heap),
    unlike :func:`build_tree`'s level-strided children. Degree 4 on P = 7::

        0 -> 1, 2, 3, 4;  1 -> 5, 6
    """
    if degree < 1:
        raise ValueError(f"coll/sm's tree needs a degree of at least 1, got {degree}")
    v = np.arange(1, nprocs, dtype=np.int64)
    parent = (v - 1) // degree
    depth = np.zeros(nprocs, dtype=np.int64)
    level_end, width, level = 1, 1, 0
    while level_end < nprocs:  # level L holds degree**L consecutive ranks
        width *= degree
        level += 1
        depth[level_end:level_end + width] = level
        level_end += width
    return _tree(nprocs, 0, [parent], [v], depth)


def build_flat_tree(nprocs: int, root: int) -> Tree:
    """One level on real ranks (not shifted): every other rank is a child of ``root``, in the order in which
    coll/sm's ``reduce_inorder`` takes them (``coll_sm_reduce.c``: peers ``P - 1`` down to 0). P = 5, root 2::

        2 -> 4, 3, 1, 0
    """
    if not 0 <= root < nprocs:
        raise ValueError(f"root {root} is not a rank of {nprocs}")
    peers = np.arange(nprocs - 1, -1, -1, dtype=np.int64)
    peers = peers[peers != root]
    depth = np.ones(nprocs, dtype=np.int64)
    depth[root] = 0
    return _tree(nprocs, root, [np.full(len(peers), root, np.int64)], [peers], depth)
