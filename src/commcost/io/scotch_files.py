"""Scotch's text files for mapping a 2D arrangement (paper 002) with a general graph mapper (issue 15 item 3).

Scotch (``scotch_gmap``) maps a *source graph* (the processes and the bytes
they exchange) onto a *target architecture* (the machines and the distance
between each two); ``amk_grf`` builds such a target from a *target graph*
whose edge weights are distances. This module only writes and reads the
text; the tools run elsewhere (``bench/bench_mapping_libraries.py``).

The formats are those of the Scotch 7 user's guide, section 5 "Files and
data structures": 5.1 "Graph files" (the source and target graphs, format
version 0), 5.4 "Target files" (the ``deco`` architectures ``amk_grf``
writes) and 5.5 "Mapping files" (what ``scotch_gmap`` writes). A graph file
is the version line ``0``, then ``vertices arcs`` (arcs: twice the edges),
then ``base flags`` (flags ``010``: edge weights only, no labels and no
vertex weights), then one line per vertex: its degree, then a weight and a
neighbour per arc. Every edge is written from both ends with one weight.

Debian's Scotch 7.0.3 counts in 32-bit integers (``gtst`` reports an edge
load sum overflow past 2**31 even from the ``-int64`` front ends), and a
mapping's cost is the sum over edges of weight x distance: a p-cell grid has
at most 2p edges of at most :data:`GRID_SCALE`, so 2p x :data:`GRID_SCALE` x
:data:`DISTANCE_SCALE` must stay below 2**31 (4.8e8 for p = 12 with the
defaults; p up to about 50).
"""

from __future__ import annotations

import numpy as np

from commcost.errors import InputError
from commcost.units import too_long_for_int

GRID_SCALE = 1_000  # the larger of h and w becomes this weight (their ratio to 0.1 %)
DISTANCE_SCALE = 20_000  # the largest distance becomes this weight (a 1/570 one to about 1.5 %)


