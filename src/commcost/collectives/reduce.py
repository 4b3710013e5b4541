"""Reduce and allreduce: Open MPI's coll/base algorithms as schedules.

Buffer conventions are those of :mod:`.case`: every rank starts with its
contribution to every byte of ``[0, n)``; a transmission with
``combine=True`` reduces the sender's partial result into the receiver's,
one with ``combine=False`` replaces the receiver's bytes. The reduction
operation is taken to be commutative and associative (``MPI_SUM`` on
built-in types): the ring and Rabenseifner algorithms need it, and the
schedules do not record the order in which partial results are combined.

Each builder follows one function of Open MPI's
``ompi/mca/coll/base/coll_base_reduce.c`` or ``coll_base_allreduce.c``;
names and ids are those of the ``coll_tuned_reduce_algorithm`` and
``coll_tuned_allreduce_algorithm`` enums
(``ompi/mca/coll/tuned/coll_tuned_{reduce,allreduce}_decision.c``).
Open MPI counts elements, commcost bytes: one element is one byte.

Every exchange the libraries write as ``ompi_coll_base_sendrecv`` (irecv,
blocking send, wait) is one send per rank per phase, recorded as
:attr:`SendMode.SEQUENCE`. Like the other builders, a zero-byte message
still runs the algorithm's steps (Open MPI's ``MPI_Reduce`` and
``MPI_Allreduce`` return before calling the algorithm when count is 0).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import composite_unit, find, register, whole_blocks
from commcost.collectives.segments import block_bounds, reserved_segment_bounds
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


def _pof2_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """Rabenseifner (reduce and allreduce): below p' bytes the linear fallback (whole vectors, from 1 byte);
    when p' divides n every halving (and the fold's halves) is exact, so the p'-byte schedule scales."""
    pof2 = floor_pof2(nprocs)
    if nbytes < pof2:
        return 1
    return pof2 if nbytes % pof2 == 0 else None


def _ring_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """The ring allreduce: recursive doubling (whole vectors, from 1 byte) when n < P; P equal blocks (from
    P bytes) when P divides n; else blocks of two sizes, no unit."""
    if nbytes < nprocs:
        return 1
    return nprocs if nbytes % nprocs == 0 else None


def _segmented_ring_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """segmented_ring runs the ring when n < P segcount, i.e. ``segsize`` 0 or n < P segsize; its unit u
    (at most n) then runs the ring too, so the ring's unit holds. Segmented rounds: no unit."""
    segsize = params.get("segsize", 0)
    if segsize <= 0 or nbytes < nprocs * segsize:
        return _ring_unit(params, nprocs, nbytes)
    return None


def _nonoverlapping_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """A reduce then a bcast of n bytes, each with its defaults: from 1 byte when both scale from 1."""
    return composite_unit(nprocs, nbytes, ((Collective.REDUCE, str(params["reduce"]), 1),
                                           (Collective.BCAST, str(params["bcast"]), 1)))


# --------------------------------------------------------------------------------------------
# reduce
# --------------------------------------------------------------------------------------------

@register(Collective.REDUCE, "ompi", "linear",
          "every rank sends its whole vector to the root, which reduces them one by one", id=1,
          scales=whole_blocks)
