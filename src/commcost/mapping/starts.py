"""The start of a mapping search that the usual placements do not give: a cut of the traffic graph.

(Sequential, round-robin and seeded random starts are
:class:`commcost.platform.Mapping`'s own builders.) The graph start: the
schedule's traffic graph (bytes between each pair of ranks,
  both directions, repeats counted) cut by METIS (pymetis) along the
  platform's levels, outermost first, down to nodes (recursive
  bipartitioning's idea, as Scotch maps onto a hierarchy): heavy
  partners share a node, then a cluster. It knows the levels but not
  their prices; the local search then swaps groups to place the parts.
"""

from __future__ import annotations

import numpy as np

from commcost.errors import InputError
from commcost.schedule import Schedule


def traffic_matrix(schedule: Schedule):
    """Bytes between each pair of ranks, both directions summed, each phase counted as often as it runs: a
    sparse P x P matrix (scipy CSR), as large as the schedule's transmissions, not P squared."""
    from scipy import sparse

    p = schedule.nprocs
    weight = schedule.nbytes * schedule.repeat[schedule.phase]
    out = sparse.coo_matrix((weight, (schedule.src, schedule.dst)), shape=(p, p)).tocsr()
    out = (out + out.T).tocsr()
    out.setdiag(0)
    out.eliminate_zeros()
    return out


def graph_start(schedule: Schedule, capacity: np.ndarray, levels: list[np.ndarray] | None = None,
                seed: int = 0) -> np.ndarray:
    """METIS's cut of the traffic graph along the platform's levels: the ranks are cut into the outermost
    groups (``levels[0][node]`` names each node's group; as many ranks to each group as the sequential
    placement gives it, filling groups in order up to their capacity), each group's ranks into the next
    level's groups, and so on down to nodes (``capacity[node]`` ranks at most). Each cut is METIS's k-way
    partition with the groups' shares as target weights, evened out to exact sizes (a rank leaves an
    overfull part, the least attached first, for the part with room it exchanges most bytes with)."""
    capacity = np.asarray(capacity, dtype=np.int64)
    p = schedule.nprocs
    if p > capacity.sum():
        raise InputError(f"{p} ranks do not fit in the {int(capacity.sum())} slots", where="--ppn")
    traffic = traffic_matrix(schedule)
    levels = list(levels or [])
    node_of_rank = np.zeros(p, dtype=np.int64)
    nodes = np.flatnonzero(capacity > 0)
    todo = [(np.arange(p), nodes, 0)]
    while todo:
        ranks, here, depth = todo.pop()
        if len(here) == 1 or len(ranks) == 0:
            node_of_rank[ranks] = here[0] if len(here) else 0
            continue
        if depth < len(levels):
            keys = levels[depth][here]
            groups = [here[keys == k] for k in dict.fromkeys(keys.tolist())]
            if len(groups) == 1:
                todo.append((ranks, here, depth + 1))
                continue
        else:
            groups = [np.array([n]) for n in here]
        sizes = _filled([int(capacity[g].sum()) for g in groups], len(ranks))
        used = [k for k, size in enumerate(sizes) if size > 0]
        part = _cut(traffic[ranks][:, ranks].tocsr(), [sizes[k] for k in used], seed)
        for j, k in enumerate(used):
            todo.append((ranks[part == j], groups[k], depth + 1))
    return node_of_rank


def _filled(capacities: list[int], count: int) -> list[int]:
    """``count`` ranks into groups of these capacities, in order, each filled before the next."""
    sizes = []
    for cap in capacities:
        sizes.append(min(cap, count))
        count -= sizes[-1]
    return sizes


def _cut(traffic, sizes: list[int], seed: int) -> np.ndarray:
    """A part per rank: METIS's k-way cut of ``traffic`` (CSR) into parts of the given sizes (evened out)."""
    import pymetis  # the [sparse] extra

    n = traffic.shape[0]
    if len(sizes) == 1:
        return np.zeros(n, dtype=np.int64)
    if traffic.nnz == 0:  # nothing to cut: consecutive blocks
        return np.repeat(np.arange(len(sizes)), sizes)
    scale = 1e6 / traffic.data.max()
    weights = np.maximum(1, np.rint(traffic.data * scale)).astype(np.int64)
    adjacency = pymetis.CSRAdjacency(adj_starts=traffic.indptr, adjacent=traffic.indices)
    shares = (np.array(sizes) / n).tolist()
    _, membership = pymetis.part_graph(len(sizes), adjacency, eweights=weights.tolist(), tpwgts=shares,
                                       options=pymetis.Options(seed=seed))
    return _evened(np.asarray(membership, dtype=np.int64), traffic, sizes)


def _evened(part: np.ndarray, traffic, sizes: list[int]) -> np.ndarray:
    """Move ranks out of parts above their size (the least attached first) into parts with room."""
    part = part.copy()
    sizes_a = np.array(sizes)
    counts = np.bincount(part, minlength=len(sizes))
    for k in np.flatnonzero(counts > sizes_a):
        members = np.flatnonzero(part == k)
        attachment = np.asarray(traffic[members][:, members].sum(axis=1)).ravel()
        for r in members[np.argsort(attachment, kind="stable")][: counts[k] - sizes_a[k]]:
            room = np.flatnonzero(counts < sizes_a)
            row = traffic.getrow(r)
            to_part = np.bincount(part[row.indices], weights=row.data, minlength=len(sizes))
            to = room[np.argmax(to_part[room])]
            part[r] = to
            counts[k] -= 1
            counts[to] += 1
    return part
