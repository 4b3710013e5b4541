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
from commcost.collectives.registry import register
from commcost.collectives.segments import block_bounds, segment_bounds
from commcost.schedule.schedule import SendMode

SEQ = SendMode.SEQUENCE


def floor_pof2(nprocs: int) -> int:
    """The largest power of two <= ``nprocs`` (Open MPI: ``opal_next_poweroftwo(p) >> 1``)."""
    return 1 << (nprocs.bit_length() - 1)


def ceil_log2(nprocs: int) -> int:
    """Number of doubling rounds that reach ``nprocs`` ranks: ceil(log2 p), 0 for p = 1."""
    return (nprocs - 1).bit_length()


# --------------------------------------------------------------------------------------------
# reduce
# --------------------------------------------------------------------------------------------

@register(Collective.REDUCE, "ompi", "linear",
          "every rank sends its whole vector to the root, which reduces them one by one", id=1)
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


def in_order_binomial_senders(nprocs: int, bit: int) -> np.ndarray:
    """Virtual ranks whose lowest set bit is ``2**bit``: the children that report to ``v - 2**bit``.

    In Open MPI's in-order binomial tree
    (``ompi_coll_base_topo_build_in_order_bmtree``, coll_base_topo.c) the
    parent of virtual rank v > 0 is v with its lowest set bit cleared, and
    the children of v are v+1, v+2, v+4, ... (below v's lowest set bit and
    below P), listed in that order.
    """
    return np.arange(1 << bit, nprocs, 1 << (bit + 1), dtype=np.int64)


@register(Collective.REDUCE, "ompi", "binomial",
          "segmented reduce up Open MPI's in-order binomial tree; a parent takes its children in order",
          params=(Param("segsize", 0, "segment size in bytes (0: no segmentation); "
                                      "coll_tuned_reduce_algorithm_segmentsize, 0 by default"),),
          id=5)
def reduce_binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_reduce_intra_binomial`` (coll_base_reduce.c).

    The tree is the in-order binomial tree rooted at ``root``
    (``COLL_BASE_UPDATE_IN_ORDER_BMTREE``; virtual rank v = (rank - root)
    mod P); the message is cut into segments of ``segsize`` bytes
    (``COLL_BASE_COMPUTED_SEGCOUNT``) and ``ompi_coll_base_reduce_generic``
    runs the pipeline: a parent takes segment s from each child in its
    child order (v+1, v+2, v+4, ...), reduces it, and forwards segment s to
    its own parent; leaves send their segments with blocking sends.

    As phases: with L = ceil(log2 P) (the root's number of children),
    virtual rank v with lowest set bit ``2**i`` sends segment s to
    ``v - 2**i`` in phase ``s L + i``. A parent thus receives one segment
    from one child per phase, in the library's order (segment-major, then
    child), and has reduced segment s from all its children (bits below
    ``i``) before it forwards it; the root's S L receptions are the
    pipeline's critical path. The ``max_requests`` flow control of leaves
    (0, unlimited, by default) is not modelled.
    """
    p, root = case.nprocs, case.root
    if p == 1:
        return
    bounds = segment_bounds(case.nbytes, params["segsize"])
    rounds = ceil_log2(p)
    for s in range(len(bounds) - 1):
        for bit in range(rounds):
            v = in_order_binomial_senders(p, bit)
            rec.phase(f"segment {s}, lowest bit {1 << bit}", SEQ)
            rec.sends((v + root) % p, (v - (1 << bit) + root) % p, bounds[s], bounds[s + 1], combine=True)


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
          "exchange whole vectors at distances 1, 2, 4, ...; extra ranks fold into partners first", id=3)
def allreduce_recursive_doubling(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_allreduce_intra_recursivedoubling`` (see :func:`recursive_doubling`)."""
    recursive_doubling(rec, case.nprocs, case.nbytes)


@register(Collective.ALLREDUCE, "ompi", "ring",
          "ring reduce-scatter then ring allgather over P nearly equal blocks (recursive doubling if n < P)",
          id=4)
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


@register(Collective.ALLREDUCE, "ompi", "rabenseifner",
          "reduce-scatter by recursive halving, allgather by recursive doubling; extra ranks fold by halves",
          id=6)
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

    MPICH's ``MPIR_Allreduce_intra_reduce_scatter_allgather`` differs: its
    fold sends whole vectors (even to odd) and its blocks are P' nearly
    equal pieces, not successive halves.
    """
    p, n = case.nprocs, case.nbytes
    if p == 1:
        return
    pof2 = floor_pof2(p)
    rem = p - pof2
    even = np.arange(0, 2 * rem, 2, dtype=np.int64)
    half = n // 2
    if rem:
        rec.phase("fold: exchange halves", SEQ)
        rec.sends(even, even + 1, half, n, combine=True)
        rec.sends(even + 1, even, 0, half, combine=True)
        rec.phase("fold: odd ranks return the right half", SEQ)
        rec.sends(even + 1, even, half, n, combine=False)
    v = np.arange(pof2, dtype=np.int64)
    real = np.where(v < rem, 2 * v, v + rem)
    steps = halving_windows(pof2, n)
    for k, (_, _, send_start, send_size) in enumerate(steps):
        mask = 1 << k
        rec.phase(f"reduce-scatter at distance {mask}", SEQ)
        rec.sends(real, real[v ^ mask], send_start, send_start + send_size, combine=True)
    for k in range(len(steps) - 1, -1, -1):
        keep_start, keep_size, _, _ = steps[k]
        mask = 1 << k
        rec.phase(f"allgather at distance {mask}", SEQ)
        rec.sends(real, real[v ^ mask], keep_start, keep_start + keep_size, combine=False)
    if rem:
        rec.phase("unfold: result to odd ranks", SEQ).sends(even, even + 1, 0, n, combine=False)
