"""What a rank waits for before it sends, as dependency edges (see :mod:`commcost.schedule.schedule`).

The broadcast builders (:mod:`.ompi_bcast`, :mod:`.mpich_bcast`) and the
generic tree reduce (:func:`.reduce.reduce_waits`) record their
transmissions with the :class:`~.recorder.Recorder` and state, with the
helpers here, what each send waits for in the library's code. A rank
can only wait for its own operations, so every edge names a reception of
the sender (receive-before-forward) or an earlier send of it (a blocking
send returned, or a ``Waitall`` over posted sends). Every helper works on
numpy batches: no Python loop per transmission.

* the waits of algorithms recorded as the ranks' programs of steps are
  derived by the recorder (:func:`commcost.schedule.program_order.program_order`);
* :class:`Waits` marks where explicit waits begin (after the stepped part
  of a composite: a reduce or a gather, then a bcast);
* :func:`pipeline_waits`: a segmented tree pipeline; a rank forwards
  segment k after receiving it, and after its earlier sends as the library
  completes them (a Waitall per segment, blocking sends, or one Waitall at
  the end);
* :class:`BlockingSteps`: programs of blocking steps (``Recv``, ``Send``,
  ``Sendrecv``; binomial trees, scatters, recursive doubling, halving): a
  send waits for its sender's previous send and for the receptions the
  sender completed since, which (with what those waited for) are all its
  earlier receptions; :func:`ring_waits` for a ring's steps in one batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from commcost.schedule.program_order import EMPTY, pairs, runs

if TYPE_CHECKING:
    from commcost.collectives.recorder import Recorder


class Waits:
    """Where a builder states what waits for what (``waits(waiter_ids, waited_ids)``, as :meth:`Recorder.wait`).

    From its creation on, the recorder's transmissions take the waits said
    here instead of those of program order; in a composite that recorded
    another collective's steps first, each of them also waits for its
    sender's part of those steps (:func:`commcost.schedule.program_order.program_order`).
    """

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        rec.dependencies()

    def __call__(self, waiter: Any, waited: Any) -> None:
        self.rec.wait(waiter, waited)


def previous_send(sender: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """For each transmission ``ids[i]`` of ``sender[i]``, the id of the same sender's previous one in id
    (program) order; -1 for its first."""
    sender, ids = np.asarray(sender, np.int64), np.asarray(ids, np.int64)
    prev = np.full(len(ids), -1, np.int64)
    if len(ids) < 2:
        return prev
    order = np.lexsort((ids, sender))
    same = sender[order[1:]] == sender[order[:-1]]
    prev[order[1:][same]] = ids[order[:-1][same]]
    return prev


def pipeline_waits(waits: Waits, ids: np.ndarray, src: np.ndarray, dst: np.ndarray, nseg: np.ndarray,
                   sends: str) -> None:
    """The waits of a segmented tree pipeline.

    The tree has edges ``src[e] -> dst[e]`` (tree ranks, each rank the
    destination of at most one edge); edge e carries segments
    ``0 .. nseg[e] - 1`` whose ids are ``ids[first[e] + k]``, edge-major
    (``first`` the running sum of ``nseg``). Segment k of edge e waits for

    * the sender's reception of segment k (``e'`` with ``dst[e'] == src[e]``:
      receive-before-forward), and, as ``sends`` says,
    * ``"window"``: every send of segment k - 1 by the same sender (it isends
      a segment to all its children, then Waitall: Open MPI's generic tree);
    * ``"sequence"``: the sender's previous send in id order (blocking sends);
    * ``"none"``: nothing more (all sends posted, one Waitall at the end).
    """
    if sends not in ("window", "sequence", "none"):
        raise ValueError(f"sends must be window, sequence or none, got {sends!r}")
    ids, src, dst, nseg = (np.asarray(a, np.int64) for a in (ids, src, dst, nseg))
    nedges = len(src)
    if not nedges or not len(ids):
        return
    first = np.cumsum(nseg) - nseg
    edge = np.repeat(np.arange(nedges, dtype=np.int64), nseg)
    seg = np.arange(len(edge), dtype=np.int64) - first[edge]
    size = int(max(src.max(), dst.max())) + 1
    into = np.full(size, -1, np.int64)  # the edge that brings each rank its data
    into[dst] = np.arange(nedges, dtype=np.int64)
    parent_edge = into[src[edge]]
    inner = parent_edge >= 0
    if inner.any():
        f, k = parent_edge[inner], seg[inner]
        if np.any(k >= nseg[f]):
            raise ValueError("a rank forwards a segment it does not receive (its edge carries more segments)")
        waits(ids[inner], ids[first[f] + k])
    if sends == "sequence":
        waits(ids, previous_send(src[edge], ids))
    elif sends == "window":
        later = seg >= 1
        if not later.any():
            return
        sib, start, outdeg = runs(src, src)  # each sender's edges together, in send order
        e_l, k_l, id_l = edge[later], seg[later], ids[later]
        i, at = pairs(np.arange(len(e_l), dtype=np.int64), np.ones(len(e_l), np.int64), start[e_l], outdeg[e_l])
        sibling, k = sib[at], k_l[i] - 1
        has = k < nseg[sibling]  # a sibling whose part has fewer segments sent none of segment k - 1
        waits(id_l[i[has]], ids[first[sibling[has]] + k[has]])


class BlockingSteps:
    """Per-rank progress of a program of blocking steps, to say what each send waits for.

    Every operation completes before the rank's next one starts (``Send``,
    ``Recv``, or ``Sendrecv`` whose two halves run together). Call
    :meth:`sent` for a batch of sends, then :meth:`received` for the same
    batch's receptions; within a batch each rank sends at most once and
    receives at most once. A send waits for its sender's previous send and
    for every reception the sender completed since (its earlier receptions
    are ancestors through that previous send); a ``Sendrecv``'s own
    reception is not among them, since the batch's receptions are noted
    after its sends.
    """

    def __init__(self, waits: Waits, nranks: int) -> None:
        self.waits = waits
        self.nranks = nranks
        self.last_send = np.full(nranks, -1, np.int64)
        self.pending: list[np.ndarray] = []  # receptions since each rank's last send, one per layer (-1: none)

    def sent(self, ranks: np.ndarray, ids: np.ndarray) -> None:
        """Sends ``ids[i]`` by ``ranks[i]`` (ranks distinct): each waits for its rank's previous send and
        for the receptions it completed since."""
        ranks, ids = np.asarray(ranks, np.int64), np.asarray(ids, np.int64)
        if not len(ranks):
            return
        self.waits(ids, self.last_send[ranks])
        for layer in self.pending:
            self.waits(ids, layer[ranks])
            layer[ranks] = -1
        self.last_send[ranks] = ids

    def received(self, ranks: np.ndarray, ids: np.ndarray) -> None:
        """Receptions ``ids[i]`` by ``ranks[i]`` (ranks distinct), completed before each rank's next step."""
        ranks, ids = np.asarray(ranks, np.int64), np.asarray(ids, np.int64)
        todo = np.arange(len(ranks), dtype=np.int64)
        for layer in self.pending:
            if not len(todo):
                return
            free = layer[ranks[todo]] < 0
            layer[ranks[todo[free]]] = ids[todo[free]]
            todo = todo[~free]
        if len(todo):
            layer = np.full(self.nranks, -1, np.int64)
            layer[ranks[todo]] = ids[todo]
            self.pending.append(layer)

    def step(self, rec: Recorder, src: np.ndarray, dst: np.ndarray, start: Any, stop: Any,
             to_ranks: Any = None) -> np.ndarray:
        """Record one batch of blocking sends ``src[i] -> dst[i]`` of ``[start[i], stop[i])`` (tree ranks;
        ``to_ranks`` maps them to real ranks) and their waits; returns the ids."""
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        real = (lambda v: v) if to_ranks is None else to_ranks
        ids = rec.sends(real(src), real(dst), start, stop)
        self.sent(src, ids)
        self.received(dst, ids)
        return ids


def ring_waits(steps: BlockingSteps, ids: np.ndarray, ranks: np.ndarray) -> None:
    """The waits of a ring allgather's blocking sendrecv steps.

    ``ids[i - 1, c]`` is the send of step i from ring position c to c + 1
    (mod P); ``ranks[c]`` is that position's rank as ``steps`` knows it.
    Step 1 waits for what ``steps`` knows of each rank (the scatter before
    the ring); step i + 1 for the position's own send of step i and its
    reception of step i, the send of position c - 1 (the block it forwards).
    """
    nsteps, p = ids.shape
    if not nsteps:
        return
    steps.sent(np.asarray(ranks, np.int64), ids[0])
    if nsteps > 1:
        c = np.arange(p, dtype=np.int64)
        steps.waits(ids[1:], ids[:-1])
        steps.waits(ids[1:], ids[:-1][:, (c - 1) % p])
