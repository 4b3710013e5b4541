"""Open MPI 5's MPI_Reduce_scatter algorithms (coll/tuned ids 1-4) as schedules.

The buffer is the one of :mod:`.case`: ``[0, P n)``, every rank starting
with its contribution to every byte; block r, ``[r n, (r+1) n)``, is what
rank r must end with, reduced over all P contributions (``rcounts[i] = n``
for every i: commcost's ``Case.nbytes`` is one rank's block; Open MPI's
fixed decision looks at the whole input, ``P n`` bytes). Names and ids are
those of ``coll_tuned_reduce_scatter_algorithm``
(coll_tuned_reduce_scatter_decision.c, Open MPI v5.0.10 as 5.0.11 ships it):

== ================ ==========================================================
1  non-overlapping  ``ompi_coll_base_reduce_scatter_intra_nonoverlapping``
2  recursive_halving ``ompi_coll_base_reduce_scatter_intra_basic_recursivehalving``
3  ring             ``ompi_coll_base_reduce_scatter_intra_ring``
4  butterfly        ``ompi_coll_base_reduce_scatter_intra_butterfly``
== ================ ==========================================================

Transmissions that reduce into the receiver's data have ``combine=True``.
The operation is taken to be commutative (``MPI_SUM`` on built-in types).
A step written as ``ompi_coll_base_sendrecv`` or irecv + blocking send is
one send per rank per phase (:attr:`SendMode.SEQUENCE`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.reduce import floor_pof2
from commcost.collectives.registry import composite_unit, find, register, whole_blocks
from commcost.collectives.ring_pass import ring_pass
from commcost.schedule.schedule import SendMode

SEQ = SendMode.SEQUENCE


def _pof2_mapping(nprocs: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """p', r = P - p', the real rank of each of the p' ranks left after the fold, and their blocks' starts.

    After even ranks below 2r fold into rank + 1, new rank t is real rank
    ``2t + 1`` (t < r) or ``t + r``; it owns "tmp block" t, which is real
    blocks 2t and 2t+1 (t < r) or block t + r. ``disp[t]`` is the first real
    block of tmp block t (``disp[p'] = P``).
    """
    pof2 = floor_pof2(nprocs)
    rem = nprocs - pof2
    t = np.arange(pof2 + 1, dtype=np.int64)
    disp = np.where(t < rem, 2 * t, t + rem)
    real = np.where(t[:-1] < rem, 2 * t[:-1] + 1, t[:-1] + rem)
    return pof2, rem, real, disp


def _fold(rec: Recorder, rem: int, nbytes: int) -> None:
    """Even ranks below 2r send their whole vector to rank + 1, which reduces it (and goes on alone)."""
    if rem:
        even = np.arange(0, 2 * rem, 2, dtype=np.int64)
        rec.phase("fold: even ranks into rank + 1", SEQ).sends(even, even + 1, 0, nbytes, combine=True)


def _nonoverlapping_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """A reduce of ``P n`` bytes then a linear scatter of n-byte blocks: from 1 byte when both parts'
    schedules scale that way (:func:`.registry.composite_unit`)."""
    return composite_unit(nprocs, nbytes, ((Collective.REDUCE, str(params["reduce"]), nprocs),
                                           (Collective.SCATTER, "ompi.basic_linear", 1)))


@register(Collective.REDUCE_SCATTER, "ompi", "non-overlapping",
          "MPI_Reduce of all P blocks to rank 0, then MPI_Scatterv of the blocks from rank 0",
          params=(Param("reduce", 5, "Open MPI reduce id the reduce runs, with that algorithm's defaults "
                                     "(coll/tuned picks it by its fixed decision)", minimum=1),), id=1,
          scales=_nonoverlapping_unit)
def reduce_scatter_nonoverlapping(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce_scatter id 1; source ``ompi_coll_base_reduce_scatter_intra_nonoverlapping``
    (coll_base_reduce_scatter.c).

    ``comm->c_coll->coll_reduce`` of the ``P n`` bytes to root 0, then
    ``coll_scatterv`` from rank 0. coll/tuned has no scatterv, so the
    scatterv is coll/basic's linear one (rank 0 sends block i to rank i
    with blocking sends, i = 1..P-1: :func:`.scatter_gather.scatter_basic_linear`);
    the reduce is whatever coll/tuned's fixed decision picks, here a
    parameter (an Open MPI reduce id; binomial, 5, by default).
    """
    p, n = case.nprocs, case.nbytes
    reduce = find(Collective.REDUCE, str(params["reduce"]))
    reduce.builder(rec, Case(Collective.REDUCE, p, p * n, 0), reduce.resolve_params())
    scatter = find(Collective.SCATTER, "ompi.basic_linear")
    rec.next_collective()
    scatter.builder(rec, Case(Collective.SCATTER, p, n, 0), scatter.resolve_params())


@register(Collective.REDUCE_SCATTER, "ompi", "recursive_halving",
          "recursive halving of the block range at distances p'/2, ..., 1; extra ranks fold in first",
          id=2, scales=whole_blocks)
def reduce_scatter_recursive_halving(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce_scatter id 2; source ``ompi_coll_base_reduce_scatter_intra_basic_recursivehalving``
    (coll_base_reduce_scatter.c).

    With p' the largest power of two <= P and r = P - p': even ranks below
    2r send their whole vector to rank + 1 (:func:`_fold`). The p' ranks
    left (:func:`_pof2_mapping`) halve their range of tmp blocks at masks
    p'/2, p'/4, ..., 1: rank t keeps ``[t & ~(m-1), +m)`` and sends its
    partner ``t ^ m`` the partner's half, which the partner reduces. Then
    each odd rank 2i+1 below 2r sends block 2i, reduced, to rank 2i.
    """
    p, n = case.nprocs, case.nbytes
    pof2, rem, real, disp = _pof2_mapping(p)
    _fold(rec, rem, p * n)
    t = np.arange(pof2, dtype=np.int64)
    mask = pof2 >> 1
    while mask:
        first = (t ^ mask) & ~(mask - 1)
        rec.phase(f"halving at distance {mask}", SEQ)
        rec.sends(real, real[t ^ mask], disp[first] * n, disp[first + mask] * n, combine=True)
        mask >>= 1
    if rem:
        even = np.arange(0, 2 * rem, 2, dtype=np.int64)
        rec.phase("odd ranks return block rank - 1", SEQ).sends(even + 1, even, even * n, (even + 1) * n)


@register(Collective.REDUCE_SCATTER, "ompi", "ring",
          "P-1 steps; at step j rank r adds block r-1-j into what it received and passes it to r+1", id=3,
          scales=whole_blocks)
def reduce_scatter_ring(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce_scatter id 3; source ``ompi_coll_base_reduce_scatter_intra_ring``
    (coll_base_reduce_scatter.c).

    Step j = 0..P-2: rank r sends block ``(r - 1 - j) mod P``, reduced so
    far, to rank r+1, which reduces it into its own; at the last step rank
    r receives its own block, complete. P-1 phases of P sends of n bytes.
    """
    p, n = case.nprocs, case.nbytes
    blocks = np.arange(p, dtype=np.int64) * n
    ring_pass(rec, p, blocks, blocks + n, -1, "ring step ", SEQ, True)


def mirror(values: np.ndarray, bits: int) -> np.ndarray:
    """The ``bits`` low bits of ``values`` reversed (Open MPI's ``ompi_mirror_perm``)."""
    out = np.zeros_like(values)
    for b in range(bits):
        out |= ((values >> b) & 1) << (bits - 1 - b)
    return out


@register(Collective.REDUCE_SCATTER, "ompi", "butterfly",
          "butterfly: halve the block range at distances 1, 2, ..., p'/2, then swap blocks with the "
          "bit-reversed rank", id=4, scales=whole_blocks)
def reduce_scatter_butterfly(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """For Open MPI 5's reduce_scatter id 4; source ``ompi_coll_base_reduce_scatter_intra_butterfly``
    (coll_base_reduce_scatter.c).

    Fold as in recursive halving (:func:`_fold`). The p' ranks then halve
    their range of tmp blocks at masks 1, 2, ..., p'/2: rank t keeps the
    lower half when bit m of t is clear (sends the upper half to ``t ^ m``,
    which reduces it), else the upper half. Rank t ends with tmp block
    ``mirror(t)`` (t's bits reversed) complete; it sends that block's
    first real block to excluded rank ``2 mirror(t)`` when ``mirror(t) < r``,
    then sendrecvs its last real block with the rank of new number
    ``mirror(t)`` (unless that is t itself), which holds t's block.
    """
    p, n = case.nprocs, case.nbytes
    pof2, rem, real, disp = _pof2_mapping(p)
    _fold(rec, rem, p * n)
    t = np.arange(pof2, dtype=np.int64)
    start = np.zeros(pof2, dtype=np.int64)
    nblocks, mask = pof2, 1
    while mask < pof2:
        nblocks //= 2
        upper = (t & mask) != 0
        send = np.where(upper, start, start + nblocks)
        rec.phase(f"butterfly at distance {mask}", SEQ)
        rec.sends(real, real[t ^ mask], disp[send] * n, disp[send + nblocks] * n, combine=True)
        start = np.where(upper, start + nblocks, start)
        mask <<= 1
    peer = mirror(t, pof2.bit_length() - 1)
    rec.phase("blocks to their ranks", SEQ)
    # a rank's send to an excluded rank comes before its sendrecv: two batches keep that order per sender
    first = peer < rem
    rec.sends(real[first], 2 * peer[first], 2 * peer[first] * n, (2 * peer[first] + 1) * n)
    swap = peer != t
    block = disp[peer[swap] + 1] - 1
    rec.sends(real[swap], real[peer[swap]], block * n, (block + 1) * n)
