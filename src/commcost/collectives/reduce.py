"""Reduce: Open MPI's coll/base reduce algorithms as schedules, and the recursive halving they share with allreduce.

Buffer conventions are those of :mod:`.case`: every rank starts with its
contribution to every byte of ``[0, n)``; a transmission with
``combine=True`` reduces the sender's partial result into the receiver's,
one with ``combine=False`` replaces the receiver's bytes. The reduction
operation is taken to be commutative and associative (``MPI_SUM`` on
built-in types): the Rabenseifner algorithms need it, and the schedules do
not record the order in which partial results are combined.

Each builder follows one function of Open MPI's
``ompi/mca/coll/base/coll_base_reduce.c``; names and ids are those of the
``coll_tuned_reduce_algorithm`` enum
(``ompi/mca/coll/tuned/coll_tuned_reduce_decision.c``). Open MPI counts
elements, commcost bytes: one element is one byte.

The allreduce algorithms are in :mod:`.allreduce`, which builds on this
module: its basic_linear runs :func:`reduce_linear`, and Rabenseifner's
allreduce shares the reduce's fold and recursive vector halving
(:func:`fold_halves`, :func:`halving_windows`,
:func:`reduce_scatter_halving`) and scale unit (:func:`pof2_unit`).

Every exchange the library writes as ``ompi_coll_base_sendrecv`` (irecv,
blocking send, wait) is one send per rank per phase, recorded as
:attr:`SendMode.SEQUENCE`. Like the other builders, a zero-byte message
still runs the algorithm's steps (Open MPI's ``MPI_Reduce`` returns before
calling the algorithm when count is 0).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import CHAINED, SEGMENTS, Segmented, register, whole_blocks
from commcost.collectives.segments import reserved_segment_bounds
from commcost.collectives.trees import (Tree, build_chain, build_in_order_bintree, build_in_order_bmtree, build_tree,
                                        to_ranks)
from commcost.collectives.waits import Waits
from commcost.schedule.program_order import pairs, runs
from commcost.schedule.schedule import SendMode

SEQ = SendMode.SEQUENCE


def floor_pof2(nprocs: int) -> int:
    """The largest power of two <= ``nprocs`` (Open MPI: ``opal_next_poweroftwo(p) >> 1``)."""
    return 1 << (nprocs.bit_length() - 1)


# --------------------------------------------------------------------------------------------
# scale units (see :meth:`.registry.Algorithm.scale_unit`; each is checked by tests/test_selection_grid.py)
# --------------------------------------------------------------------------------------------

def _unsegmented(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """A tree reduce sends the whole vector up every edge when it is one segment (``segsize`` 0, or at
    least n): the 1-byte schedule scaled. More segments: their count depends on n, no unit."""
    segsize = params.get("segsize", 0)
    return 1 if segsize <= 0 or nbytes <= segsize else None


def pof2_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """Rabenseifner (reduce and allreduce): below p' bytes the linear fallback (whole vectors, from 1 byte);
    when p' divides n every halving (and the fold's halves) is exact, so the p'-byte schedule scales."""
    pof2 = floor_pof2(nprocs)
    if nbytes < pof2:
        return 1
    return pof2 if nbytes % pof2 == 0 else None


# --------------------------------------------------------------------------------------------
# reduce
# --------------------------------------------------------------------------------------------

@register(Collective.REDUCE, "ompi", "linear",
          "every rank sends its whole vector to the root, which reduces them one by one", id=1,
          scales=whole_blocks)
