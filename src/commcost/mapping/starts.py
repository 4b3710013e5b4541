"""Placements a mapping search starts from: sequential, round-robin, and a partition of the traffic graph.

Each returns ``node_of_rank`` (the node index of each rank) filling the
first ``ceil(P / ppn)`` nodes, at most ``ppn`` ranks each:

- sequential: rank p on node p div ppn (mpirun's ``--map-by core``);
- round-robin: rank p on node p mod ceil(P / ppn) (``--map-by node``);
- graph: the schedule's traffic graph (bytes between each pair of ranks,
  both directions, repeats counted) cut into ceil(P / ppn) parts of at
  most ppn ranks by METIS (pymetis), part k on node k; a general
  graph-partitioning start that knows nothing of the platform's levels
  (the local search then swaps groups to place the parts).
"""

from __future__ import annotations

import math

import numpy as np

from commcost.errors import InputError
from commcost.schedule import Schedule


def _nodes_used(nprocs: int, ppn: int, nnodes: int) -> int:
    if nprocs < 1 or ppn < 1:
        raise InputError(f"expected at least one rank and one per node, got {nprocs} and {ppn}", where="--ppn")
    used = math.ceil(nprocs / ppn)
    if used > nnodes:
        raise InputError(f"{nprocs} ranks at {ppn} per node need {used} nodes; the platform has {nnodes}",
                         where="--ppn")
    return used


def sequential_start(nprocs: int, ppn: int, nnodes: int) -> np.ndarray:
    """Rank p on node p div ppn."""
    _nodes_used(nprocs, ppn, nnodes)
    return np.arange(nprocs, dtype=np.int64) // ppn


def round_robin_start(nprocs: int, ppn: int, nnodes: int) -> np.ndarray:
    """Rank p on node p mod ceil(P / ppn): consecutive ranks on consecutive nodes."""
    return np.arange(nprocs, dtype=np.int64) % _nodes_used(nprocs, ppn, nnodes)


def traffic_matrix(schedule: Schedule) -> np.ndarray:
    """Bytes between each pair of ranks, both directions summed, each phase counted as often as it runs
    (a dense P x P array: for the graph start, at the sizes a search handles)."""
    p = schedule.nprocs
    weight = schedule.nbytes * schedule.repeat[schedule.phase]
    out = np.zeros((p, p))
    np.add.at(out, (schedule.src, schedule.dst), weight)
    return out + out.T


def graph_start(schedule: Schedule, ppn: int, nnodes: int, seed: int = 0) -> np.ndarray:
    """METIS's cut of the traffic graph into ceil(P / ppn) parts, evened out to at most ppn ranks per part
    (a rank leaves an overfull part for the part with room it exchanges most bytes with)."""
    import pymetis  # the [sparse] extra

    p = schedule.nprocs
    parts = _nodes_used(p, ppn, nnodes)
    traffic = traffic_matrix(schedule)
    if parts == 1:
        return np.zeros(p, dtype=np.int64)
    scale = 1e6 / traffic.max() if traffic.max() > 0 else 1.0
    weights = np.where(traffic > 0, np.maximum(1, np.rint(traffic * scale)), 0).astype(np.int64)
    np.fill_diagonal(weights, 0)
    rows, cols = np.nonzero(weights)  # row-major: the CSR order
    starts = np.searchsorted(rows, np.arange(p + 1))
    adjacency = pymetis.CSRAdjacency(adj_starts=starts, adjacent=cols)
    _, membership = pymetis.part_graph(parts, adjacency, eweights=weights[rows, cols].tolist(),
                                       options=pymetis.Options(seed=seed))
    part = np.asarray(membership, dtype=np.int64)
    return _evened(part, traffic, ppn, parts)


def _evened(part: np.ndarray, traffic: np.ndarray, ppn: int, parts: int) -> np.ndarray:
    """Move ranks out of parts above ``ppn`` (the least attached first) into parts with room."""
    part = part.copy()
    counts = np.bincount(part, minlength=parts)
    for k in np.flatnonzero(counts > ppn):
        members = np.flatnonzero(part == k)
        attachment = traffic[np.ix_(members, members)].sum(axis=1)
        for r in members[np.argsort(attachment, kind="stable")][: counts[k] - ppn]:
            room = np.flatnonzero(counts < ppn)
            to = room[np.argmax([traffic[r, part == q].sum() for q in room])]
            part[r] = to
            counts[k] -= 1
            counts[to] += 1
    return part
