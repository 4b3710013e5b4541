"""Alltoall: Open MPI's coll/base algorithms as schedules.

The buffer is the one of :mod:`.case`: ``[0, P P n)``, block (i, j) =
``[(i P + j) n, (i P + j + 1) n)`` is what rank i sends to rank j; rank i
starts with blocks (i, *) and must end with blocks (*, i). Each builder
follows one function of Open MPI's ``ompi/mca/coll/base/coll_base_alltoall.c``;
names and ids are those of the ``coll_tuned_alltoall_algorithm`` enum
(``ompi/mca/coll/tuned/coll_tuned_alltoall_decision.c``). A rank's copy of
its own block (i, i) is local and not a transmission. A step written as
``ompi_coll_base_sendrecv`` (irecv, blocking send, wait) is one send per
rank per phase, recorded as :attr:`SendMode.SEQUENCE`; the linear
algorithm's Isend/Irecv + Waitall is :attr:`SendMode.POSTED`.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Range, Recorder
from commcost.collectives.registry import register, whole_blocks
from commcost.schedule.schedule import SendMode


def block_start(nprocs: int, nbytes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """First byte of block (src, dst) in the alltoall buffer."""
    return (src * nprocs + dst) * nbytes


@register(Collective.ALLTOALL, "ompi", "linear",
          "every rank posts all its receives and sends at once (Isend/Irecv + Waitall)", id=1, scales=whole_blocks)
def alltoall_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_alltoall_intra_basic_linear`` (coll_base_alltoall.c).

    Each rank starts persistent receives from every other rank and sends
    to ranks rank-1, rank-2, ..., rank+1 (reverse order, as the library
    posts them), then waits for all: one phase of posted sends.
    """
    p, n = case.nprocs, case.nbytes
    if p == 1:
        return
    rec.reserve(p * (p - 1), "every rank to every other")  # before its arrays: P (P - 1) long
    src = np.repeat(np.arange(p, dtype=np.int64), p - 1)
    offset = np.tile(np.arange(1, p, dtype=np.int64), p)
    dst = (src - offset) % p
    start = block_start(p, n, src, dst)
    rec.phase("all posted", SendMode.POSTED).sends(src, dst, start, start + n)


@register(Collective.ALLTOALL, "ompi", "pairwise",
          "P-1 steps; at step k rank r sends to r+k and receives from r-k", id=2, scales=whole_blocks)
