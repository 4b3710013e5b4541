"""SUMMA's communication as a schedule (paper 000 section 4.1, Algorithm 1, eq. 8-11).

In iteration k every process owning blocks of the pivot block column (pbc,
block column k of A) sends them to each process whose rectangle overlaps
its rows (horizontal stage, one message of overlap-height blocks), then
every process owning blocks of the pivot block row (pbr, block row k of B)
sends them to each process whose rectangle overlaps its columns (vertical
stage, overlap-width blocks; the whole column width in a column-based
partition). Sizes are in blocks of b x b doubles. Theta_SUMMA = sum over
k of Theta^(k) (eq. 11), Theta^(k) = Theta_pbc^(k) + Theta_pbr^(k) (eq. 10).

A sender sends to ranks of its own host first, then to the others, each
group in rank order: that is the order behind the paper's
T^0(134) + T^1(158) for p1 in iteration 80 of Fig. 8. Both stages are
priced as sequences, as the paper's eq. 8 does (Algorithm 1 posts the pbc
sends with MPI_Isend; ``posted_pbc=True`` models that instead).
"""

from __future__ import annotations

import numpy as np

from commcost.kernels.partition2d import Partition2D, overlap
from commcost.schedule import Schedule, ScheduleBuilder, SendMode, SizeUnit

DOUBLE_BYTES = 8


def block_unit(part: Partition2D) -> SizeUnit:
    """The size unit of SUMMA's messages: one b x b block of doubles (b = ``part.block``)."""
    return SizeUnit("block", part.block * part.block * DOUBLE_BYTES)


def _receivers(part: Partition2D, node: np.ndarray, src: int, sizes: np.ndarray) -> list[tuple[int, int]]:
    """(dst, size) for every rank with size > 0 but src: same node first, then the others, by rank."""
    dsts = [int(d) for d in np.flatnonzero(sizes > 0) if d != src]
    dsts.sort(key=lambda d: (node[d] != node[src], d))
    return [(d, int(sizes[d])) for d in dsts]


def _order(part: Partition2D, owners: np.ndarray) -> np.ndarray:
    """Owners in column-major order of their rectangles (x, then y)."""
    return owners[np.lexsort((part.y[owners], part.x[owners]))]


def pbc_owners(part: Partition2D, k: int) -> np.ndarray:
    """Ranks holding blocks of block column k (the pbc of iteration k), in column-major order."""
    return _order(part, np.flatnonzero((part.x <= k) & (k < part.x + part.w)))


def pbr_owners(part: Partition2D, k: int) -> np.ndarray:
    """Ranks holding blocks of block row k (the pbr of iteration k), in column-major order."""
    return _order(part, np.flatnonzero((part.y <= k) & (k < part.y + part.h)))


def pbc_sends(part: Partition2D, owners: np.ndarray) -> list[tuple[int, int, int]]:
    """(src, dst, blocks): each owner's pbc part to every rank overlapping its rows (Algorithm 1, overlap())."""
    node = part.node_of_rank()
    return [(int(s), d, m) for s in owners
            for d, m in _receivers(part, node, int(s), overlap(part.y[s], part.h[s], part.y, part.h))]


def pbr_sends(part: Partition2D, owners: np.ndarray) -> list[tuple[int, int, int]]:
    """(src, dst, blocks): each owner's pbr part to every rank overlapping its columns (Algorithm 1, vComm)."""
    node = part.node_of_rank()
    return [(int(s), d, m) for s in owners
            for d, m in _receivers(part, node, int(s), overlap(part.x[s], part.w[s], part.x, part.w))]


def _add_iteration(b: ScheduleBuilder, part: Partition2D, k0: int, k1: int,
                   owners: tuple[np.ndarray, np.ndarray], posted_pbc: bool) -> None:
    label = f"k={k0}" if k0 == k1 else f"k={k0}..{k1}"
    b.phase(f"pbc {label}", SendMode.POSTED if posted_pbc else SendMode.SEQUENCE, repeat=k1 - k0 + 1)
    for s, d, m in pbc_sends(part, owners[0]):
        b.send(s, d, m)
    b.phase(f"pbr {label}", SendMode.SEQUENCE, repeat=k1 - k0 + 1)
    for s, d, m in pbr_sends(part, owners[1]):
        b.send(s, d, m)


def summa_iteration(part: Partition2D, k: int, posted_pbc: bool = False) -> Schedule:
    """Iteration k of SUMMA on a partition: phase "pbc k=K" then phase "pbr k=K" (paper 000 eq. 8, 9)."""
    b = ScheduleBuilder(part.nprocs, f"SUMMA iteration k = {k}", block_unit(part))
    _add_iteration(b, part, k, k, (pbc_owners(part, k), pbr_owners(part, k)), posted_pbc)
    return b.build()


def summa(part: Partition2D, posted_pbc: bool = False) -> Schedule:
    """All N iterations of SUMMA (paper 000 eq. 11); runs of iterations with the same senders share a phase.

    Iterations k0..k1 whose pbc and pbr are held by the same ranks send the
    same messages, so they are stored once as a pbc phase and a pbr phase
    with ``repeat = k1 - k0 + 1``. The total is the same as running them
    in alternation, since every phase starts when the previous one ends.
    """
    b = ScheduleBuilder(part.nprocs, f"SUMMA N={part.n} P={part.nprocs}", block_unit(part))
    start, current = 0, None
    for k in range(part.n + 1):
        owners = (pbc_owners(part, k), pbr_owners(part, k)) if k < part.n else None
        same = (owners is not None and current is not None
                and all(np.array_equal(a, c) for a, c in zip(owners, current)))
        if current is not None and not same:
            _add_iteration(b, part, start, k - 1, current, posted_pbc)
        if not same:
            start, current = k, owners
    return b.build()


def iteration_of_phase(schedule: Schedule) -> list[tuple[int, int]]:
    """(k0, k1) of each phase of a schedule built by :func:`summa` or :func:`summa_iteration`."""
    out = []
    for name in schedule.phase_names:
        label = name.split("k=", 1)[1]
        k0, _, k1 = label.partition("..")
        out.append((int(k0), int(k1 or k0)))
    return out