def reduce_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_reduce_intra_basic_linear`` (coll_base_reduce.c).

    Every non-root rank sends its vector to the root with one blocking
    send; the root receives from rank P-1 first, then P-2, ..., 0, each
    with a blocking receive followed by the reduction of that vector into
    its result before the next receive is posted: the receptions are taken
    in that order (:meth:`Recorder.receive_in_order`), each reduction on the
    root between two of them. One phase; the transmissions are recorded in
    the order the root receives them.
    """
    p, n, root = case.nprocs, case.nbytes, case.root
    senders = np.array([r for r in range(p - 1, -1, -1) if r != root], dtype=np.int64)
    if senders.size:
        rec.receive_in_order(rec.phase("to root", SEQ).sends(senders, np.full_like(senders, root), 0, n,
                                                               combine=True))


@register(Collective.REDUCE, "ompi", "binomial",
          "segmented reduce up Open MPI's in-order binomial tree; a parent takes its children in order",
          params=(Param("segsize", 0, "segment size in bytes (0: no segmentation); "
                                      "coll_tuned_reduce_algorithm_segmentsize, 0 by default"),),
          id=5, scales=_unsegmented, segmented=SEGMENTS)
def reduce_binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_reduce_intra_binomial`` (coll_base_reduce.c).

    The tree is the in-order binomial tree rooted at ``root``
    (``COLL_BASE_UPDATE_IN_ORDER_BMTREE``; virtual rank v = (rank - root)
    mod P); the message is cut into segments of ``segsize`` bytes
    (``COLL_BASE_COMPUTED_SEGCOUNT``) and ``ompi_coll_base_reduce_generic``
    runs the pipeline: a parent takes segment s from each child in its
    child order (v+1, v+2, v+4, ...), reduces it, and forwards segment s to
    its own parent; leaves send their segments with blocking sends.

    :func:`reduce_tree` runs it (phases: with L = ceil(log2 P), virtual
    rank v with lowest set bit ``2**i`` sends segment s to ``v - 2**i`` in
    phase ``s L + i``). The ``max_requests`` flow control of leaves (0,
    unlimited, by default) is not modelled.
    """
    if case.nprocs > 1:
        reduce_tree(rec, case, build_in_order_bmtree(case.nprocs), params["segsize"])


SEGSIZE = Param("segsize", 0, "segment size in bytes (0: no segmentation); "
                            "coll_tuned_reduce_algorithm_segmentsize, 0 by default")


def reduce_slots(tree: Tree) -> tuple[np.ndarray, int]:
    """Per rank of ``tree``, the slot (phase within a segment's round) in which it sends up; and the period.

    Open MPI's ``ompi_coll_base_reduce_generic`` has a parent take segment s
    from each child in ``tree_next`` order, then s + 1 from each child, and
    forward s once every child's s is reduced. With R the largest number of
    children of any rank, a rank with slot k sends segment s in phase
    ``s R + k``. Slots are given bottom-up: the children c_0, c_1, ... of a
    rank get consecutive slots ``b, b + 1, ...``, with b the smallest value
    at which every c_i comes after all of its own children; so a parent
    receives one segment per phase, in the library's order, and a rank sends
    s only after it has reduced s from all its children. For the in-order
    binomial tree this gives the phases of :func:`reduce_binomial`; for a
    chain (R = 1), the pipeline's S + P - 2 phases.
    """
    p = tree.nprocs
    children: list[list[int]] = [[] for _ in range(p)]
    for a, b in zip(tree.src.tolist(), tree.dst.tolist()):
        children[a].append(b)
    period = max((len(c) for c in children), default=1) or 1
    ready = np.zeros(p, dtype=np.int64)  # first slot in which a rank may send: after its children
    slot = np.zeros(p, dtype=np.int64)
    for v in np.argsort(-tree.depth, kind="stable").tolist():
        kids = children[v]
        if kids:
            base = max(int(ready[c]) - i for i, c in enumerate(kids))
            slot[kids] = base + np.arange(len(kids))
            ready[v] = base + len(kids)
    return slot, period


