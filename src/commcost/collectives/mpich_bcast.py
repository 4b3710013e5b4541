"""MPICH's MPI_Bcast algorithms (``src/mpi/coll/bcast/`` of pmodels/mpich) as schedules.

Every algorithm works on *relative* ranks, ``v = (rank - root) mod P``
(MPICH's ``relative_rank`` / ``lrank``): the root is v = 0 and a schedule
is written for v and shifted by ``root`` when recorded. A zero-byte
message, or one rank, is no communication (MPICH returns early).

The scatter-allgather algorithms cut the message into ``P`` chunks of
``ceil(n / P)`` bytes (``scatter_size``); chunk v, ``[v s, (v+1) s)``
clipped to ``[0, n)``, belongs to relative rank v, so when ``n`` is not a
multiple of ``P`` the last ranks get a short chunk or none. MPICH still
exchanges the empty chunks in its ``MPIC_Sendrecv`` steps; those appear as
zero-byte transmissions (a message costs latency even when empty), while
its scatter skips them, as MPICH does.

Every algorithm is a *dependency schedule* (:mod:`commcost.schedule.schedule`,
:mod:`.waits`): phases only label steps (one per mask in the binomial
algorithms, one per sendrecv step, one per tree level and chunk), and a
send waits for what it waits for in MPICH's code:

* binomial, the scatter of the scatter-allgathers, recursive doubling
  with its halving fix-up, and the ring: blocking ``MPIC_Recv``,
  ``MPIC_Send`` and ``MPIC_Sendrecv``, so a send waits for its sender's
  previous send and the receptions it completed since (a rank forwards
  only what arrived; ring step i + 1 sends what came in step i);
* tree and pipelined_tree: a send of chunk c waits for its sender's
  reception of chunk c; with ``is_non_blocking`` 0 (``MPIC_Send``) also for
  the sender's previous send; with 1 (``MPIC_Isend``) for nothing more:
  MPICH waits for all of a rank's sends once, at the end.

Not expressed: when receives are posted (pipelined_tree pre-posts three
or all, then receives blocking) and rendezvous flow control, which would
make a sender wait for its receiver (a rank waits only for its own
operations). Eager or rendezvous is the model's business.
A broadcast recorded after another collective (the composites allreduce
basic_linear and nonoverlapping, allgather linear) keeps its waits, and
each of its sends also waits for its sender's operations in that
collective (:meth:`.recorder.Recorder.next_collective`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import SEGMENTS, register, whole_blocks
from commcost.collectives.waits import BlockingSteps, Waits, pipeline_waits, ring_waits
from commcost.errors import InputError
from commcost.schedule.schedule import SendMode

KARY, KNOMIAL_1, KNOMIAL_2 = 0, 1, 2  # MPIR_Tree_type_t (src/mpi/coll/include/coll_types.h)

TREE_PARAMS = (
    Param("tree_type", KARY, "MPIR_CVAR_BCAST_TREE_TYPE: 0 kary (MPICH's default), 1 knomial_1, 2 knomial_2"),
    Param("tree_kval", 2, "MPIR_CVAR_BCAST_TREE_KVAL: the tree's fan-out k", minimum=1),
    Param("is_non_blocking", 1, "MPIR_CVAR_BCAST_IS_NON_BLOCKING: 1 posts the sends to the children "
                                "(MPIC_Isend + Waitall), 0 sends them one after another"),
)


def _shift(v: np.ndarray, case: Case) -> np.ndarray:
    """Relative ranks to ranks: ``(v + root) mod P``."""
    return (v + case.root) % case.nprocs


def _ranks(case: Case):
    """Relative ranks to ranks for ``case`` (:func:`_shift` as a function of the ranks alone)."""
    return lambda v: _shift(v, case)


def _masks_down(nprocs: int) -> list[int]:
    """The masks of MPICH's binomial send loop: the largest power of two below P, halving to 1."""
    if nprocs < 2:
        return []
    top = 1 << ((nprocs - 1).bit_length() - 1)
    return [top >> s for s in range(top.bit_length())]


