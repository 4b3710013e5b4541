"""Allreduce: Open MPI's coll/base allreduce algorithms as schedules.

Buffer conventions are those of :mod:`.case`, as in :mod:`.reduce`: every
rank starts with its contribution to every byte of ``[0, n)``; a
transmission with ``combine=True`` reduces the sender's partial result into
the receiver's, one with ``combine=False`` replaces the receiver's bytes.
The reduction operation is taken to be commutative and associative
(``MPI_SUM`` on built-in types): the ring and Rabenseifner algorithms need
it, and the schedules do not record the order in which partial results
are combined.

Each builder follows one function of Open MPI's
``ompi/mca/coll/base/coll_base_allreduce.c``; names and ids are those of
the ``coll_tuned_allreduce_algorithm`` enum
(``ompi/mca/coll/tuned/coll_tuned_allreduce_decision.c``). Open MPI counts
elements, commcost bytes: one element is one byte. Rabenseifner's
algorithm (Thakur, Rabenseifner and Gropp 2005) takes its fold and
recursive vector halving from :mod:`.reduce`, whose Rabenseifner reduce
runs them too; basic_linear starts with :func:`.reduce.reduce_linear`.

Every exchange the library writes as ``ompi_coll_base_sendrecv`` (irecv,
blocking send, wait) is one send per rank per phase, recorded as
:attr:`SendMode.SEQUENCE`. Like the other builders, a zero-byte message
still runs the algorithm's steps (Open MPI's ``MPI_Allreduce`` returns
before calling the algorithm when count is 0).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.reduce import (floor_pof2, fold_halves, halving_windows, pof2_unit, reduce_linear,
                                         reduce_scatter_halving)
from commcost.collectives.registry import RoundCut, composite_unit, find, register, whole_blocks
from commcost.collectives.ring_pass import ring_pass
from commcost.collectives.segments import block_bounds
from commcost.schedule.schedule import SendMode

SEQ = SendMode.SEQUENCE
ALLGATHER_STEP = "allgather step "  # segmented_ring's allgather phases: the name, then the step


# --------------------------------------------------------------------------------------------
# scale units (see :meth:`.registry.Algorithm.scale_unit`; each is checked by tests/test_selection_grid.py)
# --------------------------------------------------------------------------------------------

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


def _rounds(nprocs: int, nbytes: int, segsize: int) -> int:
    """segmented_ring's ``num_phases`` with segcount = ``segsize`` (if 1 <= segsize < n, else n): n // (P
    segcount), one more when the remainder is at least P and more than half of P segcount; 0 where Open MPI
    runs the ring instead, n < P segcount (``ompi_coll_base_allreduce_intra_ring_segmented``)."""
    segcount = segsize if 1 <= segsize < nbytes else nbytes
    if nbytes < nprocs * segcount:
        return 0
    rounds, rest = divmod(nbytes, nprocs * segcount)
    return rounds + 1 if rest >= nprocs and rest > (nprocs * segcount) // 2 else rounds


def _segmented_ring_rounds(params: Mapping[str, int], nprocs: int, nbytes: int) -> RoundCut | None:
    """segmented_ring's R reduce-scatter rounds are alike when every block is R pieces of one size q, i.e. n =
    R P q (every power of two from P segsize on, for P and segsize powers of two): the same algorithm with
    ``segsize`` q on m P q bytes runs m of those rounds, and its allgather passes blocks of m pieces instead of
    R. None where it runs the ring (n < P segcount) or the pieces differ."""
    rounds = _rounds(nprocs, nbytes, params.get("segsize", 0))
    if not rounds or nbytes % (nprocs * rounds):
        return None
    piece = nbytes // (nprocs * rounds)
    return RoundCut(rounds, nprocs * piece, piece, (("segsize", piece),), ALLGATHER_STEP)


def _nonoverlapping_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """A reduce then a bcast of n bytes, each with its defaults: from 1 byte when both scale from 1."""
    return composite_unit(nprocs, nbytes, ((Collective.REDUCE, str(params["reduce"]), 1),
                                           (Collective.BCAST, str(params["bcast"]), 1)))


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
    ring_pass(rec, p, bounds[:-1], bounds[1:], 0, "reduce-scatter step ", SEQ, True)
    ring_pass(rec, p, bounds[:-1], bounds[1:], 1, ALLGATHER_STEP, SEQ, False)


@register(Collective.ALLREDUCE, "ompi", "rabenseifner",
          "reduce-scatter by recursive halving, allgather by recursive doubling; extra ranks fold by halves",
          id=6, scales=pof2_unit)
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
       :func:`.reduce.halving_windows`).
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
    fold_halves(rec, rem, n)
    v = np.arange(pof2, dtype=np.int64)
    real = np.where(v < rem, 2 * v, v + rem)
    steps = halving_windows(pof2, n)
    reduce_scatter_halving(rec, real, steps)
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
    (:func:`.reduce.reduce_linear`), then ``ompi_coll_base_bcast_intra_basic_linear``
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
                                      "(0: no segmentation, i.e. the ring)"),), id=5, scales=_segmented_ring_unit,
          rounds=_segmented_ring_rounds)
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
    rounds = _rounds(p, n, params["segsize"])
    if not rounds:
        allreduce_ring(rec, case, params)
        return
    # refused up front, not after thousands of rounds recorded (folded: one node's share counted)
    rec.reserve((rounds + 1) * p * (p - 1), f"{rounds:,} rounds of a ring of P - 1 steps, then its allgather",
                whole=False)
    bounds = block_bounds(n, p)
    sizes = np.diff(bounds)
    base, extra = sizes // rounds, sizes % rounds  # piece k of block b: base + (k < extra)
    for k in range(rounds):
        offset = bounds[:-1] + k * base + np.minimum(k, extra)
        ring_pass(rec, p, offset, offset + base + (k < extra), 0, f"round {k}, reduce-scatter step ",
                  SEQ, True)
    ring_pass(rec, p, bounds[:-1], bounds[1:], 1, ALLGATHER_STEP, SEQ, False)
