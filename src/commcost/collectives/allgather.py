"""Open MPI's MPI_Allgather algorithms (coll/base + coll/tuned) as schedules.

Names and ids are those of ``coll_tuned_allgather_algorithm``
(coll_tuned_allgather_decision.c); the algorithms are in
``ompi/mca/coll/base/coll_base_allgather.c``. Rank r starts with block r,
``[r n, (r+1) n)``. Exchanges (``ompi_coll_base_sendrecv``, or isend/irecv
+ waitall) are phases in which every rank's sends are posted. A zero-byte
block is no communication: MPI_Allgather returns before calling the
algorithm (ompi/mpi/c/allgather.c.in).

Ids and names are those of Open MPI 5.0.x (``ompi_info --param coll tuned
--level 9`` of the embedded Open MPI 5.0.11; read at v5.0.10):

== ================== ==============================================
1  linear             ``ompi_coll_base_allgather_intra_basic_linear``
2  bruck              ``ompi_coll_base_allgather_intra_bruck``
3  recursive_doubling ``ompi_coll_base_allgather_intra_recursivedoubling``
4  ring               ``ompi_coll_base_allgather_intra_ring``
5  neighbor           ``ompi_coll_base_allgather_intra_neighborexchange``
6  two_proc           ``ompi_coll_base_allgather_intra_two_procs`` (P = 2 only)
7  sparbit            ``ompi_coll_base_allgather_intra_sparbit``
== ================== ==============================================

Open MPI's main branch (6.x) has a k-ary Bruck (``ompi_coll_base_allgather_intra_k_bruck``)
at id 2 and direct messaging at id 8; they are registered as ``generic``
entries ``bruck-k-fanout`` and ``direct-messaging`` (no id), since 5.0.x
does not run them.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import composite_unit, find, register, whole_blocks
from commcost.collectives.ring_pass import ring_pass
from commcost.collectives.scatter_gather import send_block_runs
from commcost.schedule.schedule import SendMode


def _ranks(case: Case) -> np.ndarray:
    return np.arange(case.nprocs, dtype=np.int64)


def _is_power_of_two(p: int) -> bool:
    return p & (p - 1) == 0


def _k_bruck(rec: Recorder, case: Case, radix: int) -> None:
    """``ompi_coll_base_allgather_intra_k_bruck``: the body, shared with the recursive-doubling fallback.

    Rank r keeps blocks r, r+1, ... (mod P) at the front of its buffer. At
    distance d = 1, k, k^2, ... it sends its first ``count`` blocks to
    ``r - d j`` and receives as many from ``r + d j`` for j = 1..k-1 (while
    ``d j < P``), all posted; ``count`` is d, except in the last round
    (``d > P // k``), where it is ``min(d, P - d j)``.
    """
    p = case.nprocs
    r = _ranks(case)
    distance = 1
    while distance < p:
        rec.phase(f"distance {distance}", SendMode.POSTED)
        for j in range(1, radix):
            if distance * j >= p:
                break
            count = distance if distance <= p // radix else min(distance, p - distance * j)
            send_block_runs(rec, r, (r - distance * j) % p, r, count)
        distance *= radix


@register(Collective.ALLGATHER, "generic", "bruck-k-fanout",
          "Bruck's algorithm with radix k (Open MPI 6's id 2, not in 5.0.x): ceil(log_k P) rounds of k-1 "
          "posted sends of growing runs of blocks",
          params=(Param("radix", 2, "k (Open MPI 6's faninout, coll_tuned_allgather_algorithm_tree_fanout "
                                    "when forced)", minimum=2),), scales=whole_blocks)
def bruck_k_fanout(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_allgather_intra_k_bruck`` (coll_base_allgather.c of Open MPI main, not 5.0.x).

    Radix 2 gives the schedule of 5.0's Bruck (:func:`bruck`). The final
    local rotation of the blocks moves no data between ranks.
    """
    _k_bruck(rec, case, params["radix"])


@register(Collective.ALLGATHER, "ompi", "bruck",
          "Bruck's algorithm: ceil(log2 P) sendrecvs of 1, 2, 4, ... blocks (the last one the rest) "
          "at distances 1, 2, 4, ...", id=2, scales=whole_blocks)
def bruck(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's allgather id 2; source ``ompi_coll_base_allgather_intra_bruck`` (coll_base_allgather.c).

    Rank r keeps blocks r, r+1, ... (mod P) at the front of its buffer; at
    distance d = 1, 2, 4, ... < P it sendrecvs its first ``d`` blocks
    (``P - d`` when d > P/2) to ``r - d``, receiving as many from ``r + d``.
    This is the k-ary Bruck with k = 2; the final local rotation moves no
    data between ranks.
    """
    _k_bruck(rec, case, 2)


def _linear_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """linear is a gather of n-byte blocks and a bcast of ``P n`` bytes: it scales from 1 byte when both
    parts do (:func:`.registry.composite_unit`), e.g. the default basic_linear gather and bcast."""
    return composite_unit(nprocs, nbytes, ((Collective.GATHER, str(params["gather"]), 1),
                                           (Collective.BCAST, str(params["bcast"]), nprocs)))


@register(Collective.ALLGATHER, "ompi", "linear",
          "MPI_Gather to rank 0, then MPI_Bcast of all P blocks from rank 0 (through the collectives "
          "the communicator runs)",
          params=(Param("gather", 1, "Open MPI gather id the gather runs (coll/tuned picks it by its fixed "
                                     "decision; 1 basic_linear, 2 binomial, 3 linear_sync)", minimum=1),
                  Param("bcast", 1, "Open MPI bcast id the bcast runs, unsegmented (1 basic_linear ... "
                                    "9 scatter_allgather_ring)", minimum=1)),
          id=1, scales=_linear_unit)
def linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's allgather id 1; source ``ompi_coll_base_allgather_intra_basic_linear`` (coll_base_allgather.c).

    Open MPI calls ``comm->c_coll->coll_gather`` (root 0) and then
    ``coll_bcast`` of the ``P n`` gathered bytes from rank 0: whatever the
    communicator's modules run, under coll/tuned its fixed decision for
    those sizes (:mod:`commcost.selection.ompi_fixed` tells which). The
    collectives layer cannot consult it, so the gather and bcast are
    parameters (Open MPI ids, with those algorithms' defaults), basic
    linear by default. The gather's and the bcast's buffers are the
    allgather's: block r is ``[r n, (r+1) n)``.
    """
    p, n = case.nprocs, case.nbytes
    gather = find(Collective.GATHER, str(params["gather"]))
    bcast = find(Collective.BCAST, str(params["bcast"]))
    gather.builder(rec, Case(Collective.GATHER, p, n, 0), gather.resolve_params())
    rec.next_collective()
    bcast.builder(rec, Case(Collective.BCAST, p, p * n, 0), bcast.resolve_params())


@register(Collective.ALLGATHER, "ompi", "two_proc",
          "two ranks swap their blocks with one sendrecv (Open MPI refuses any other P)", id=6,
          nprocs_ok=lambda p: p == 2, scales=whole_blocks)
def two_proc(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's allgather id 6; source ``ompi_coll_base_allgather_intra_two_procs`` (coll_base_allgather.c).

    Rank r sendrecvs its block with rank ``r ^ 1``. On any P but 2 Open
    MPI returns ``MPI_ERR_UNSUPPORTED_OPERATION`` (the call fails), so
    :func:`commcost.collectives.build` raises ``Unsupported``.
    """
    r = _ranks(case)
    rec.phase("exchange", SendMode.POSTED).sends(r, r ^ 1, r * case.nbytes, (r + 1) * case.nbytes)


@register(Collective.ALLGATHER, "ompi", "recursive_doubling",
          "log2 P pairwise exchanges with rank ^ 2^i of doubling runs of blocks "
          "(non-power-of-two P: Open MPI falls back to Bruck)", id=3, scales=whole_blocks)
def recursive_doubling(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_allgather_intra_recursivedoubling`` (coll_base_allgather.c).

    At distance d = 1, 2, 4, ... rank r exchanges (sendrecv) with ``r ^ d``
    the d blocks it holds, those of ``r`` with its low log2(d) bits
    cleared onward: message sizes double, n, 2n, 4n, ... Open MPI supports
    only power-of-two P; on any other P it calls its Bruck algorithm
    (``ompi_coll_base_allgather_intra_bruck``, id 2), and so does commcost.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    if not _is_power_of_two(p):
        _k_bruck(rec, case, 2)
        return
    r = _ranks(case)
    distance = 1
    while distance < p:
        start = (r & ~(distance - 1)) * n
        rec.phase(f"distance {distance}", SendMode.POSTED)
        rec.sends(r, r ^ distance, start, start + distance * n)
        distance <<= 1


def _ring(rec: Recorder, case: Case) -> None:
    """The ring's P-1 steps: in step i rank r sends block ``r - i`` to ``r + 1``.

    Each step is a sendrecv (``ompi_coll_base_sendrecv``): a rank's step i + 1 waits for its send and
    its reception of step i (the block it forwards).
    """
    p, n = case.nprocs, case.nbytes
    blocks = _ranks(case) * n
    ring_pass(rec, p, blocks, blocks + n, 0, "ring step ", SendMode.POSTED, False, first=1)


@register(Collective.ALLGATHER, "ompi", "ring",
          "P-1 steps; in each every rank passes the block it received last to its right neighbour", id=4,
          scales=whole_blocks)
def ring(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_allgather_intra_ring`` (coll_base_allgather.c): P-1 phases of P sendrecvs of one block."""
    _ring(rec, case)


@register(Collective.ALLGATHER, "ompi", "neighbor",
          "neighbor exchange (Chen et al.): P/2 steps alternating between the two neighbours "
          "(odd P: Open MPI falls back to the ring)", id=5, scales=whole_blocks)
def neighbor_exchange(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_allgather_intra_neighborexchange`` (coll_base_allgather.c).

    Even ranks pair first with ``r + 1``, odd ones with ``r - 1``, and swap
    their blocks; then for P/2 - 1 steps each rank alternates between its
    two neighbours, sending the pair of blocks it received in the step
    before (blocks ``2e, 2e + 1``). Odd P: Open MPI runs the ring, as does
    commcost.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    if p % 2:
        _ring(rec, case)
        return
    r = _ranks(case)
    even = r % 2 == 0
    neighbor = (np.where(even, r + 1, r - 1) % p, np.where(even, r - 1, r + 1) % p)
    offset = (np.where(even, 2, -2), np.where(even, -2, 2))
    rec.phase("step 0", SendMode.POSTED)
    rec.sends(r, neighbor[0], r * n, (r + 1) * n)
    recv_from = [np.where(even, r, neighbor[0]), np.where(even, r, neighbor[0])]
    send_from = np.where(even, r, recv_from[0])
    for i in range(1, p // 2):
        parity = i % 2
        recv_from[parity] = (recv_from[parity] + offset[parity]) % p
        rec.phase(f"step {i}", SendMode.POSTED)
        rec.sends(r, neighbor[parity], send_from * n, (send_from + 2) * n)
        send_from = recv_from[parity]


@register(Collective.ALLGATHER, "ompi", "sparbit",
          "Sparbit (Loch & Koslovski): ceil(log2 P) steps at halving distances, one message per block",
          id=7, scales=whole_blocks)
def sparbit(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_allgather_intra_sparbit`` (coll_base_allgather.c).

    At distance d = 2^(ceil(log2 P) - 1), halving to 1, rank r posts one
    isend per block to ``r + d``: blocks ``r - 2 t d`` for t below the
    number of blocks it has, less one at the steps where P's bit pattern
    says the last block would be a duplicate (Open MPI's ``ignore_steps``).
    """
    p, n = case.nprocs, case.nbytes
    if n == 0 or p == 1:
        return
    r = _ranks(case)
    steps = (p - 1).bit_length()  # ceil(log2 P)
    distance = 1 << (steps - 1)
    last_ignore = (p & -p).bit_length() - 1  # count of trailing zero bits
    ignore = (((~(p >> last_ignore)) & 0xFFFFFFFF) | 1) << last_ignore & 0xFFFFFFFF
    expected = 1
    for _ in range(steps):
        exclusion = int((distance & ignore) == distance)
        rec.phase(f"distance {distance}", SendMode.POSTED)
        for t in range(expected - exclusion):
            block = (r - 2 * t * distance) % p
            rec.sends(r, (r + distance) % p, block * n, (block + 1) * n)
        distance >>= 1
        expected = (expected << 1) - exclusion


@register(Collective.ALLGATHER, "generic", "direct-messaging",
          "every rank posts its block to every other rank at once (Open MPI 6's id 8, not in 5.0.x)",
          scales=whole_blocks)
def direct_messaging(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_allgather_direct_messaging`` (coll_base_allgather.c of Open MPI main): one phase,
    P (P-1) posted sends.

    Rank r sends to r+1, r+2, ... in that order.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0 or p == 1:
        return
    rec.reserve(p * (p - 1), "every rank to every other")  # before its arrays: P (P - 1) long
    r = _ranks(case)
    src = np.repeat(r, p - 1)
    dst = (src + np.tile(np.arange(1, p, dtype=np.int64), p)) % p
    rec.phase("all to all", SendMode.POSTED)
    rec.sends(src, dst, src * n, (src + 1) * n)