def reduce_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_reduce_intra_basic_linear`` (coll_base_reduce.c).

    Every non-root rank sends its vector to the root with one blocking
    send; the root receives from rank P-1 first, then P-2, ..., 0, and
    reduces each into its result. One phase; the transmissions are
    recorded in the order the root receives them.
    """
    p, n, root = case.nprocs, case.nbytes, case.root
    senders = np.array([r for r in range(p - 1, -1, -1) if r != root], dtype=np.int64)
    if senders.size:
        rec.phase("to root", SEQ).sends(senders, np.full_like(senders, root), 0, n, combine=True)


@register(Collective.REDUCE, "ompi", "binomial",
          "segmented reduce up Open MPI's in-order binomial tree; a parent takes its children in order",
          params=(Param("segsize", 0, "segment size in bytes (0: no segmentation); "
                                      "coll_tuned_reduce_algorithm_segmentsize, 0 by default"),),
          id=5, scales=_unsegmented)
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


def reduce_tree(rec: Recorder, case: Case, tree: Tree, segsize: int, shifted: bool = True) -> np.ndarray:
    """``ompi_coll_base_reduce_generic`` (coll_base_reduce.c) up ``tree`` with ``segsize``-byte segments.

    ``tree`` is on virtual ranks (root 0, ``shifted``) or on real ranks
    (the in-order binary tree). Every non-root rank sends each segment to
    its parent, reduced with its subtree's contributions, with blocking
    sends (leaves: the ``max_requests`` flow control, 0 = unlimited by
    default, is not modelled). What each send waits for, as the library's
    loop runs it: segment s goes up once segment s has been received and
    reduced from every child (the parent takes its children in order,
    posting the next receive before it waits for the current one), and
    after the rank's send of segment s - 1 returned. Phases (labels) are
    those of :func:`reduce_slots`. Returns the ids, edge-major (edge e of
    ``tree``, segment k at ``e * S + k``).
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
    reduce_waits(waits, ids, tree.src, child, nseg)
    return ids


def reduce_waits(waits: Waits, ids: np.ndarray, parent: np.ndarray, child: np.ndarray, nseg: int) -> None:
    """The waits of a segmented reduction up a tree: edge e (``child[e]`` sends to ``parent[e]``) carries
    segments ``0 .. nseg - 1`` with ids ``ids[e * nseg + k]``; segment k of edge e waits for segment k of
    every edge into ``child[e]`` (received and reduced) and for edge e's segment k - 1 (a blocking send)."""
    parent, child = np.asarray(parent, np.int64), np.asarray(child, np.int64)
    nedges = len(child)
    if not nedges or not nseg:
        return
    ids = np.asarray(ids, np.int64).reshape(nedges, nseg)
    if nseg > 1:
        waits(ids[:, 1:], ids[:, :-1])
    by_parent, first, kids = runs(parent, child)  # the edges into each edge's sender
    e, at = pairs(np.arange(nedges, dtype=np.int64), np.ones(nedges, np.int64), first, kids)
    waits(ids[e], ids[by_parent[at]])


@register(Collective.REDUCE, "ompi", "chain",
          "segmented reduce up `fanout` chains into the root (build_chain)",
          params=(SEGSIZE, Param("fanout", 4, "chains into the root; coll_tuned_reduce_algorithm_chain_fanout "
                                              "(4); Open MPI's fixed decision passes 0, which acts as 1",
                                 minimum=1)), id=2, scales=_unsegmented)
