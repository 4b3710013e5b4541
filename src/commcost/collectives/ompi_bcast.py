"""Open MPI 5's MPI_Bcast algorithms (coll/tuned ids 1-9) as schedules.

Each builder reproduces a function of ``ompi/mca/coll/base/coll_base_bcast.c``
(Open MPI v5.0.x) as ``coll_tuned_bcast_algorithm`` = id selects it in
``ompi_coll_tuned_bcast_intra_do_this`` (``coll_tuned_bcast_decision.c``):

== ====================== ==================================================
1  basic_linear           ``ompi_coll_base_bcast_intra_basic_linear``
2  chain                  ``ompi_coll_base_bcast_intra_chain``
3  pipeline               ``ompi_coll_base_bcast_intra_pipeline``
4  split_binary_tree      ``ompi_coll_base_bcast_intra_split_bintree``
5  binary_tree            ``ompi_coll_base_bcast_intra_bintree``
6  binomial               ``ompi_coll_base_bcast_intra_binomial``
7  knomial                ``ompi_coll_base_bcast_intra_knomial``
8  scatter_allgather      ``ompi_coll_base_bcast_intra_scatter_allgather``
9  scatter_allgather_ring ``ompi_coll_base_bcast_intra_scatter_allgather_ring``
== ====================== ==================================================

Parameters, as the tuned module passes them to a forced algorithm
(``coll_tuned_decision_dynamic.c``, ``coll_tuned_module.c``): ``segsize`` is
``coll_tuned_bcast_algorithm_segmentsize`` (bytes, default 0 = no
segmentation), ``fanout`` is ``coll_tuned_bcast_algorithm_chain_fanout``
(default 4; only chain uses it - ``tree_fanout`` reaches no bcast
function, binary_tree is always fanout 2), ``radix`` is
``coll_tuned_bcast_algorithm_knomial_radix`` (default 4). basic_linear and
the two scatter-allgather functions take no segment size (8 and 9 accept one
and ignore it), so they have no parameter here.

Trees are built on virtual ranks ``(rank - root + P) % P`` (:mod:`.trees`)
and mapped back. A segment is ``segsize`` bytes (``COLL_BASE_COMPUTED_SEGCOUNT``
with one-byte elements: segmentation only when ``1 <= segsize < nbytes``),
the last one short (:func:`.segments.segment_bounds`).

Every algorithm is a *dependency schedule* (:mod:`commcost.schedule.schedule`):
no barrier between phases, which only label steps; a send starts when
what it waits for in Open MPI's code has completed (:mod:`.waits`). A
rank can only wait for its own operations: a reception (receive before
forward) or its own earlier sends.

* Tree pipelines (``ompi_coll_base_bcast_intra_generic``: chain, pipeline,
  binary_tree, binomial, knomial; :func:`tree_pipeline`): the root, for
  each segment s, isends s to all its children (``tree_next`` order) and
  waits for all of them; an inner node waits for its receive of s, isends
  s to all its children, and waits for them before forwarding s + 1. So
  the send of s on edge v -> c waits for the reception of s by v and for
  every send of s - 1 by v.
* split_binary_tree: blocking sends throughout; a send waits for its
  sender's previous send (the root alternates halves segment by segment)
  and, at an inner node, for its reception of that segment; an exchange
  send (sendrecv of the halves) waits for its sender's last send and its
  reception of the last segment of its half.
* basic_linear: the root's isends wait for nothing (one Waitall at the end).
* scatter_allgather, scatter_allgather_ring: blocking steps (recv, send,
  sendrecv); a send waits for its sender's previous send and the
  receptions it completed since: in the binomial scatter a rank forwards
  its subtree's blocks after receiving them; a recursive-doubling or
  halving send after the receptions that brought what it forwards; ring
  step i + 1's send after the rank's send and reception of step i.

What the schedule does not say: when receives are posted (the generic
pipeline keeps two pre-posted, split_bintree one), and so any flow
control of a rendezvous protocol, which makes a *sender* wait for its
receiver: a rank can only wait for its own operations. Eager or
rendezvous, and how a rank's posted sends share its link, are the model's
business. Each schedule scaled by a factor is still exact (``scales``),
and the pipelines keep ``pipelined`` (their one-segment schedule gives
the tree).
A broadcast recorded after another collective (the composites allreduce
basic_linear and nonoverlapping, allgather linear) keeps its waits, and
each of its sends also waits for its sender's operations in that
collective (:meth:`.recorder.Recorder.next_collective`).

A zero-byte or one-rank call has an empty schedule: ``MPI_Bcast``
(``ompi/mpi/c/bcast.c``) returns before reaching coll/tuned; ``registry.build``
skips the builder for such calls, once for every algorithm.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import CHAINED, SEGMENTS, Segmented, register
from commcost.collectives.segments import reserved_segment_bounds, segment_bounds
from commcost.collectives.trees import (
    MAXTREEFANOUT, Tree, build_bmtree, build_chain, build_kmtree, build_tree, to_ranks,
)
from commcost.collectives.waits import EMPTY, BlockingSteps, Waits, pipeline_waits, ring_waits
from commcost.schedule.schedule import SendMode

SEGSIZE = Param("segsize", 0, "segment size in bytes (coll_tuned_bcast_algorithm_segmentsize); 0: no segmentation")
CHAIN_FANOUT = Param("fanout", 4, "number of chains the root feeds (coll_tuned_bcast_algorithm_chain_fanout; "
                                  f"more than {MAXTREEFANOUT} acts as {MAXTREEFANOUT})", minimum=1)


def _unsegmented(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """A tree sends the whole message down every edge when it is one segment (no segmentation, or
    ``n <= segsize``): the 1-byte schedule scaled."""
    segsize = params.get("segsize", 0)
    return 1 if segsize <= 0 or nbytes <= segsize else None


def _split_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """split_binary_tree: the pipeline fallback of a one-segment message scales from 1 byte; unsegmented
    halves of an even message scale from 2 bytes (halves of one byte)."""
    segsize = params.get("segsize", 0)
    if nbytes <= max(segsize, 1):  # segsize > floor(n/2): the unsegmented pipeline
        return 1
    return 2 if segsize <= 0 and nbytes % 2 == 0 else None


def _block_unit(params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
    """Scatter-allgather: basic_linear (from 1 byte) when n < P; P equal blocks (from P bytes) when P divides n."""
    if nbytes < nprocs:
        return 1
    return nprocs if nbytes % nprocs == 0 else None


RADIX = Param("radix", 4, "k-nomial tree radix (coll_tuned_bcast_algorithm_knomial_radix)", minimum=2)


# ------------------------------------------------------------------------------------- tree pipelines

class Pipeline(NamedTuple):
    """What :func:`tree_pipeline` recorded: ``ids`` edge-major (edge e's segments ``0 .. nseg[e] - 1``),
    and the edges ``src[e] -> dst[e]`` on virtual ranks."""

    ids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    nseg: np.ndarray

    def last_ops(self, nprocs: int) -> tuple[np.ndarray, np.ndarray]:
        """Per virtual rank: the id of its reception of its last segment, and of its last send (-1: none)."""
        first = np.cumsum(self.nseg) - self.nseg
        last_recv = np.full(nprocs, -1, np.int64)
        last_recv[self.dst] = self.ids[first + self.nseg - 1]
        last_send = np.full(nprocs, -1, np.int64)
        np.maximum.at(last_send, np.repeat(self.src, self.nseg), self.ids)
        return last_recv, last_send


def tree_pipeline(rec: Recorder, case: Case, tree: Tree, bounds: Sequence[np.ndarray],
                  part_of: np.ndarray | None = None, mode: SendMode = SendMode.POSTED,
                  label: str = "segment", waits: Waits | None = None, sends: str | None = None) -> Pipeline:
    """Send segmented data down ``tree`` (virtual ranks, root 0) as a pipeline, with its real waits.

    ``bounds[k]`` are the segment boundaries (:func:`.segments.segment_bounds`)
    of the k-th part of the message; virtual rank v receives (and forwards)
    part ``part_of[v]`` (part 0 everywhere when None; split_binary_tree sends
    one half down each subtree). Segment k of an edge from a rank at depth
    d is labelled phase ``d + k`` ("step"); every rank sends to its children
    in Open MPI's child order.

    What a send waits for (:func:`.waits.pipeline_waits`): the sender's
    reception of the same segment, and, with ``mode`` POSTED
    (``ompi_coll_base_bcast_intra_generic``: isend segment k to every child,
    then Waitall), all of the sender's sends of segment k - 1; with
    SEQUENCE (split_bintree's blocking sends), the sender's previous send;
    ``sends`` (``"none"``, ``"window"``, ``"sequence"``) overrides what the
    mode implies (coll/sm: a parent never waits for its children's copies).
    """
    waits = waits or Waits(rec)
    if tree.nprocs < 2:
        return Pipeline(EMPTY, EMPTY, EMPTY, EMPTY)
    src, dst, _ = tree.by_depth()
    part = np.zeros(len(src), np.int64) if part_of is None else part_of[dst]
    nseg = np.array([len(b) - 1 for b in bounds], dtype=np.int64)[part]
    depth = tree.depth[src]
    # every edge carries its part's segments 0..nseg-1; edge-major, so a phase keeps the child order
    edge = np.repeat(np.arange(len(src)), nseg)
    seg = np.arange(len(edge)) - np.repeat(np.cumsum(nseg) - nseg, nseg)
    step = depth[edge] + seg
    offsets = np.concatenate(bounds)
    first = np.cumsum([0] + [len(b) for b in bounds])[:-1][part[edge]]
    ids = rec.staged_sends(step, to_ranks(src, case.root, case.nprocs)[edge],
                           to_ranks(dst, case.root, case.nprocs)[edge], offsets[first + seg],
                           offsets[first + seg + 1], label, mode)
    pipeline_waits(waits, ids, src, dst, nseg, sends or ("window" if mode is SendMode.POSTED else "sequence"))
    return Pipeline(ids, src, dst, nseg)


def _generic(rec: Recorder, case: Case, tree: Tree, segsize: int) -> None:
    """``ompi_coll_base_bcast_intra_generic`` over ``tree`` with ``COLL_BASE_COMPUTED_SEGCOUNT`` segments."""
    tree_pipeline(rec, case, tree, [reserved_segment_bounds(rec, case.nbytes, segsize, case.nprocs - 1)])


@register(Collective.BCAST, "ompi", "chain", "root feeds `fanout` pipelined chains (build_chain)",
          params=(SEGSIZE, CHAIN_FANOUT), id=2, scales=_unsegmented, pipelined=True,
          segmented=SEGMENTS)
def chain(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_chain``: the generic pipeline over ``build_chain(fanout)``."""
    _generic(rec, case, build_chain(params["fanout"], case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "pipeline", "one pipelined chain through all ranks (build_chain, fanout 1)",
          params=(SEGSIZE,), id=3, scales=_unsegmented, pipelined=True,
          segmented=CHAINED)
def pipeline(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_pipeline``: the generic pipeline over ``build_chain(1)``."""
    _generic(rec, case, build_chain(1, case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "binary_tree", "pipelined binary tree (build_tree, fanout 2)",
          params=(SEGSIZE,), id=5, scales=_unsegmented, pipelined=True,
          segmented=SEGMENTS)
def binary_tree(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_bintree``: the generic pipeline over ``build_tree(2)``."""
    _generic(rec, case, build_tree(2, case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "binomial", "pipelined binomial tree (build_bmtree)",
          params=(SEGSIZE,), id=6, scales=_unsegmented, pipelined=True,
          segmented=SEGMENTS)
def binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_binomial``: the generic pipeline over ``build_bmtree``."""
    _generic(rec, case, build_bmtree(case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "knomial", "pipelined k-nomial tree of radix `radix` (build_kmtree)",
          params=(SEGSIZE, RADIX), id=7, scales=_unsegmented, pipelined=True,
          segmented=SEGMENTS)
def knomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_knomial``: the generic pipeline over ``build_kmtree(radix)``."""
    _generic(rec, case, build_kmtree(params["radix"], case.nprocs), params["segsize"])


# ----------------------------------------------------------------------------------------- basic linear

@register(Collective.BCAST, "ompi", "basic_linear", "root isends the message to every rank at once",
          id=1, scales=lambda params, nprocs, nbytes: 1)
def basic_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_basic_linear``: root isends to ranks 0..P-1 (not itself) in order, then
    waits for them all; a dependency schedule in which no send waits for anything."""
    Waits(rec)
    _linear(rec, case)


def _linear(rec: Recorder, case: Case) -> None:
    """The root's isends to every other rank, in increasing real rank (not shifted by the root)."""
    others = np.arange(case.nprocs, dtype=np.int64)
    others = others[others != case.root]
    rec.phase("linear", SendMode.POSTED)
    rec.sends(np.full(len(others), case.root), others, 0, case.nbytes)


# ------------------------------------------------------------------------------------ split binary tree

@register(Collective.BCAST, "ompi", "split_binary_tree",
          "each half down one subtree of a binary tree, then pairs swap halves", params=(SEGSIZE,), id=4,
          scales=_split_unit, segmented=Segmented(parts=2, part_phases=("split exchange",)))
def split_binary_tree(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_split_bintree`` (coll_base_bcast.c).

    The message splits into halves ``[0, ceil(n/2))`` and the rest. On the
    binary tree ``build_tree(2)`` the root's left child (virtual rank 1)
    heads the odd virtual ranks, its right child (2) the even ones; the
    root sends the first half down the left subtree and the second down the
    right, each cut into ``segsize`` segments, alternating left and right
    segment by segment with blocking sends (``MCA_PML_CALL(send)``), and
    inner nodes forward each segment of their half, once it arrived, to
    their children with blocking sends: a send waits for its sender's
    previous send and for the sender's reception of that segment. Then
    virtual ranks 2i-1 and 2i swap halves (sendrecv); for even P the root
    sends the second half to virtual rank P-1, which has no partner. An
    exchange send waits for its sender's last tree send and its reception
    of the last segment of its half (the earlier ones arrived before it, in
    the parent's sequence of sends); its receiver takes it after that
    reception of its own (the sendrecv's receive is posted then: a partner
    done first does not hold up the segments still coming down its tree). When a half is empty or shorter than
    ``segsize`` (``n <= 1``, or ``segsize > floor(n/2)``), Open MPI falls
    back to ``ompi_coll_base_bcast_intra_chain(segsize, 1)``: the pipeline.
    """
    n, p, segsize = case.nbytes, case.nprocs, params["segsize"]
    half = (n + 1) // 2
    counts = (half, n - half)
    if counts[1] == 0 or segsize > counts[1]:
        _generic(rec, case, build_chain(1, p), segsize)
        return
    waits = Waits(rec)
    bounds = [segment_bounds(counts[0], segsize), half + reserved_segment_bounds(rec, counts[1], segsize, p - 1)]
    # odd virtual ranks form the left subtree (first half), even ones the right (second half)
    part_of = 1 - np.arange(p, dtype=np.int64) % 2
    pipe = tree_pipeline(rec, case, build_tree(2, p), bounds, part_of, SendMode.SEQUENCE,
                         label="split segment", waits=waits)
    _split_exchange(rec, case, half, waits, pipe)


def _split_exchange(rec: Recorder, case: Case, half: int, waits: Waits, pipe: Pipeline) -> None:
    """Step 2 of split_bintree: virtual ranks 2i-1 and 2i swap halves; for even P the root feeds P-1.

    Each exchange send waits for its sender's last send and last reception of step 1."""
    p, n = case.nprocs, case.nbytes
    last = p - 1 if p % 2 else p - 2  # virtual ranks 1..last pair up
    v = np.arange(1, last + 1, dtype=np.int64)
    left = v % 2 == 1
    pair = np.where(left, v + 1, v - 1)
    start = np.where(left, 0, half)
    stop = np.where(left, half, n)
    src, dst = v, pair
    if p % 2 == 0:
        src = np.append(src, 0)
        dst = np.append(dst, p - 1)
        start = np.append(start, half)
        stop = np.append(stop, n)
    rec.phase("split exchange", SendMode.SEQUENCE)
    ids = rec.sends(to_ranks(src, case.root, p), to_ranks(dst, case.root, p), start, stop)
    last_recv, last_send = pipe.last_ops(p)
    waits(ids, last_recv[src])
    waits(ids, last_send[src])
    # sendrecv posts its receive after the rank's part of the tree: the other half is taken after its own
    rec.receive_in_order(np.concatenate([last_recv[dst], ids]))


# ------------------------------------------------------------------------------------ scatter-allgather

def _scatter(rec: Recorder, case: Case, block: int, steps: BlockingSteps) -> None:
    """The binomial scatter of ids 8 and 9: block v (``block`` bytes, clipped to n) ends on virtual rank v.

    Virtual rank v receives its subtree's blocks from ``v - lowbit(v)``,
    then sends to ``v + m`` for ``m = lowbit(v)/2, ..., 1`` (the root: the
    largest power of two below P first) the blocks ``[v + m, v + 2m)``,
    skipping a child with no bytes; blocking sends, so each waits for the
    rank's reception, then for its previous send (``steps``). Phase k
    holds the sends with ``m = 2**(L-1-k)``, ``L = ceil(log2 P)``.
    """
    p, n = case.nprocs, case.nbytes
    curr = np.zeros(p, dtype=np.int64)  # bytes each virtual rank holds from v * block on
    curr[0] = n
    mask = 1 << (p - 1).bit_length() - 1 if p > 1 else 0
    while mask > 0:
        v = np.arange(0, p - mask, 2 * mask, dtype=np.int64)
        count = curr[v] - block * mask
        send = count > 0
        v, count = v[send], count[send]
        child = v + mask
        curr[v] -= count
        curr[child] = count
        rec.phase(f"scatter mask {mask}", SendMode.SEQUENCE)
        steps.step(rec, v, child, child * block, child * block + count, _real(case))
        mask >>= 1


def _real(case: Case):
    """Virtual ranks to real ranks for ``case``."""
    return lambda v: to_ranks(v, case.root, case.nprocs)


def _block(n: int, block: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte range of block b: ``[b * block, min(n, (b + 1) * block))``, empty past the end."""
    start = np.minimum(b * block, n)
    return start, np.minimum((b + 1) * block, n)


def _scatter_or_linear(rec: Recorder, case: Case) -> tuple[int, int, int, np.ndarray, BlockingSteps] | None:
    """The first half of ids 8 and 9: basic_linear when n < P (and None), else the binomial scatter of
    ``ceil(n/P)``-byte blocks, returning (P, n, block size, virtual ranks, the ranks' progress) for the
    allgather that follows."""
    p, n = case.nprocs, case.nbytes
    waits = Waits(rec)
    if n < p:
        _linear(rec, case)
        return None
    sc = -(-n // p)
    steps = BlockingSteps(waits, p)
    _scatter(rec, case, sc, steps)
    return p, n, sc, np.arange(p, dtype=np.int64), steps


@register(Collective.BCAST, "ompi", "scatter_allgather",
          "binomial scatter, then recursive-doubling allgather (linear when n < P)", id=8, scales=_block_unit)
def scatter_allgather(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_scatter_allgather`` (coll_base_bcast.c).

    Falls back to basic_linear when ``n < P``. Otherwise blocks of
    ``ceil(n/P)`` bytes are scattered by :func:`_scatter`, then gathered by
    recursive doubling: at mask m virtual rank v swaps everything it holds
    of its aligned group of m ranks with ``v ^ m`` (sendrecv, zero bytes
    included). For non-power-of-two P, when the partner group is cut short
    by P, the ranks of the lower group that got the partner group's data
    pass it on by recursive halving (masks m/2, ..., 1, blocking send and
    recv) to those of their group that had no partner. Every step is
    blocking, so a send waits for its sender's previous send and the
    receptions it completed since (:class:`.waits.BlockingSteps`): the
    scatter's, the previous exchange's and the halving steps'.
    """
    scattered = _scatter_or_linear(rec, case)
    if scattered is None:
        return
    p, n, sc, v, steps = scattered
    curr = np.minimum(sc, np.maximum(n - v * sc, 0))
    recv = np.where(v == 0, 0, n - v * sc)  # the C variable recv_count, stale values included
    mask = 1
    while mask < p:
        _doubling_step(rec, case, sc, curr, recv, mask, steps)
        _halving_steps(rec, case, sc, curr, recv, mask, steps)
        mask <<= 1


def _doubling_step(rec: Recorder, case: Case, sc: int, curr: np.ndarray, recv: np.ndarray, mask: int,
                   steps: BlockingSteps) -> None:
    """One recursive-doubling sendrecv: v sends ``curr[v]`` bytes from its group root's block to ``v ^ mask``."""
    p = case.nprocs
    v = np.arange(p, dtype=np.int64)
    remote = v ^ mask
    v, remote = v[remote < p], remote[remote < p]
    start = (v // mask * mask) * sc
    count = curr[v].copy()
    recv[remote] = count
    curr[remote] += count
    rec.phase(f"allgather mask {mask}", SendMode.POSTED)
    steps.step(rec, v, remote, start, start + count, _real(case))


def _halving_steps(rec: Recorder, case: Case, sc: int, curr: np.ndarray, recv: np.ndarray, mask: int,
                   steps: BlockingSteps) -> None:
    """The non-power-of-two fix-up after the doubling step ``mask``, as Open MPI writes its conditions."""
    p = case.nprocs
    v = np.arange(p, dtype=np.int64)
    group = v // mask * mask
    cut = ((v ^ mask) // mask * mask) + mask > p  # the partner group runs past P
    alldata = p - group - mask
    offset = sc * (group + mask)
    rh = mask >> 1
    while rh > 0:
        remote = v ^ rh
        root = v // (2 * rh) * (2 * rh)
        send = cut & (remote > v) & (v < root + alldata) & (remote >= root + alldata) & (remote < p)
        s, d = v[send], remote[send]
        count = recv[s].copy()
        recv[d] = count
        curr[d] += count
        if len(s):
            rec.phase(f"allgather mask {mask} halving {rh}", SendMode.SEQUENCE)
            steps.step(rec, s, d, offset[s], offset[s] + count, _real(case))
        rh >>= 1


@register(Collective.BCAST, "ompi", "scatter_allgather_ring",
          "binomial scatter, then ring allgather (linear when n < P)", id=9, scales=_block_unit)
def scatter_allgather_ring(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_scatter_allgather_ring`` (coll_base_bcast.c).

    Falls back to basic_linear when ``n < P``. Otherwise the binomial
    scatter of :func:`_scatter` (blocks of ``ceil(n/P)`` bytes), then P - 1
    ring steps: in step i virtual rank v sends block ``v - i + 1`` (mod P)
    to ``v + 1`` (sendrecv; an empty block past the end still goes, as a
    zero-byte message). Step 1's send waits for the rank's scatter
    operations; step i + 1's send waits for the rank's send of step i and
    its reception of step i (the block it forwards). P (P - 1) transmissions,
    one batch.
    """
    scattered = _scatter_or_linear(rec, case)
    if scattered is None:
        return
    p, n, sc, v, steps = scattered
    rec.reserve(p * (p - 1), "a ring of P - 1 steps")  # before its arrays: P (P - 1) long
    step = np.repeat(np.arange(1, p, dtype=np.int64), p)
    sender = np.tile(v, p - 1)
    start, stop = _block(n, sc, (sender - step + 1) % p)
    ids = rec.staged_sends(step, to_ranks(sender, case.root, p), to_ranks(sender + 1, case.root, p),
                           start, stop, "ring", SendMode.POSTED)
    ring_waits(steps, ids.reshape(p - 1, p), v)