def reduce_tree(rec: Recorder, case: Case, tree: Tree, segsize: int, shifted: bool = True,
                window: int = 1) -> np.ndarray:
    """``ompi_coll_base_reduce_generic`` (coll_base_reduce.c) up ``tree`` with ``segsize``-byte segments.

    ``tree`` is on virtual ranks (root 0, ``shifted``) or on real ranks
    (the in-order binary tree). Every non-root rank sends each segment to
    its parent, reduced with its subtree's contributions, with blocking
    sends (leaves: the ``max_requests`` flow control, 0 = unlimited by
    default, is not modelled). A parent takes its receptions in the
    library's order, segment by segment and within a segment child by
    child (the loop posts the next receive, then waits for the current one
    and reduces it before the next wait; :meth:`Recorder.receive_in_order`).
    What each send waits for, as the library's
    loop runs it: segment s goes up once segment s has been received and
    reduced from every child, and
    after the rank's send of segment s - 1 returned (``window`` w > 1: up
    to w sends in flight, so s waits for s - w; coll/adapt's ireduce).
    Phases (labels) are those of :func:`reduce_slots`. Returns the ids,
    edge-major (edge e of ``tree``, segment k at ``e * S + k``).
    """
    p = case.nprocs
    bounds = reserved_segment_bounds(rec, case.nbytes, segsize, p - 1)
    nseg = len(bounds) - 1
    slot, period = reduce_slots(tree)
    child = tree.dst
    edge = np.repeat(np.arange(len(child)), nseg)
    seg = np.tile(np.arange(nseg, dtype=np.int64), len(child))
    step = seg * period + slot[child][edge]
    src, dst = child[edge], tree.parent[child][edge]
    if shifted:
        src, dst = to_ranks(src, case.root, p), to_ranks(dst, case.root, p)
    waits = Waits(rec)
    ids = rec.staged_sends(step, src, dst, bounds[seg], bounds[seg + 1], "reduce", SEQ, combine=True)
    reduce_waits(waits, ids, tree.src, child, nseg, window)
    rec.receive_in_order(ids.reshape(len(child), nseg).T)  # per parent: segment by segment, children in order
    return ids


def reduce_waits(waits: Waits, ids: np.ndarray, parent: np.ndarray, child: np.ndarray, nseg: int,
                 window: int = 1) -> None:
    """The waits of a segmented reduction up a tree: edge e (``child[e]`` sends to ``parent[e]``) carries
    segments ``0 .. nseg - 1`` with ids ``ids[e * nseg + k]``; segment k of edge e waits for segment k of
    every edge into ``child[e]`` (received and reduced) and for edge e's segment k - ``window`` (1: a
    blocking send; w: at most w sends in flight)."""
    parent, child = np.asarray(parent, np.int64), np.asarray(child, np.int64)
    nedges = len(child)
    if not nedges or not nseg:
        return
    ids = np.asarray(ids, np.int64).reshape(nedges, nseg)
    if nseg > window >= 1:
        waits(ids[:, window:], ids[:, :-window])
    by_parent, first, kids = runs(parent, child)  # the edges into each edge's sender
    e, at = pairs(np.arange(nedges, dtype=np.int64), np.ones(nedges, np.int64), first, kids)
    waits(ids[e], ids[by_parent[at]])


@register(Collective.REDUCE, "ompi", "chain",
          "segmented reduce up `fanout` chains into the root (build_chain)",
          params=(SEGSIZE, Param("fanout", 4, "chains into the root; coll_tuned_reduce_algorithm_chain_fanout "
                                              "(4); Open MPI's fixed decision passes 0, which acts as 1",
                                 minimum=1)), id=2, scales=_unsegmented, segmented=SEGMENTS)