def reduce_chain(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 2; source ``ompi_coll_base_reduce_intra_chain`` (coll_base_reduce.c).

    ``COLL_BASE_UPDATE_CHAIN`` (``ompi_coll_base_topo_build_chain`` with
    ``fanout`` chains, :func:`.trees.build_chain`) run by
    :func:`reduce_tree`: the root takes each segment from its chain heads in turn.
    """
    reduce_tree(rec, case, build_chain(params["fanout"], case.nprocs), params["segsize"])


@register(Collective.REDUCE, "ompi", "pipeline",
          "segmented reduce along one chain 0 <- 1 <- ... <- P-1 (virtual ranks)", params=(SEGSIZE,), id=3,
          scales=_unsegmented)
def reduce_pipeline(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 3; source ``ompi_coll_base_reduce_intra_pipeline`` (coll_base_reduce.c).

    ``COLL_BASE_UPDATE_PIPELINE`` is the chain of fan-out 1; with S segments
    the schedule has S + P - 2 phases (:func:`reduce_tree`).
    """
    reduce_tree(rec, case, build_chain(1, case.nprocs), params["segsize"])


@register(Collective.REDUCE, "ompi", "binary",
          "segmented reduce up the binary tree (build_tree, fanout 2)", params=(SEGSIZE,), id=4,
          scales=_unsegmented)
def reduce_binary(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce id 4; source ``ompi_coll_base_reduce_intra_binary`` (coll_base_reduce.c).

    ``COLL_BASE_UPDATE_BINTREE``: ``ompi_coll_base_topo_build_tree(2, ...)``
    on virtual ranks (:func:`.trees.build_tree`), run by :func:`reduce_tree`.
    """
    reduce_tree(rec, case, build_tree(2, case.nprocs), params["segsize"])


@register(Collective.REDUCE, "ompi", "in-order_binary",
          "segmented reduce up the in-order binary tree rooted at rank P-1, which then sends the result "
          "to the root", params=(SEGSIZE,), id=6, scales=_unsegmented)
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


@register(Collective.REDUCE, "ompi", "rabenseifner",
          "reduce-scatter by recursive halving, then a binomial gather of the pieces to the root "
          "(linear if n < 2^floor(log2 P))", id=7, scales=_pof2_unit)
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
    _fold_halves(rec, rem, n)
    v = np.arange(pof2, dtype=np.int64)
    real = np.where(v < rem, 2 * v, v + rem)
    steps = halving_windows(pof2, n)
    _reduce_scatter_halving(rec, real, steps)
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


# --------------------------------------------------------------------------------------------
# allreduce
# --------------------------------------------------------------------------------------------

def recursive_doubling(rec: Recorder, nprocs: int, nbytes: int) -> None:
    """Open MPI's recursive-doubling allreduce on ``[0, nbytes)``; shared with the ring's fallback.

    ``ompi_coll_base_allreduce_intra_recursivedoubling``
    (coll_base_allreduce.c). With p' the largest power of two <= P and
    r = P - p' extra ranks: the even ranks below 2r send their vector to
    rank+1 and drop out ("fold"); the odd ranks below 2r become new rank
    rank/2, the others rank - r. The p' remaining ranks exchange their
    whole partial results with new rank ``newrank ^ d`` for d = 1, 2, ...,
    p'/2; finally the odd ranks below 2r send the result back to rank-1.
    """
    if nprocs == 1:
        return
    pof2 = floor_pof2(nprocs)
    extra = nprocs - pof2
    folded = np.arange(0, 2 * extra, 2, dtype=np.int64)
    if extra:
        rec.phase("fold extra ranks", SEQ).sends(folded, folded + 1, 0, nbytes, combine=True)
    newrank = np.arange(pof2, dtype=np.int64)
    real = np.where(newrank < extra, 2 * newrank + 1, newrank + extra)
    distance = 1
    while distance < pof2:
        rec.phase(f"exchange at distance {distance}", SEQ)
        rec.sends(real, real[newrank ^ distance], 0, nbytes, combine=True)
        distance <<= 1
    if extra:
        rec.phase("unfold extra ranks", SEQ).sends(folded + 1, folded, 0, nbytes, combine=False)


@register(Collective.ALLREDUCE, "ompi", "recursive_doubling",
          "exchange whole vectors at distances 1, 2, 4, ...; extra ranks fold into partners first", id=3,
          scales=whole_blocks)
def allreduce_recursive_doubling(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_allreduce_intra_recursivedoubling`` (see :func:`recursive_doubling`)."""
    recursive_doubling(rec, case.nprocs, case.nbytes)


@register(Collective.ALLREDUCE, "ompi", "ring",
          "ring reduce-scatter then ring allgather over P nearly equal blocks (recursive doubling if n < P)",
          id=4, scales=_ring_unit)
def allreduce_ring(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_allreduce_intra_ring`` (coll_base_allreduce.c).

    The vector is cut into P blocks, the first ``n mod P`` one byte larger
    (``COLL_BASE_COMPUTE_BLOCKCOUNT``). Reduce-scatter, steps k = 0..P-2:
    rank r sends block (r - k) mod P, reduced so far, to rank r+1, which
    reduces it into its own; afterwards rank r holds block (r+1) mod P
    fully reduced. Allgather, steps k = 0..P-2: rank r sends block
    (r + 1 - k) mod P to rank r+1, which stores it. 2(P-1) phases.

    Like the library, a message of fewer bytes than ranks (count < P)
    runs the recursive-doubling algorithm instead.
    """
    p, n = case.nprocs, case.nbytes
    if p == 1:
        return
    if n < p:
        recursive_doubling(rec, p, n)
        return
    bounds = block_bounds(n, p)
    ranks = np.arange(p, dtype=np.int64)
    right = (ranks + 1) % p
    for k in range(p - 1):
        block = (ranks - k) % p
        rec.phase(f"reduce-scatter step {k}", SEQ)
        rec.sends(ranks, right, bounds[block], bounds[block + 1], combine=True)
    for k in range(p - 1):
        block = (ranks + 1 - k) % p
        rec.phase(f"allgather step {k}", SEQ)
        rec.sends(ranks, right, bounds[block], bounds[block + 1], combine=False)


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


def _fold_halves(rec: Recorder, rem: int, nbytes: int) -> None:
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


def _reduce_scatter_halving(rec: Recorder, real: np.ndarray,
                            steps: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Recursive vector halving, distance doubling among the p' ranks ``real[v]`` (:func:`halving_windows`)."""
    v = np.arange(len(real), dtype=np.int64)
    for k, (_, _, send_start, send_size) in enumerate(steps):
        mask = 1 << k
        rec.phase(f"reduce-scatter at distance {mask}", SEQ)
        rec.sends(real, real[v ^ mask], send_start, send_start + send_size, combine=True)


@register(Collective.ALLREDUCE, "ompi", "rabenseifner",
          "reduce-scatter by recursive halving, allgather by recursive doubling; extra ranks fold by halves",
          id=6, scales=_pof2_unit)
def allreduce_rabenseifner(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_allreduce_intra_redscat_allgather`` (coll_base_allreduce.c).

    Rabenseifner's algorithm (Thakur, Rabenseifner and Gropp 2005). With p'
    the largest power of two <= P and r = P - p':

    1. fold: ranks below 2r pair up (2i, 2i+1); the even rank sends the
       right half ``[n//2, n)`` and the odd rank the left half to each
       other and both reduce; then the odd rank sends its reduced right half
       back to the even rank, which stores it, and drops out. The even
       ranks below 2r become virtual rank rank/2, the others rank - r.
    2. reduce-scatter among the p' virtual ranks by recursive vector
       halving and distance doubling, masks 1, 2, ..., p'/2 (see
       :func:`halving_windows`).
    3. allgather by recursive vector doubling and distance halving: the
       same exchanges in reverse order, each rank sending what it holds.
    4. the even ranks below 2r send the whole result to rank+1.

    When n < p' (or the op is not commutative) Open MPI runs
    ``ompi_coll_base_allreduce_intra_basic_linear`` instead, and so does commcost.

    MPICH's ``MPIR_Allreduce_intra_reduce_scatter_allgather`` differs: its
    fold sends whole vectors (even to odd) and its blocks are P' nearly
    equal pieces, not successive halves.
    """
    p, n = case.nprocs, case.nbytes
    if p == 1:
        return
    pof2 = floor_pof2(p)
    if n < pof2:  # Open MPI: count < p' (or a non-commutative op) runs basic_linear
        allreduce_basic_linear(rec, case, params)
        return
    rem = p - pof2
    even = np.arange(0, 2 * rem, 2, dtype=np.int64)
    _fold_halves(rec, rem, n)
    v = np.arange(pof2, dtype=np.int64)
    real = np.where(v < rem, 2 * v, v + rem)
    steps = halving_windows(pof2, n)
    _reduce_scatter_halving(rec, real, steps)
    for k in range(len(steps) - 1, -1, -1):
        keep_start, keep_size, _, _ = steps[k]
        mask = 1 << k
        rec.phase(f"allgather at distance {mask}", SEQ)
        rec.sends(real, real[v ^ mask], keep_start, keep_start + keep_size, combine=False)
    if rem:
        rec.phase("unfold: result to odd ranks", SEQ).sends(even, even + 1, 0, n, combine=False)


@register(Collective.ALLREDUCE, "ompi", "basic_linear",
          "linear reduce to rank 0, then linear bcast from rank 0", id=1, scales=whole_blocks)
def allreduce_basic_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's allreduce id 1; source ``ompi_coll_base_allreduce_intra_basic_linear`` (coll_base_allreduce.c).

    ``ompi_coll_base_reduce_intra_basic_linear`` to root 0
    (:func:`reduce_linear`), then ``ompi_coll_base_bcast_intra_basic_linear``
    from rank 0 (rank 0 isends the result to every rank).
    """
    p, n = case.nprocs, case.nbytes
    reduce_linear(rec, Case(Collective.REDUCE, p, n, 0), params)
    bcast = find(Collective.BCAST, "ompi.basic_linear")
    rec.next_collective()
    bcast.builder(rec, Case(Collective.BCAST, p, n, 0), bcast.resolve_params())


@register(Collective.ALLREDUCE, "ompi", "nonoverlapping",
          "MPI_Reduce to rank 0, then MPI_Bcast from rank 0 (through the collectives the communicator runs)",
          params=(Param("reduce", 5, "Open MPI reduce id the reduce runs, with that algorithm's defaults "
                                     "(coll/tuned picks it by its fixed decision)", minimum=1),
                  Param("bcast", 6, "Open MPI bcast id the bcast runs, with that algorithm's defaults",
                        minimum=1)), id=2, scales=_nonoverlapping_unit)
def allreduce_nonoverlapping(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's allreduce id 2; source ``ompi_coll_base_allreduce_intra_nonoverlapping`` (coll_base_allreduce.c).

    Open MPI calls ``comm->c_coll->coll_reduce`` to root 0 and then
    ``coll_bcast`` from rank 0: under coll/tuned, their fixed decisions
    (:mod:`commcost.selection.ompi_fixed` tells which for a size). The
    collectives layer cannot consult them, so the two are parameters:
    Open MPI ids, by default the binomial reduce (5) and binomial bcast (6).
    """
    p, n = case.nprocs, case.nbytes
    reduce = find(Collective.REDUCE, str(params["reduce"]))
    bcast = find(Collective.BCAST, str(params["bcast"]))
    reduce.builder(rec, Case(Collective.REDUCE, p, n, 0), reduce.resolve_params())
    rec.next_collective()
    bcast.builder(rec, Case(Collective.BCAST, p, n, 0), bcast.resolve_params())


@register(Collective.ALLREDUCE, "ompi", "segmented_ring",
          "the ring allreduce with each block's reduce-scatter pipelined in segment-sized phases",
          params=(Param("segsize", 0, "segment size in bytes; coll_tuned_allreduce_algorithm_segmentsize "
                                      "(0: no segmentation, i.e. the ring)"),), id=5, scales=_segmented_ring_unit)
def allreduce_segmented_ring(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's allreduce id 5; source ``ompi_coll_base_allreduce_intra_ring_segmented`` (coll_base_allreduce.c).

    With segcount = ``segsize`` (if ``1 <= segsize < n``, else n;
    ``COLL_BASE_COMPUTED_SEGCOUNT``): when n < P segcount Open MPI runs the
    ring (:func:`allreduce_ring`, itself recursive doubling when n < P).
    Otherwise the vector is cut into P blocks (``COLL_BASE_COMPUTE_BLOCKCOUNT``)
    and the reduce-scatter runs in ``num_phases`` = n // (P segcount)
    rounds (one more when the remainder is at least P and more than half
    of P segcount); round k reduces the k-th of ``num_phases`` nearly equal
    pieces of every block with the ring's P-1 steps (rank r sends piece k
    of block r - j to r+1 at step j). The allgather is the ring's, on whole
    blocks.
    """
    p, n = case.nprocs, case.nbytes
    segsize = params["segsize"]
    segcount = segsize if 1 <= segsize < n else n
    if n < p * segcount:
        allreduce_ring(rec, case, params)
        return
    rounds = n // (p * segcount)
    rest = n % (p * segcount)
    if rest >= p and rest > (p * segcount) // 2:
        rounds += 1
    bounds = block_bounds(n, p)
    ranks = np.arange(p, dtype=np.int64)
    right = (ranks + 1) % p
    sizes = np.diff(bounds)
    base, extra = sizes // rounds, sizes % rounds  # piece k of block b: base + (k < extra)
    for k in range(rounds):
        offset = bounds[:-1] + k * base + np.minimum(k, extra)
        length = base + (k < extra)
        for j in range(p - 1):
            block = (ranks - j) % p
            rec.phase(f"round {k}, reduce-scatter step {j}", SEQ)
            rec.sends(ranks, right, offset[block], offset[block] + length[block], combine=True)
    for j in range(p - 1):
        block = (ranks + 1 - j) % p
        rec.phase(f"allgather step {j}", SEQ)
        rec.sends(ranks, right, bounds[block], bounds[block + 1], combine=False)
