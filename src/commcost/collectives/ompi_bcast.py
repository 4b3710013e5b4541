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

The segmented tree pipeline (``ompi_coll_base_bcast_intra_generic``, ids
2, 3, 5, 6, 7) in phases. In Open MPI the root, for each segment s in turn,
isends s to all its children (in ``tree_next`` order) and waits for all of
them; an inner node receives s (two receives pre-posted), then isends it to
all its children and waits before forwarding s + 1. Here phase t holds, for
every rank at depth d with ``0 <= t - d < S``, the posted sends of segment
``t - d`` to its children, in Open MPI's child order: ``height + S - 1``
phases. Every dependency of the real code is kept (a rank forwards s + 1
only after its sends of s ended and s + 1 arrived), but the phase barrier
adds ones the code lacks: a rank waits for *every* transmission of the
previous phase, not just its own sends and its parent's. The schedule is
therefore exact for a chain on a uniform network and an upper bound
elsewhere; it is furthest off where fan-outs differ within a level, as in
the binomial tree, whose root posts ``log2 P`` sends while its deepest
children post one, and every phase lasts as long as its busiest sender.
The same barrier holds between the steps of split_binary_tree and of the
scatter-allgather algorithms (whose ranks idle during the recursive-halving
fix-up steps of a non-power-of-two allgather). Protocols (eager or
rendezvous), receive posting and flow control are the model's business,
not the schedule's.

A zero-byte or one-rank call has an empty schedule: ``MPI_Bcast``
(``ompi/mpi/c/bcast.c``) returns before reaching coll/tuned; ``registry.build``
skips the builder for such calls, once for every algorithm.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import register
from commcost.collectives.segments import segment_bounds
from commcost.collectives.trees import (
    MAXTREEFANOUT, Tree, build_bmtree, build_chain, build_kmtree, build_tree, to_ranks,
)
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

def tree_pipeline(rec: Recorder, case: Case, tree: Tree, bounds: Sequence[np.ndarray],
                  part_of: np.ndarray | None = None, mode: SendMode = SendMode.POSTED,
                  label: str = "segment") -> None:
    """Send segmented data down ``tree`` (virtual ranks, root 0) as a pipeline, one phase per step.

    ``bounds[k]`` are the segment boundaries (:func:`.segments.segment_bounds`)
    of the k-th part of the message; virtual rank v receives (and forwards)
    part ``part_of[v]`` (part 0 everywhere when None; split_binary_tree sends
    one half down each subtree). In phase t every rank at depth d sends its
    part's segment ``t - d``, if it has one, to its children in Open MPI's
    child order.
    This is ``ompi_coll_base_bcast_intra_generic`` (coll_base_bcast.c) in
    phases; see the module docstring for what the phase barrier adds.

    Once every sending depth is busy and before any edge sends the last
    (possibly short) segment, the steps repeat the same transmissions
    (each edge a full segment); unless payloads are kept, those steady
    steps are stored once as a repeated phase, so a pipeline of S segments
    over a tree of height H is stored in about 2H phases, not H + S - 1.
    """
    if tree.nprocs < 2:
        return
    src, dst, _ = tree.by_depth()
    part = np.zeros(len(src), np.int64) if part_of is None else part_of[dst]
    nseg = np.array([len(b) - 1 for b in bounds], dtype=np.int64)[part]
    depth = tree.depth[src]
    height = int(depth.max()) + 1  # depths that send
    full = np.array([np.all(np.diff(b) == b[1] - b[0]) for b in bounds])[part]  # last segment full too
    # steps height-1 .. height-2+steady: every depth sends, and a full segment (a short last one excluded)
    steady = int(nseg.min()) - height + (1 if np.all(full) else 0)
    repeat: dict[int, int] = {}
    if rec.compact and steady >= 2:
        # steps height-1 .. height-2+steady are the same transmissions: keep the first, run it `steady` times
        lo = height - 1 - depth  # last segment before the steady run, per edge
        hi = lo + steady  # first segment after it
        kept = (lo + 1) + (nseg - hi)
        edge = np.repeat(np.arange(len(src)), kept)
        k = np.arange(len(edge)) - np.repeat(np.cumsum(kept) - kept, kept)
        seg = np.where(k <= lo[edge], k, k - (lo[edge] + 1) + hi[edge])
        step = depth[edge] + seg
        step = np.where(step > height - 1, step - (steady - 1), step)
        repeat = {height - 1: steady}
    else:
        # every edge carries its part's segments 0..nseg-1; edge-major, so a phase keeps the child order
        edge = np.repeat(np.arange(len(src)), nseg)
        seg = np.arange(len(edge)) - np.repeat(np.cumsum(nseg) - nseg, nseg)
        step = depth[edge] + seg
    offsets = np.concatenate(bounds)
    first = np.cumsum([0] + [len(b) for b in bounds])[:-1][part[edge]]
    rec.staged_sends(step, to_ranks(src, case.root, case.nprocs)[edge],
                     to_ranks(dst, case.root, case.nprocs)[edge], offsets[first + seg], offsets[first + seg + 1],
                     label, mode, repeat)