def reduce_chain(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 2; source ``ompi_coll_base_reduce_intra_chain`` (coll_base_reduce.c).

    ``COLL_BASE_UPDATE_CHAIN`` (``ompi_coll_base_topo_build_chain`` with
    ``fanout`` chains, :func:`.trees.build_chain`) run by
    :func:`reduce_tree`: the root takes each segment from its chain heads in turn.
    """
    reduce_tree(rec, case, build_chain(params["fanout"], case.nprocs), params["segsize"])


@register(Collective.REDUCE, "ompi", "pipeline",
          "segmented reduce along one chain 0 <- 1 <- ... <- P-1 (virtual ranks)", params=(SEGSIZE,), id=3,
          scales=_unsegmented, segmented=CHAINED)
def reduce_pipeline(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 3; source ``ompi_coll_base_reduce_intra_pipeline`` (coll_base_reduce.c).

    ``COLL_BASE_UPDATE_PIPELINE`` is the chain of fan-out 1; with S segments
    the schedule has S + P - 2 phases (:func:`reduce_tree`).
    """
    reduce_tree(rec, case, build_chain(1, case.nprocs), params["segsize"])


@register(Collective.REDUCE, "ompi", "binary",
          "segmented reduce up the binary tree (build_tree, fanout 2)", params=(SEGSIZE,), id=4,
          scales=_unsegmented, segmented=SEGMENTS)
def reduce_binary(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 4; source ``ompi_coll_base_reduce_intra_binary`` (coll_base_reduce.c).

    ``COLL_BASE_UPDATE_BINTREE``: ``ompi_coll_base_topo_build_tree(2, ...)``
    on virtual ranks (:func:`.trees.build_tree`), run by :func:`reduce_tree`.
    """
    reduce_tree(rec, case, build_tree(2, case.nprocs), params["segsize"])


@register(Collective.REDUCE, "ompi", "in-order_binary",
          "segmented reduce up the in-order binary tree rooted at rank P-1, which then sends the result "
          "to the root", params=(SEGSIZE,), id=6, scales=_unsegmented,
          segmented=Segmented(part_phases=("io_root to root",)))
def reduce_in_order_binary(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 6; source ``ompi_coll_base_reduce_intra_in_order_binary`` (coll_base_reduce.c).

    The tree is ``ompi_coll_base_topo_build_in_order_bintree`` on real
    ranks, rooted at ``io_root = P - 1`` whatever the root (it keeps the
    order of operations for non-commutative ops); :func:`reduce_tree` runs
    it. When ``root != P - 1``, rank P-1 then sends the whole result to
    the root with one blocking send (the root's receive is a plain recv).
    """
    p, root = case.nprocs, case.root
    tree = build_in_order_bintree(p)
    ids = reduce_tree(rec, case, tree, params["segsize"], shifted=False)
    if root != p - 1:
        last = rec.phase("io_root to root", SEQ).send(p - 1, root, (0, case.nbytes))
        rec.wait(last, ids.reshape(len(tree.dst), -1)[tree.src == p - 1].ravel())  # its own receptions


# --------------------------------------------------------------------------------------------
# Rabenseifner's fold and recursive vector halving (the reduce's and :mod:`.allreduce`'s)
# --------------------------------------------------------------------------------------------

def halving_windows(pof2: int, nbytes: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per step of Open MPI's recursive vector halving: (kept start, kept size, sent start, sent size).

    Each array is indexed by virtual rank. At the step with mask m, a rank
    and its partner ``v ^ m`` share a window of w bytes; the lower of the
    two keeps the left ``w // 2`` bytes and sends the rest, the upper
    keeps the right ``w - w // 2`` bytes and sends the left ones
    (``rindex``/``rcount``/``sindex``/``scount`` of
    ``ompi_coll_base_allreduce_intra_redscat_allgather``). The kept part is
    the next step's window.
    """
    v = np.arange(pof2, dtype=np.int64)
    start = np.zeros(pof2, dtype=np.int64)
    size = np.full(pof2, nbytes, dtype=np.int64)
    steps = []
    mask = 1
    while mask < pof2:
        lower = (v & mask) == 0
        half = size // 2
        keep_start = np.where(lower, start, start + half)
        keep_size = np.where(lower, half, size - half)
        send_start = np.where(lower, start + half, start)
        send_size = size - keep_size
        steps.append((keep_start, keep_size, send_start, send_size))
        start, size = keep_start, keep_size
        mask <<= 1
    return steps


def fold_halves(rec: Recorder, rem: int, nbytes: int) -> None:
    """Rabenseifner's fold of the ``rem`` extra ranks (reduce and allreduce ``redscat`` functions).

    Ranks 2i and 2i+1 below 2 rem sendrecv halves (the even rank sends the
    right half ``[n//2, n)``, the odd one the left) and reduce; the odd rank
    then sends its reduced right half back to the even one and drops out.
    """
    if not rem:
        return
    even = np.arange(0, 2 * rem, 2, dtype=np.int64)
    half = nbytes // 2
    rec.phase("fold: exchange halves", SEQ)
    rec.sends(even, even + 1, half, nbytes, combine=True)
    rec.sends(even + 1, even, 0, half, combine=True)
    rec.phase("fold: odd ranks return the right half", SEQ)
    rec.sends(even + 1, even, half, nbytes, combine=False)


def reduce_scatter_halving(rec: Recorder, real: np.ndarray,
                           steps: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Recursive vector halving, distance doubling among the p' ranks ``real[v]`` (:func:`halving_windows`)."""
    v = np.arange(len(real), dtype=np.int64)
    for k, (_, _, send_start, send_size) in enumerate(steps):
        mask = 1 << k
        rec.phase(f"reduce-scatter at distance {mask}", SEQ)
        rec.sends(real, real[v ^ mask], send_start, send_start + send_size, combine=True)


@register(Collective.REDUCE, "ompi", "rabenseifner",
          "reduce-scatter by recursive halving, then a binomial gather of the pieces to the root "
          "(linear if n < 2^floor(log2 P))", id=7, scales=pof2_unit)
def reduce_rabenseifner(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 7; source ``ompi_coll_base_reduce_intra_redscat_gather`` (coll_base_reduce.c).

    With p' the largest power of two <= P and r = P - p': when n < p'
    (or the op is not commutative) Open MPI runs the linear reduce
    (:func:`reduce_linear`). Otherwise:

    1. fold, as in Rabenseifner's allreduce: ranks 2i, 2i+1 below 2r swap
       halves and reduce, and the odd one sends its reduced right half back;
       even ranks below 2r become virtual rank i, the others rank - r;
    2. reduce-scatter by recursive vector halving, masks 1, 2, ..., p'/2
       (:func:`halving_windows`);
    3. gather to the virtual root along a binomial tree, masks p'/2 down to
       1: a rank whose virtual rank differs from the virtual root's at the
       mask's bit (and agrees above it) sends the window it kept at that
       step (now fully reduced) to ``v ^ mask`` and drops out. If the root is
       an odd rank below 2r (it dropped out in step 1), rank 0 first sends
       it its piece and the root plays virtual rank 0.
    """
    p, n, root = case.nprocs, case.nbytes, case.root
    pof2 = floor_pof2(p)
    if n < pof2:
        reduce_linear(rec, case, params)
        return
    rem = p - pof2
    fold_halves(rec, rem, n)
    v = np.arange(pof2, dtype=np.int64)
    real = np.where(v < rem, 2 * v, v + rem)
    steps = halving_windows(pof2, n)
    reduce_scatter_halving(rec, real, steps)
    if root < 2 * rem and root % 2:
        vroot = 0
        keep_start, keep_size = steps[-1][0][0], steps[-1][1][0]
        rec.phase("rank 0's piece to the root", SEQ).send(0, root, (int(keep_start), int(keep_start + keep_size)))
        real = real.copy()
        real[0] = root
    else:
        vroot = root // 2 if root < 2 * rem else root - rem
    diff = v ^ vroot
    for k in range(len(steps) - 1, -1, -1):
        mask = 1 << k
        senders = v[((diff >> (k + 1)) == 0) & ((diff & mask) != 0)]
        keep_start, keep_size = steps[k][0][senders], steps[k][1][senders]
        rec.phase(f"gather at distance {mask}", SEQ)
        rec.sends(real[senders], real[senders ^ mask], keep_start, keep_start + keep_size, combine=False)