def scatter_size(case: Case) -> int:
    """MPICH's chunk of the scatter-allgather algorithms: ``ceil(n / P)`` bytes."""
    return -(-case.nbytes // case.nprocs)


def _chunk_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """Scatter-allgather: when P divides n every chunk is n/P bytes and every transmission whole chunks,
    so the P-byte schedule scales. Otherwise (short or empty last chunks, n < P) no unit."""
    return nprocs if nbytes % nprocs == 0 else None


def _one_chunk(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """pipelined_tree is the tree of one chunk when ``segsize`` is 0 or at least n: the 1-byte schedule
    scaled. Several chunks: their count depends on n, no unit."""
    segsize = params.get("segsize", 0)
    return 1 if segsize <= 0 or nbytes <= segsize else None


# ---------------------------------------------------------------------------------------------- binomial


@register(Collective.BCAST, "mpich", "binomial",
          "binomial tree on relative ranks; each rank forwards the whole message down its subtree",
          scales=whole_blocks)
def binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``MPIR_Bcast_intra_binomial`` (bcast_intra_binomial.c).

    Relative rank v receives from ``v - lowbit(v)``, then sends the whole
    message to ``v + mask`` for the masks below ``lowbit(v)``, largest
    first, with blocking sends (``MPIC_Recv``, then ``MPIC_Send``): its first
    send waits for its reception, each later one for its previous send. In
    the phase of ``mask`` every v that is a multiple of ``2 mask`` (and has
    ``v + mask < P``) sends.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    steps = BlockingSteps(Waits(rec), p)
    for mask in _masks_down(p):
        v = np.arange(0, p - mask, 2 * mask, dtype=np.int64)
        rec.phase(f"mask {mask}", SendMode.SEQUENCE)
        steps.step(rec, v, v + mask, 0, n, _ranks(case))


# ---------------------------------------------------------------------------------- scatter + allgather


def _scatter_for_bcast(rec: Recorder, case: Case) -> BlockingSteps:
    """``MPII_Scatter_for_bcast`` (bcast_utils.c): binomial scatter of the chunks.

    The root starts with the whole message; in the phase of ``mask`` each
    holder v sends ``[s (v + mask), s v + held)``, what it holds beyond its
    own ``mask`` chunks, to ``v + mask`` when that is not empty. Blocking
    ``MPIC_Recv`` then ``MPIC_Send``s: a send waits for the rank's reception
    and its previous send. Returns the ranks' progress (relative ranks) for
    the allgather that follows.
    """
    steps = BlockingSteps(Waits(rec), case.nprocs)
    p, n, s = case.nprocs, case.nbytes, scatter_size(case)
    held = np.zeros(p, dtype=np.int64)  # MPICH's curr_size, per relative rank
    held[0] = n
    for mask in _masks_down(p):
        v = np.arange(0, p - mask, 2 * mask, dtype=np.int64)
        size = held[v] - s * mask
        v, size = v[size > 0], size[size > 0]
        start = s * (v + mask)
        rec.phase(f"scatter mask {mask}", SendMode.SEQUENCE)
        steps.step(rec, v, v + mask, start, start + size, _ranks(case))
        held[v + mask] = size
        held[v] -= size
    return steps


def _own_chunk_size(case: Case) -> np.ndarray:
    """Bytes of its own chunk each relative rank holds after the scatter (0 past the message's end)."""
    s = scatter_size(case)
    v = np.arange(case.nprocs, dtype=np.int64)
    return np.clip(case.nbytes - v * s, 0, s)


@register(Collective.BCAST, "mpich", "scatter_recursive_doubling_allgather",
          "binomial scatter of ceil(n/P)-byte chunks, then a recursive-doubling allgather", scales=_chunk_unit)
def scatter_recursive_doubling_allgather(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``MPIR_Bcast_intra_scatter_recursive_doubling_allgather`` (same-named .c file).

    After the scatter, in step i (``mask = 2^i``) relative rank v exchanges
    (``MPIC_Sendrecv``) everything it holds, which starts at chunk
    ``v`` with its low i bits cleared, with ``v ^ mask`` when that rank
    exists. MPICH's auto selection uses this only for power-of-two P, but
    the forced algorithm runs any P: when the partner subtree is short, the
    ranks of this subtree that had a partner pass what they received on to
    those that had none by recursive halving (MPICH's "experimental" block),
    one blocking-send phase per halving step. Every step is blocking
    (``MPIC_Sendrecv``, ``MPIC_Send``, ``MPIC_Recv``): a send waits for its
    sender's previous send and the receptions it completed since (the
    scatter's, the previous exchange's, the halving steps').
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    steps = _scatter_for_bcast(rec, case)
    s = scatter_size(case)
    v = np.arange(p, dtype=np.int64)
    held = _own_chunk_size(case)  # curr_size
    received = np.zeros(p, dtype=np.int64)  # recv_size: what the last receive brought
    mask, i = 1, 0
    while mask < p:
        partner = v ^ mask
        pairs = partner < p
        my_root = (v >> i) << i
        start = s * my_root
        rec.phase(f"allgather exchange {mask}", SendMode.POSTED)
        steps.step(rec, v[pairs], partner[pairs], start[pairs], start[pairs] + held[pairs],
                   _ranks(case))
        got = np.where(pairs, held[np.minimum(partner, p - 1)], 0)
        received = np.where(pairs, got, received)
        held = held + got
        dst_root = (partner >> i) << i
        short = dst_root + mask > p
        if short.any():
            held, received = _halving(rec, case, mask, i, short, my_root, held, received, steps)
        mask <<= 1
        i += 1


def _halving(rec: Recorder, case: Case, mask: int, i: int, short: np.ndarray, my_root: np.ndarray,
             held: np.ndarray, received: np.ndarray, steps: BlockingSteps) -> tuple[np.ndarray, np.ndarray]:
    """The recursive-halving fix-up of MPICH's recursive doubling for a short partner subtree.

    ``short`` marks the ranks whose partner subtree is incomplete; of them,
    the first ``P - my_root - mask`` of the subtree had a partner. At each
    halving step (``tmp_mask``), a rank that has the partner's data sends
    what it last received, the partner subtree's chunks at offset
    ``s (my_root + mask)``, to ``v ^ tmp_mask`` when that one does not.
    """
    p, s = case.nprocs, scatter_size(case)
    v = np.arange(p, dtype=np.int64)
    completed = p - my_root - mask  # nprocs_completed
    offset = s * (my_root + mask)
    tmp_mask, k = mask >> 1, i
    while tmp_mask:
        other = v ^ tmp_mask
        edge = ((v >> k) << k) + completed  # tree_root + nprocs_completed
        send = short & (other > v) & (v < edge) & (other >= edge)
        recv = short & (other < v) & (other < edge) & (v >= edge)
        assert np.all(other[send] < p), "MPICH's halving would send past the last rank"
        rec.phase(f"allgather halving {mask}/{tmp_mask}", SendMode.SEQUENCE)
        steps.step(rec, v[send], other[send], offset[send], offset[send] + received[send],
                   _ranks(case))
        got = received[other[recv]]
        received = received.copy()
        held = held.copy()
        received[v[recv]] = got
        held[v[recv]] += got
        tmp_mask >>= 1
        k -= 1
    return held, received


@register(Collective.BCAST, "mpich", "scatter_ring_allgather",
          "binomial scatter of ceil(n/P)-byte chunks, then a ring allgather (P-1 sendrecv steps)",
          scales=_chunk_unit)
def scatter_ring_allgather(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``MPIR_Bcast_intra_scatter_ring_allgather`` (same-named .c file).

    After the scatter, P-1 steps: each rank sends to ``rank + 1`` the chunk
    it received in the previous step (its own first), and receives from
    ``rank - 1``: in step i rank r passes the chunk of relative rank
    ``r - root - (i - 1)``. Empty chunks are still exchanged (0 bytes).
    Step 1's send waits for the rank's scatter operations; step i + 1's
    for its send and its reception of step i (``MPIC_Sendrecv``, blocking).
    P (P - 1) transmissions, recorded as one batch.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    steps = _scatter_for_bcast(rec, case)
    s = scatter_size(case)
    rec.reserve(p * (p - 1), "a ring of P - 1 steps")  # before its arrays: P (P - 1) long
    step = np.repeat(np.arange(1, p, dtype=np.int64), p)
    r = np.tile(np.arange(p, dtype=np.int64), p - 1)
    start = np.minimum(((r - case.root - (step - 1)) % p) * s, n)
    ids = rec.staged_sends(step, r, (r + 1) % p, start, np.minimum(start + s, n), "ring", SendMode.POSTED)
    ring_waits(steps, ids.reshape(p - 1, p), (np.arange(p) - case.root) % p)


# --------------------------------------------------------------------------------------------------- trees


def _kary_edges(nprocs: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``MPII_Treeutil_tree_kary_init`` (treeutil.c): children ``v k + 1 .. v k + k`` of v, in that order.

    Returns ``(parent, child, order)`` on relative ranks; ``order`` is the
    child's place in its parent's send loop.
    """
    child = np.arange(1, nprocs, dtype=np.int64)
    return (child - 1) // k, child, (child - 1) % k


def _digits(nprocs: int, k: int) -> int:
    """``maxstep`` of MPICH's knomial_1 tree: base-k digits of P - 1."""
    count, tmp = 0, nprocs - 1
    while tmp:
        tmp //= k
        count += 1
    return count


def _knomial_1_edges(nprocs: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``MPII_Treeutil_tree_knomial_1_init`` (treeutil.c), level by level.

    Relative ranks are numbered in preorder: a node v found at ``step`` s
    owns ``[v, v + k^(m-s))``; its children, in send order, sit at
    ``v + 1`` and then every ``k^(m-i-1)`` ranks for i = s .. m-1 (k-1 of
    them per i), a child added at i having step i + 1. Those past P are
    skipped, always a suffix of the list.
    """
    m = _digits(nprocs, k)
    parents, children, orders = [], [], []
    node = np.zeros(1, dtype=np.int64)
    step = np.zeros(1, dtype=np.int64)
    while node.size:
        crank, order = node + 1, np.zeros_like(node)
        next_node, next_step = [], []
        for i in range(m):
            active = step <= i
            for _ in range(1, k):
                ok = active & (crank < nprocs)
                parents.append(node[ok])
                children.append(crank[ok])
                orders.append(order[ok])
                next_node.append(crank[ok])
                next_step.append(np.full(int(ok.sum()), i + 1, dtype=np.int64))
                crank = np.where(active, crank + k ** (m - i - 1), crank)
                order = np.where(active, order + 1, order)
        node = np.concatenate(next_node) if next_node else np.zeros(0, np.int64)
        step = np.concatenate(next_step) if next_step else np.zeros(0, np.int64)
    if not parents:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(parents), np.concatenate(children), np.concatenate(orders)


def _tree_ilog(k: int, number: int) -> int:
    """MPICH's ``tree_ilog`` (treeutil.c): the number of base-k digit positions knomial_2 uses."""
    i, p = 1, k - 1
    while p - 1 < number:
        p *= k
        i += 1
    return i


def _knomial_2_edges(nprocs: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``MPII_Treeutil_tree_knomial_2_init`` (treeutil.c).

    The parent of v is v with its lowest non-zero base-k digit cleared; the
    children of a node whose digits 0..q are zero are ``v + d k^q``, sent
    to highest digit position first and, within one, highest digit first.
    """
    parents, children, qs, ds = [], [], [], []
    for q in range(_tree_ilog(k, nprocs - 1)):
        base = np.arange(0, nprocs, k ** (q + 1), dtype=np.int64)
        for d in range(1, k):
            child = base + d * k ** q
            ok = child < nprocs
            parents.append(base[ok])
            children.append(child[ok])
            qs.append(np.full(int(ok.sum()), q, dtype=np.int64))
            ds.append(np.full(int(ok.sum()), d, dtype=np.int64))
    parent, child = np.concatenate(parents), np.concatenate(children)
    q, d = np.concatenate(qs), np.concatenate(ds)
    idx = np.lexsort((-d, -q, parent))
    parent, child = parent[idx], child[idx]
    first = np.searchsorted(parent, parent, side="left")
    return parent, child, np.arange(len(parent), dtype=np.int64) - first


def tree_edges(nprocs: int, tree_type: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges ``(parent, child, order)`` of MPICH's tree of ``tree_type`` on relative ranks."""
    if tree_type == KARY:
        return _kary_edges(nprocs, k)
    if k < 2:
        raise InputError(f"MPICH's knomial trees need tree_kval >= 2, got {k}", where="tree_kval")
    if tree_type == KNOMIAL_1:
        return _knomial_1_edges(nprocs, k)
    if tree_type == KNOMIAL_2:
        return _knomial_2_edges(nprocs, k)
    raise InputError(f"tree_type must be 0 (kary), 1 (knomial_1) or 2 (knomial_2), got {tree_type} "
                     f"(MPICH's topology-aware trees need the machine's topology)", where="tree_type")


def _depths(nprocs: int, parent: np.ndarray, child: np.ndarray) -> np.ndarray:
    """Depth of every relative rank in the tree (root 0), by pointer jumping: O(P log depth)."""
    up = np.zeros(nprocs, dtype=np.int64)
    up[child] = parent
    depth = np.zeros(nprocs, dtype=np.int64)
    depth[child] = 1
    while np.any(up != 0):
        depth, up = depth + depth[up], up[up]
    return depth


def _tree_bcast(rec: Recorder, case: Case, params: Mapping[str, int], bounds: np.ndarray) -> None:
    """Chunk c, ``[bounds[c], bounds[c+1])``, crosses the tree edges below level l in phase ``c + l``.

    Within a phase a parent sends to its children in MPICH's order. A send
    of chunk c waits for its sender's reception of chunk c; with blocking
    sends (``is_non_blocking`` 0: ``MPIC_Send``) also for the sender's
    previous send; with ``MPIC_Isend`` (1) for nothing more, since MPICH
    waits for all of a rank's sends once, at the end (``MPIC_Waitall``).
    """
    p = case.nprocs
    if params["is_non_blocking"] not in (0, 1):
        raise InputError(f"is_non_blocking must be 0 or 1, got {params['is_non_blocking']}",
                         where="is_non_blocking")
    waits = Waits(rec)
    parent, child, order = tree_edges(p, params["tree_type"], params["tree_kval"])
    level = _depths(p, parent, child)[parent]
    idx = np.lexsort((order, parent, level))
    parent, child, level = parent[idx], child[idx], level[idx]
    src, dst = _shift(parent, case), _shift(child, case)
    nchunks, nlevels = len(bounds) - 1, int(level[-1]) + 1
    mode = SendMode.POSTED if params["is_non_blocking"] else SendMode.SEQUENCE
    cuts = np.searchsorted(level, np.arange(nlevels + 1))
    ids = np.empty(len(parent) * nchunks, np.int64)  # edge-major: chunk c of edge e at e * nchunks + c
    for t in range(nchunks + nlevels - 1):
        lo, hi = cuts[max(0, t - nchunks + 1)], cuts[min(t, nlevels - 1) + 1]
        chunk = t - level[lo:hi]
        rec.phase(f"level {int(level[lo])}" if nchunks == 1 else f"pipeline step {t}", mode)
        got = rec.sends(src[lo:hi], dst[lo:hi], bounds[chunk], bounds[chunk + 1])
        ids[np.arange(lo, hi, dtype=np.int64) * nchunks + chunk] = got
    pipeline_waits(waits, ids, parent, child, np.full(len(parent), nchunks, np.int64),
                   "none" if params["is_non_blocking"] else "sequence")


@register(Collective.BCAST, "mpich", "tree",
          "the whole message down a k-ary (default, k=2) or k-nomial tree", params=TREE_PARAMS,
          scales=whole_blocks)
def tree(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``MPIR_Bcast_intra_tree`` (bcast_intra_tree.c) with the kary/knomial trees of treeutil.c.

    Defaults are MPICH's CVARs: kary tree, k = 2, non-blocking sends.
    A rank receives the whole message from its parent, then sends it to
    each child (isends, or blocking sends one after another); one phase
    label per tree level. A send waits for its sender's reception (and,
    blocking, its previous send).
    """
    _tree_bcast(rec, case, params, np.array([0, case.nbytes], dtype=np.int64))


def pipeline_chunks(nbytes: int, chunk_size: int) -> np.ndarray:
    """``MPIR_Algo_calculate_pipeline_chunk_info`` (algo_common.h): chunk bounds ``[0, ..., n]``.

    All chunks have ``chunk_size`` bytes except the *first*, which takes the
    remainder; ``chunk_size <= 0`` or ``>= n`` is one chunk.
    """
    if chunk_size <= 0 or chunk_size >= nbytes:
        return np.array([0, nbytes], dtype=np.int64)
    first = nbytes % chunk_size or chunk_size
    return np.concatenate([[0], np.arange(first, nbytes + 1, chunk_size, dtype=np.int64)])


@register(Collective.BCAST, "mpich", "pipelined_tree",
          "the message in chunks (default 8192 bytes) pipelined down a k-ary or k-nomial tree",
          params=TREE_PARAMS + (Param("segsize", 8192, "MPIR_CVAR_BCAST_TREE_PIPELINE_CHUNK_SIZE: chunk "
                                                       "bytes (<= 0 or >= n: one chunk)"),), scales=_one_chunk,
          segmented=SEGMENTS)  # (its short chunk first, not last: the cut is the same arithmetic)
def pipelined_tree(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``MPIR_Bcast_intra_pipelined_tree`` (bcast_intra_pipelined_tree.c).

    A rank receives chunk c from its parent, then sends it to its children
    before receiving chunk c + 1; with non-blocking sends (the default) the
    sends stay posted until one Waitall at the end, so a send of chunk c
    waits only for the reception of chunk c; with blocking sends also for
    the rank's previous send. Chunk c crosses level l in the phase
    labelled c + l. MPICH's pre-posted receives (MPIR_CVAR_BCAST_RECV_PRE_POST)
    do not change what is sent or what a send waits for, so they are not a
    parameter.
    """
    _tree_bcast(rec, case, params, pipeline_chunks(case.nbytes, params["segsize"]))