def _generic(rec: Recorder, case: Case, tree: Tree, segsize: int) -> None:
    """``ompi_coll_base_bcast_intra_generic`` over ``tree`` with ``COLL_BASE_COMPUTED_SEGCOUNT`` segments."""
    tree_pipeline(rec, case, tree, [segment_bounds(case.nbytes, segsize)])


@register(Collective.BCAST, "ompi", "chain", "root feeds `fanout` pipelined chains (build_chain)",
          params=(SEGSIZE, CHAIN_FANOUT), id=2, scales=_unsegmented, pipelined=True)
def chain(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_chain``: the generic pipeline over ``build_chain(fanout)``."""
    _generic(rec, case, build_chain(params["fanout"], case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "pipeline", "one pipelined chain through all ranks (build_chain, fanout 1)",
          params=(SEGSIZE,), id=3, scales=_unsegmented, pipelined=True)
def pipeline(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_pipeline``: the generic pipeline over ``build_chain(1)``."""
    _generic(rec, case, build_chain(1, case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "binary_tree", "pipelined binary tree (build_tree, fanout 2)",
          params=(SEGSIZE,), id=5, scales=_unsegmented, pipelined=True)
def binary_tree(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_bintree``: the generic pipeline over ``build_tree(2)``."""
    _generic(rec, case, build_tree(2, case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "binomial", "pipelined binomial tree (build_bmtree)",
          params=(SEGSIZE,), id=6, scales=_unsegmented, pipelined=True)
def binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_binomial``: the generic pipeline over ``build_bmtree``."""
    _generic(rec, case, build_bmtree(case.nprocs), params["segsize"])


@register(Collective.BCAST, "ompi", "knomial", "pipelined k-nomial tree of radix `radix` (build_kmtree)",
          params=(SEGSIZE, RADIX), id=7, scales=_unsegmented, pipelined=True)
def knomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_knomial``: the generic pipeline over ``build_kmtree(radix)``."""
    _generic(rec, case, build_kmtree(params["radix"], case.nprocs), params["segsize"])


# ----------------------------------------------------------------------------------------- basic linear

@register(Collective.BCAST, "ompi", "basic_linear", "root isends the message to every rank at once",
          id=1, scales=lambda params, nprocs, nbytes: 1)
def basic_linear(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_basic_linear``: root isends to ranks 0..P-1 (not itself) in order, then waits."""
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
          scales=_split_unit)
def split_binary_tree(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_split_bintree`` (coll_base_bcast.c).

    The message splits into halves ``[0, ceil(n/2))`` and the rest. On the
    binary tree ``build_tree(2)`` the root's left child (virtual rank 1)
    heads the odd virtual ranks, its right child (2) the even ones; the
    root sends the first half down the left subtree and the second down the
    right, each cut into ``segsize`` segments, alternating left and right
    segment by segment with blocking sends (a sequence), and inner nodes
    forward their half with blocking sends. Then virtual ranks 2i-1 and 2i
    swap halves (sendrecv); for even P the root sends the second half to
    virtual rank P-1, which has no partner. When a half is empty or shorter
    than ``segsize`` (``n <= 1``, or ``segsize > floor(n/2)``), Open MPI
    falls back to ``ompi_coll_base_bcast_intra_chain(segsize, 1)``: the pipeline.
    """
    n, p, segsize = case.nbytes, case.nprocs, params["segsize"]
    half = (n + 1) // 2
    counts = (half, n - half)
    if counts[1] == 0 or segsize > counts[1]:
        _generic(rec, case, build_chain(1, p), segsize)
        return
    bounds = [segment_bounds(counts[0], segsize), half + segment_bounds(counts[1], segsize)]
    # odd virtual ranks form the left subtree (first half), even ones the right (second half)
    part_of = 1 - np.arange(p, dtype=np.int64) % 2
    tree_pipeline(rec, case, build_tree(2, p), bounds, part_of, SendMode.SEQUENCE, label="split segment")
    _split_exchange(rec, case, half)


def _split_exchange(rec: Recorder, case: Case, half: int) -> None:
    """Step 2 of split_bintree: virtual ranks 2i-1 and 2i swap halves; for even P the root feeds P-1."""
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
    rec.sends(to_ranks(src, case.root, p), to_ranks(dst, case.root, p), start, stop)


# ------------------------------------------------------------------------------------ scatter-allgather

def _scatter(rec: Recorder, case: Case, block: int) -> None:
    """The binomial scatter of ids 8 and 9: block v (``block`` bytes, clipped to n) ends on virtual rank v.

    Virtual rank v receives its subtree's blocks from ``v - lowbit(v)``,
    then sends to ``v + m`` for ``m = lowbit(v)/2, ..., 1`` (the root: the
    largest power of two below P first) the blocks ``[v + m, v + 2m)``,
    skipping a child with no bytes; blocking sends. Phase k holds the sends
    with ``m = 2**(L-1-k)``, ``L = ceil(log2 P)``.
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
        rec.sends(to_ranks(v, case.root, p), to_ranks(child, case.root, p), child * block, child * block + count)
        mask >>= 1


def _block(n: int, block: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte range of block b: ``[b * block, min(n, (b + 1) * block))``, empty past the end."""
    start = np.minimum(b * block, n)
    return start, np.minimum((b + 1) * block, n)


def _scatter_or_linear(rec: Recorder, case: Case) -> tuple[int, int, int, np.ndarray] | None:
    """The first half of ids 8 and 9: basic_linear when n < P (and None), else the binomial scatter of
    ``ceil(n/P)``-byte blocks, returning (P, n, block size, virtual ranks) for the allgather that follows."""
    p, n = case.nprocs, case.nbytes
    if n < p:
        _linear(rec, case)
        return None
    sc = -(-n // p)
    _scatter(rec, case, sc)
    return p, n, sc, np.arange(p, dtype=np.int64)


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
    pass it on by recursive halving (masks m/2, ..., 1) to those of their
    group that had no partner, each step a phase.
    """
    scattered = _scatter_or_linear(rec, case)
    if scattered is None:
        return
    p, n, sc, v = scattered
    curr = np.minimum(sc, np.maximum(n - v * sc, 0))
    recv = np.where(v == 0, 0, n - v * sc)  # the C variable recv_count, stale values included
    mask = 1
    while mask < p:
        _doubling_step(rec, case, sc, curr, recv, mask)
        _halving_steps(rec, case, sc, curr, recv, mask)
        mask <<= 1


def _doubling_step(rec: Recorder, case: Case, sc: int, curr: np.ndarray, recv: np.ndarray, mask: int) -> None:
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
    rec.sends(to_ranks(v, case.root, p), to_ranks(remote, case.root, p), start, start + count)


def _halving_steps(rec: Recorder, case: Case, sc: int, curr: np.ndarray, recv: np.ndarray, mask: int) -> None:
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
            rec.sends(to_ranks(s, case.root, p), to_ranks(d, case.root, p), offset[s], offset[s] + count)
        rh >>= 1


@register(Collective.BCAST, "ompi", "scatter_allgather_ring",
          "binomial scatter, then ring allgather (linear when n < P)", id=9, scales=_block_unit)
def scatter_allgather_ring(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_base_bcast_intra_scatter_allgather_ring`` (coll_base_bcast.c).

    Falls back to basic_linear when ``n < P``. Otherwise the binomial
    scatter of :func:`_scatter` (blocks of ``ceil(n/P)`` bytes), then P - 1
    ring steps: in step i virtual rank v sends block ``v - i + 1`` (mod P)
    to ``v + 1`` (sendrecv; an empty block past the end still goes, as a
    zero-byte message). When P divides n the blocks are equal and, unless
    payloads are kept, the steps are stored once as a phase repeated P - 1 times.
    """
    scattered = _scatter_or_linear(rec, case)
    if scattered is None:
        return
    p, n, sc, v = scattered
    src, dst = to_ranks(v, case.root, p), to_ranks(v + 1, case.root, p)
    if rec.compact and n % p == 0:  # equal blocks: the P - 1 steps are the same transmissions
        start, stop = _block(n, sc, v)
        rec.phase(f"ring steps 1..{p - 1}", SendMode.POSTED, repeat=p - 1)
        rec.sends(src, dst, start, stop)
        return
    for i in range(1, p):
        start, stop = _block(n, sc, (v - i + 1) % p)
        rec.phase(f"ring step {i}", SendMode.POSTED)
        rec.sends(src, dst, start, stop)