def alltoall_pairwise(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_alltoall_intra_pairwise`` (coll_base_alltoall.c).

    Step k = 1..P-1: rank r sends block (r, (r+k) mod P) to rank r+k and
    receives block ((r-k) mod P, r) from rank r-k with one sendrecv. The
    library's last step (k = P) is the local copy and sends nothing.
    """
    p, n = case.nprocs, case.nbytes
    ranks = np.arange(p, dtype=np.int64)
    for k in range(1, p):
        dst = (ranks + k) % p
        start = block_start(p, n, ranks, dst)
        rec.phase(f"step {k}", SendMode.SEQUENCE).sends(ranks, dst, start, start + n)


def bruck_positions(nprocs: int, distance: int) -> np.ndarray:
    """Positions j in 1..P-1 of the rotated buffer that move at ``distance``: those with bit ``distance`` set."""
    j = np.arange(1, nprocs, dtype=np.int64)
    return j[(j & distance) != 0]


def bruck_payload(nprocs: int, nbytes: int, rank: int, distance: int) -> list[Range]:
    """Byte ranges ``rank`` sends at step ``distance`` of the Bruck alltoall, in the library's order.

    After the local rotation, position j of rank s holds block (s, s+j).
    A block at position j moves ``distance`` ranks forward at every step
    whose distance is a bit of j; before step ``distance`` the block at
    position j of ``rank`` has moved ``j & (distance - 1)`` ranks, so it is
    block (s, s+j) with s = rank - (j & (distance - 1)) (mod P).
    """
    j = bruck_positions(nprocs, distance)
    src = (rank - (j & (distance - 1))) % nprocs
    start = block_start(nprocs, nbytes, src, (src + j) % nprocs)
    return [(int(a), int(a) + nbytes) for a in start]


@register(Collective.ALLTOALL, "ompi", "modified_bruck",
          "Bruck's log-step alltoall: at distance d send the blocks whose rotated index has bit d", id=3,
          scales=whole_blocks)
def alltoall_modified_bruck(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """Open MPI ``ompi_coll_base_alltoall_intra_bruck`` (coll_base_alltoall.c), id 3 "modified_bruck".

    Rank r first rotates its send buffer locally so that position j holds
    block (r, r+j). Then for distance d = 1, 2, 4, ... < P it sends, as one
    message (an indexed datatype), every position j with bit d set to rank
    r+d and receives the same positions from rank r-d; a final local
    rotation puts block (r-j, r) in place. ceil(log2 P) phases; each
    message carries several non-contiguous blocks, so its payload is
    several ranges (computed only when the checker needs them: the sizes
    do not depend on them).
    """
    p, n = case.nprocs, case.nbytes
    ranks = np.arange(p, dtype=np.int64)
    distance = 1
    while distance < p:
        rec.phase(f"distance {distance}", SendMode.SEQUENCE)
        dst = (ranks + distance) % p
        if rec.data:
            for r in range(p):
                rec.send(r, int(dst[r]), bruck_payload(p, n, r, distance))
        else:
            rec.sends(ranks, dst, 0, len(bruck_positions(p, distance)) * n)
        distance <<= 1


@register(Collective.ALLTOALL, "ompi", "linear_sync",
          "like linear, but at most max_requests sends (and receives) outstanding per rank",
          params=(Param("max_requests", 0, "coll_tuned_alltoall_algorithm_max_requests: outstanding sends "
                                           "per rank (0, or P-1 and more: all at once)"),), id=4,
          scales=whole_blocks)
def alltoall_linear_sync(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's alltoall id 4; source ``ompi_coll_base_alltoall_intra_linear_sync`` (coll_base_alltoall.c).

    Rank r posts receives from r+1, r+2, ... and isends to r-1, r-2, ...;
    with ``max_requests`` m (0 or >= P-1: all P-1 at once, one phase, the
    schedule of linear) only m sends are outstanding, and as one completes
    (``ompi_request_wait_any``) the next is posted. commcost records the
    sends in phases of m (a rank's k-th send runs in phase k // m), so a
    new send waits for the whole previous group rather than for any one
    send: an upper bound of Open MPI's sliding window.
    """
    p, n = case.nprocs, case.nbytes
    if p == 1:
        return
    m = params["max_requests"]
    rec.reserve(p * (p - 1), "every rank to every other")  # before its arrays: P (P - 1) long
    window = p - 1 if m <= 0 or m > p - 1 else m
    for first in range(1, p, window):
        offset = np.arange(first, min(first + window, p), dtype=np.int64)
        src = np.repeat(np.arange(p, dtype=np.int64), len(offset))
        dst = (src - np.tile(offset, p)) % p
        start = block_start(p, n, src, dst)
        label = "all posted" if window == p - 1 else f"sends {first}..{first + len(offset) - 1}"
        rec.phase(label, SendMode.POSTED).sends(src, dst, start, start + n)


@register(Collective.ALLTOALL, "ompi", "two_proc",
          "two ranks swap their blocks for each other with one sendrecv (Open MPI refuses any other P)",
          id=5, nprocs_ok=lambda p: p == 2, scales=whole_blocks)
def alltoall_two_proc(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's alltoall id 5; source ``ompi_coll_base_alltoall_intra_two_procs`` (coll_base_alltoall.c).

    Rank r sendrecvs block (r, r ^ 1) with rank ``r ^ 1``. On any P but 2
    Open MPI returns ``MPI_ERR_UNSUPPORTED_OPERATION``, and
    :func:`commcost.collectives.build` raises ``Unsupported``.
    """
    r = np.arange(2, dtype=np.int64)
    start = block_start(2, case.nbytes, r, r ^ 1)
    rec.phase("exchange", SendMode.SEQUENCE).sends(r, r ^ 1, start, start + case.nbytes)
