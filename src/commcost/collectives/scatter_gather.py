"""Open MPI's MPI_Scatter and MPI_Gather algorithms (coll/base + coll/tuned) as schedules.

Names and ids are those of ``coll_tuned_scatter_algorithm`` and
``coll_tuned_gather_algorithm`` (coll_tuned_{scatter,gather}_decision.c).
Block r of the buffer, ``[r n, (r+1) n)``, is rank r's (see :mod:`.case`).
The binomial algorithms work on virtual ranks ``v = (rank - root) mod P``
and move runs of consecutive virtual blocks, which wrap around the end of
the buffer when ``root > 0`` (Open MPI rotates them into a packed buffer).
A zero-byte block is no communication: MPI_Scatter / MPI_Gather return
before calling the algorithm (ompi/mpi/c/scatter.c.in, gather.c.in).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import register, whole_blocks
from commcost.schedule.schedule import SendMode


def send_block_runs(rec: Recorder, src: Any, dst: Any, first: Any, count: Any) -> np.ndarray:
    """Transmissions ``src[i] -> dst[i]`` of the ``count[i]`` blocks ``first[i], first[i] + 1, ...`` mod P;
    returns their ids.

    A run that wraps past block P-1 is one transmission carrying two byte
    ranges. Built for pricing (``rec.data`` false) this is one numpy batch;
    with payloads it records the transmissions one by one, in the same order.
    """
    p, n = rec.case.nprocs, rec.case.nbytes
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.broadcast_to(np.asarray(dst, dtype=np.int64), src.shape)
    first = np.broadcast_to(np.asarray(first, dtype=np.int64) % p, src.shape)
    count = np.broadcast_to(np.asarray(count, dtype=np.int64), src.shape)
    if not rec.data:
        return rec.sends(src, dst, first * n, (first + count) * n)
    ids = []
    for s, d, f, c in zip(src.tolist(), dst.tolist(), first.tolist(), count.tolist()):
        end = f + c
        if end <= p:
            ids.append(rec.send(s, d, (f * n, end * n)))
        else:
            ids.append(rec.send(s, d, ((f * n, p * n), (0, (end - p) * n))))
    return np.array(ids, np.int64)


def _masks_down(nprocs: int) -> list[int]:
    """Largest power of two below P, halving to 1 (the binomial tree's send order)."""
    if nprocs < 2:
        return []
    top = 1 << ((nprocs - 1).bit_length() - 1)
    return [top >> s for s in range(top.bit_length())]


def _others(case: Case) -> np.ndarray:
    """Every rank but the root, in rank order."""
    r = np.arange(case.nprocs, dtype=np.int64)
    return r[r != case.root]


# ------------------------------------------------------------------------------------------------ scatter


@register(Collective.SCATTER, "ompi", "basic_linear",
          "the root sends each rank its block, one blocking send after another", id=1, scales=whole_blocks)
def scatter_basic_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_scatter_intra_basic_linear`` (coll_base_scatter.c): root sends to ranks 0..P-1 in order."""
    peers = _others(case)
    rec.phase("root sends", SendMode.SEQUENCE)
    rec.sends(np.full(len(peers), case.root), peers, peers * case.nbytes, (peers + 1) * case.nbytes)


@register(Collective.SCATTER, "ompi", "binomial",
          "in-order binomial tree: each subtree root receives its subtree's blocks and passes halves on",
          id=2, scales=whole_blocks)
def scatter_binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_scatter_intra_binomial`` (coll_base_scatter.c) on the in-order binomial tree.

    The tree is ``ompi_coll_base_topo_build_in_order_bmtree``
    (coll_base_topo.c): the children of virtual rank v are ``v + mask`` for
    the masks below v's lowest set bit, and v sends to them largest first
    (blocking sends) the blocks of their subtrees, ``[c, min(c + mask, P))``.
    In the phase of ``mask`` every multiple of ``2 mask`` sends: message
    sizes halve from phase to phase (P/2 n, P/4 n, ...) while the number of
    senders doubles.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    for mask in _masks_down(p):
        v = np.arange(0, p - mask, 2 * mask, dtype=np.int64)
        child = v + mask
        rec.phase(f"mask {mask}", SendMode.SEQUENCE)
        send_block_runs(rec, (v + case.root) % p, (child + case.root) % p, child + case.root,
                        np.minimum(mask, p - child))


@register(Collective.SCATTER, "ompi", "linear_nb",
          "the root posts a non-blocking send of each rank's block (optionally a blocking one every "
          "max_requests)", params=(Param("max_requests", 0, "coll_tuned_scatter_algorithm_max_requests: "
                                         "every this many sends one is blocking (<= 1: none)"),), id=3,
          scales=whole_blocks)
def scatter_linear_nb(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_scatter_intra_linear_nb`` (coll_base_scatter.c).

    The root posts ``isend``s to ranks 0..P-1 in order and waits for all.
    With ``max_requests > 1`` the send to every rank ``i`` with
    ``i % max_requests == 0`` is a blocking send; commcost ends a phase of
    posted sends there (the sends before it must finish before later ones
    start, a slight overstatement of Open MPI, which only waits for the
    blocking one). Open MPI's default is 0: all sends posted in one phase.
    """
    p, n, every = case.nprocs, case.nbytes, params["max_requests"]
    if n == 0 or p == 1:
        return
    peers = _others(case)
    if every > 1:
        cuts = np.flatnonzero(peers % every == 0) + 1
        groups = [g for g in np.split(peers, cuts) if len(g)]
    else:
        groups = [peers]
    for k, group in enumerate(groups):
        rec.phase(f"root posts {k}" if len(groups) > 1 else "root posts", SendMode.POSTED)
        rec.sends(np.full(len(group), case.root), group, group * n, (group + 1) * n)


# ------------------------------------------------------------------------------------------------- gather


@register(Collective.GATHER, "ompi", "basic_linear",
          "every rank sends its block to the root, which receives them in rank order", id=1,
          scales=whole_blocks)
def gather_basic_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_gather_intra_basic_linear`` (coll_base_gather.c): one phase of P-1 sends to the root,
    which takes them with blocking receives from rank 0, 1, ..., P-1 in turn (straight into its buffer)."""
    peers = _others(case)
    rec.phase("send to root", SendMode.SEQUENCE)
    rec.receive_in_order(rec.sends(peers, np.full(len(peers), case.root), peers * case.nbytes,
                                   (peers + 1) * case.nbytes))


@register(Collective.GATHER, "ompi", "binomial",
          "in-order binomial tree: each subtree root collects its subtree's blocks and sends them up",
          id=2, scales=whole_blocks)
def gather_binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_gather_intra_binomial`` (coll_base_gather.c), the mirror image of the binomial scatter.

    A non-leaf receives from its children smallest subtree first (a
    blocking receive per child, in that order), then
    sends all it holds, ``[v, min(v + lowbit(v), P))``, to its parent: in
    the phase of ``mask`` (1, 2, 4, ...) every odd multiple of ``mask``
    sends ``min(mask, P - v)`` blocks to ``v - mask``.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0:
        return
    ids = []
    for mask in reversed(_masks_down(p)):
        v = np.arange(mask, p, 2 * mask, dtype=np.int64)
        rec.phase(f"mask {mask}", SendMode.SEQUENCE)
        ids.append(send_block_runs(rec, (v + case.root) % p, (v - mask + case.root) % p, v + case.root,
                                   np.minimum(mask, p - v)))
    rec.receive_in_order(np.concatenate(ids))  # per parent: its children in mask order


def first_segment(nbytes: int, segsize: int) -> int:
    """The first segment of linear_sync: ``segsize`` if ``1 <= segsize < n``, else the whole block.

    ``COLL_BASE_COMPUTED_SEGCOUNT`` (coll_base_functions.h) with one-byte elements.
    """
    return segsize if 1 <= segsize < nbytes else nbytes


def _linear_sync_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """linear_sync sends whole blocks (the second segment empty) when the first segment is the whole block
    (``segsize`` 0, or at least n): the 1-byte schedule scaled. A first segment of ``segsize`` bytes does not
    grow with n, so a segmented block has no unit."""
    segsize = params.get("segsize", 0)
    return 1 if segsize <= 0 or nbytes <= segsize else None


@register(Collective.GATHER, "ompi", "linear_sync",
          "the root asks each rank in turn (0-byte message); it answers with a first segment, then the rest",
          params=(Param("segsize", 0, "coll_tuned_gather_algorithm_segmentsize: the first segment's bytes "
                                      "(0: the whole block, the second segment empty)"),), id=3,
          scales=_linear_sync_unit)
def gather_linear_sync(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_gather_intra_linear_sync`` (coll_base_gather.c).

    For each other rank i in rank order the root sends a zero-byte "go"
    message and waits for i's first segment; i then sends the rest of its
    block (Open MPI sends it even when empty), which overlaps the root's
    handling of the next rank. Phases: "go" to i; i's first segment
    together with the previous rank's second; the last rank's second.
    """
    p, n = case.nprocs, case.nbytes
    if n == 0 or p == 1:
        return
    head = first_segment(n, params["segsize"])
    previous: int | None = None
    for i in _others(case).tolist():
        rec.phase(f"go {i}", SendMode.SEQUENCE)
        rec.send(case.root, i, ())
        rec.phase(f"first segment {i}", SendMode.SEQUENCE)
        rec.send(i, case.root, (i * n, i * n + head))
        if previous is not None:
            rec.send(previous, case.root, (previous * n + head, (previous + 1) * n))
        previous = i
    rec.phase(f"second segment {previous}", SendMode.SEQUENCE)
    rec.send(previous, case.root, (previous * n + head, (previous + 1) * n))