def grid_adjacency(r: int, c: int, h: float, w: float,
                   scale: int = GRID_SCALE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The r x c periodic grid of paper 002 eq. 1-3 as compressed adjacency (xadj, adjncy, weights), for
    Scotch's source graph (:func:`grid_graph_text`) and METIS alike.

    Vertex k is cell (i, j) in column-major order, k = j * r + i, as
    :mod:`commcost.partition.arrangement` fills grids (``order.reshape(c, r).T``).
    Its horizontal ring neighbours (i, j +- 1 mod c) weigh h, its vertical
    ones (i +- 1 mod r, j) weigh w, both scaled to integers with their ratio
    kept (the larger becomes ``scale``; a positive one stays at least 1). A
    single row (column) has no horizontal (vertical) edge: the neighbour is
    the cell itself. With two columns (rows) the left and right (top and
    bottom) neighbour are one cell: one edge of twice the weight, as eq. 1-2
    count both exchanges. Neighbours are listed in increasing order.
    """
    if r < 1 or c < 1:
        raise InputError(f"expected a grid of at least 1 x 1 cells, got {r} x {c}", where="grid")
    if not (np.isfinite(h) and np.isfinite(w)) or h < 0 or w < 0 or max(h, w) <= 0:
        raise InputError(f"expected volumes h, w >= 0, not both 0, got h = {h}, w = {w}", where="grid")
    if scale < 1:
        raise InputError(f"expected a positive integer scale, got {scale}", where="grid")
    top = max(h, w)
    weight_h = max(1, round(h / top * scale)) if h > 0 else 0
    weight_w = max(1, round(w / top * scale)) if w > 0 else 0
    xadj, adjncy, weights = [0], [], []
    for k in range(r * c):
        j, i = divmod(k, r)
        arcs: dict[int, int] = {}
        for jj in ((j - 1) % c, (j + 1) % c):
            if weight_h and jj != j:
                n = jj * r + i
                arcs[n] = arcs.get(n, 0) + weight_h
        for ii in ((i - 1) % r, (i + 1) % r):
            if weight_w and ii != i:
                n = j * r + ii
                arcs[n] = arcs.get(n, 0) + weight_w
        for n in sorted(arcs):
            adjncy.append(n)
            weights.append(arcs[n])
        xadj.append(len(adjncy))
    return (np.array(xadj, dtype=np.int64), np.array(adjncy, dtype=np.int64), np.array(weights, dtype=np.int64))


def _graph_text(xadj: np.ndarray, adjncy: np.ndarray, weights: np.ndarray) -> str:
    """Scotch graph file format 0 (user's guide 5.1), base 0, edge weights only (flags ``010``)."""
    lines = ["0", f"{len(xadj) - 1} {len(adjncy)}", "0 010"]
    for v in range(len(xadj) - 1):
        lo, hi = int(xadj[v]), int(xadj[v + 1])
        pairs = " ".join(f"{int(weights[e])} {int(adjncy[e])}" for e in range(lo, hi))
        lines.append(f"{hi - lo} {pairs}".rstrip())
    return "\n".join(lines) + "\n"


def grid_graph_text(r: int, c: int, h: float, w: float, scale: int = GRID_SCALE) -> str:
    """Scotch's source graph (``.grf``, user's guide 5.1, format 0 with integer edge weights) of the r x c
    periodic grid of paper 002 eq. 1-3: what ``scotch_gmap`` maps onto the machines. Vertex k is cell
    (j * r + i); edges and weights as :func:`grid_adjacency` (h horizontal, w vertical, scaled to
    integers with their ratio kept, duplicates merged)."""
    return _graph_text(*grid_adjacency(r, c, h, w, scale))


def target_graph_text(distance: np.ndarray, scale: int = DISTANCE_SCALE) -> str:
    """Scotch graph file (user's guide 5.1) of the complete graph on the target vertices (one per process
    slot: here a node), for ``amk_grf``, which turns it into a decomposition-defined (``deco``) target
    architecture (user's guide 5.4) whose distance between two vertices is the weighted shortest path.

    The edge a-b weighs ``distance[a, b]`` scaled so that the largest is
    ``scale`` (at least 1). Scotch has one distance per pair, so an
    asymmetric matrix is symmetrized by the mean of ``distance[a, b]`` and
    ``distance[b, a]``; the diagonal is ignored. Off-diagonal distances must
    be finite and positive (a zero would make two vertices one place).
    """
    d = np.asarray(distance, dtype=float)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 2:
        raise InputError(f"expected a square distance matrix of at least 2 x 2, got shape {d.shape}",
                         where="distance")
    if scale < 1:
        raise InputError(f"expected a positive integer scale, got {scale}", where="distance")
    n = d.shape[0]
    sym = (d + d.T) / 2
    off = ~np.eye(n, dtype=bool)
    if not np.all(np.isfinite(sym[off])) or np.any(sym[off] <= 0):
        a, b = np.argwhere(off & ~(np.isfinite(sym) & (sym > 0)))[0]
        raise InputError(f"expected finite positive distances, got {sym[a, b]} between {a} and {b}",
                         where="distance")
    top = float(sym[off].max())
    weights = np.maximum(1, np.rint(sym / top * scale)).astype(np.int64)
    xadj = np.arange(n + 1, dtype=np.int64) * (n - 1)
    adjncy = np.array([b for a in range(n) for b in range(n) if b != a], dtype=np.int64)
    eweights = np.array([weights[a, b] for a in range(n) for b in range(n) if b != a], dtype=np.int64)
    return _graph_text(xadj, adjncy, eweights)


def mapping_text(target: np.ndarray) -> str:
    """A mapping file (user's guide 5.5) placing source vertex k on ``target[k]``: what
    :func:`read_mapping` reads back, and what Scotch's ``gmtst`` and remapping (``-ro``) read."""
    target = np.asarray(target, dtype=np.int64)
    return f"{len(target)}\n" + "".join(f"{k} {int(t)}\n" for k, t in enumerate(target))


def read_mapping(text: str, n: int, source: str | None = None) -> np.ndarray:
    """The target index of each of the ``n`` source vertices, from the mapping file ``scotch_gmap`` writes
    (user's guide 5.5): the number of lines, then one ``vertex target`` line per vertex, in any order.
    A bad file raises :class:`~commcost.errors.InputError` naming the line (``source`` names the file)."""
    lines = [(k, line.split()) for k, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InputError("expected a Scotch mapping (a count, then 'vertex target' lines), got an empty file",
                         source=source)
    first, head = lines[0]
    if len(head) != 1 or not head[0].isdigit() or too_long_for_int(head[0]):
        raise InputError(f"expected the number of mapping lines, got {' '.join(head)!r}", source=source,
                         where=f"line {first}")
    count = int(head[0])
    if count != n:
        raise InputError(f"expected a mapping of {n} vertices, the file says {count}", source=source,
                         where=f"line {first}")
    if len(lines) - 1 != count:
        raise InputError(f"expected {count} 'vertex target' lines after the count, got {len(lines) - 1}",
                         source=source, where=f"line {lines[-1][0]}")
    out = np.full(n, -1, dtype=np.int64)
    for k, fields in lines[1:]:
        if len(fields) != 2 or not all(f.isdigit() and not too_long_for_int(f) for f in fields):
            raise InputError(f"expected 'vertex target' (two non-negative integers), got {' '.join(fields)!r}",
                             source=source, where=f"line {k}")
        vertex, target = int(fields[0]), int(fields[1])
        if vertex >= n:
            raise InputError(f"vertex {vertex} is out of range; expected 0 to {n - 1}", source=source,
                             where=f"line {k}")
        if out[vertex] >= 0:
            raise InputError(f"vertex {vertex} is mapped twice", source=source, where=f"line {k}")
        if target > np.iinfo(np.int64).max:  # found by the fuzz suite: numpy raised OverflowError
            raise InputError(f"target {target} is out of range; expected a target vertex number", source=source,
                             where=f"line {k}")
        out[vertex] = target
    return out
