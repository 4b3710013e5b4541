"""What a rank waits for before it sends, as dependency edges (see :mod:`commcost.schedule.schedule`).

The broadcast builders (:mod:`.ompi_bcast`, :mod:`.mpich_bcast`) record
their transmissions with the :class:`~.recorder.Recorder` and state, with
the helpers here, what each send waits for in the library's code. A rank
can only wait for its own operations, so every edge names a reception of
the sender (receive-before-forward) or an earlier send of it (a blocking
send returned, or a ``Waitall`` over posted sends). Every helper works on
numpy batches: no Python loop per transmission.

* :func:`program_order`: the waits of algorithms recorded as the ranks'
  programs of steps (the recorder derives them for every phase a builder
  records without explicit waits);
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

if TYPE_CHECKING:
    from commcost.collectives.recorder import Recorder

EMPTY = np.zeros(0, np.int64)


class Waits:
    """Where a builder states what waits for what (``waits(waiter_ids, waited_ids)``, as :meth:`Recorder.wait`).

    From its creation on, the recorder's transmissions take the waits said
    here instead of those of program order; in a composite that recorded
    another collective's steps first, each of them also waits for its
    sender's part of those steps (:func:`program_order`).
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
        sib = np.argsort(src, kind="stable")  # each sender's edges together, in send order
        start = np.searchsorted(src[sib], src, side="left")
        outdeg = np.searchsorted(src[sib], src, side="right") - start
        e_l, k_l, id_l = edge[later], seg[later], ids[later]
        count = outdeg[e_l]
        waiter = np.repeat(id_l, count)
        j = np.arange(len(waiter), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        sibling = sib[np.repeat(start[e_l], count) + j]
        k = np.repeat(k_l, count) - 1
        has = k < nseg[sibling]  # a sibling whose part has fewer segments sent none of segment k - 1
        waits(waiter[has], ids[first[sibling[has]] + k[has]])


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


def pairs(a_first: np.ndarray, a_count: np.ndarray, b_first: np.ndarray, b_count: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) with a in ``a_first[k] + [0, a_count[k])`` and b in ``b_first[k] + [0, b_count[k])``,
    over all k: the positions of each pair of runs, crossed."""
    per = a_count * b_count
    if np.all(per == 1):
        return np.asarray(a_first, np.int64), np.asarray(b_first, np.int64)
    total = int(per.sum())
    if not total:
        return EMPTY, EMPTY
    k = np.repeat(np.arange(len(per), dtype=np.int64), per)
    j = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
    return a_first[k] + j // b_count[k], b_first[k] + j % b_count[k]


def _last_and_largest(group: np.ndarray, peer: np.ndarray, ids: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Mask of the transmissions that are, within their (group, peer), the last in id order or the largest
    (the last of the largest)."""
    keep = np.zeros(len(ids), bool)
    for order in (np.lexsort((ids, group, peer)), np.lexsort((ids, nbytes, group, peer))):
        g, pe = group[order], peer[order]
        end = np.r_[(g[1:] != g[:-1]) | (pe[1:] != pe[:-1]), True]
        keep[order[end]] = True
    return keep


def program_order(phase: np.ndarray, posted: np.ndarray, src: np.ndarray, dst: np.ndarray,
                  explicit_from: int, nbytes: np.ndarray | None = None,
                  combine: np.ndarray | None = None, compress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The waits of transmissions recorded as each rank's program of steps: edges ``(waiter, waited)``.

    Transmissions ``0 .. explicit_from - 1`` (ids = positions) were recorded
    in phases that are the ranks' steps: in each, a rank posts its sends
    (``posted[phase]``: isends, then a Waitall) or makes them one after
    another (blocking sends; a ``Sendrecv``), and its next step starts when
    every operation of this one has completed: its sends, and its
    receptions. So the sends of a rank's step wait for its sends of its
    previous step with sends (all of them after a Waitall; the last of a
    sequence) and for every reception it completed since that step began;
    earlier receptions are ancestors through those sends. In a sequence the
    first send takes these waits and each further send waits for the one
    before it.

    Of the transmissions one step of a rank posts to one peer (released
    together, by the same waits), only the last and the largest are named:
    every model ends them no later (senders inject in program order under
    Hockney and LogGP; equal transmissions started together in one
    contention domain end together under tau-Lop, a larger one later). So
    an algorithm that posts many blocks per step (Open MPI's sparbit) keeps
    a few waits per send instead of a number that grows with the square of
    the blocks. Receptions reduced into the receiver (``combine``) are all
    named: their reductions queue at the receiver. ``compress=False`` names
    them all (tests/test_program_order.py prices both ways alike).

    Transmissions from ``explicit_from`` on state their own waits (a
    collective a composite runs after the stepped part, such as the
    broadcast after a reduce); each of them also waits for its sender's
    whole stepped program: its last step's sends and the receptions since.
    """
    phase, src, dst = (np.asarray(a, np.int64) for a in (phase, src, dst))
    posted = np.asarray(posted, bool)
    n = len(src)
    nbytes = np.zeros(n) if nbytes is None else np.asarray(nbytes, np.float64)
    combine = np.zeros(n, bool) if combine is None else np.asarray(combine, bool)
    if not explicit_from or not n:
        return EMPTY, EMPTY
    if explicit_from < n and phase[explicit_from:].min() < phase[:explicit_from].max():
        raise ValueError("stepped transmissions must come before those with explicit waits")
    ids = np.arange(n, dtype=np.int64)
    beyond = int(phase.max()) + 1  # the explicit part: one step after every stepped one
    ph = np.where(ids < explicit_from, phase, beyond)
    # each sender's steps with sends: runs of (src, phase) in that order, ids increasing within a run
    order = np.argsort(src * (beyond + 1) + ph, kind="stable")  # stable: ids increase within a run
    s_src, s_ph = src[order], ph[order]
    new = np.r_[True, (s_src[1:] != s_src[:-1]) | (s_ph[1:] != s_ph[:-1])]
    g_first = np.flatnonzero(new)
    g_count = np.diff(np.r_[g_first, n])
    g_src, g_ph = s_src[g_first], s_ph[g_first]
    g_explicit = g_ph == beyond
    g_seq = ~g_explicit & ~posted[np.minimum(g_ph, len(posted) - 1)]
    group = np.cumsum(new) - 1  # per position of ``order``
    # who takes a step's waits: a sequence's first send, or every send of a posted (or explicit) step
    take = np.where(g_seq, 1, g_count)
    # what the next step waits for among a step's sends: a sequence's last; of a posted step, per peer,
    # the last and the largest
    gives = np.r_[new[1:], True]  # the last of each group
    posted_pos = ~g_seq[group] & ~g_explicit[group] & (g_count[group] > 1)
    if not compress:
        gives = gives | posted_pos
    elif posted_pos.any():
        pos = np.flatnonzero(posted_pos)
        gives[pos] = _last_and_largest(group[pos], dst[order[pos]], order[pos], nbytes[order[pos]])
    give_pos = np.flatnonzero(gives)
    give = np.bincount(group[give_pos], minlength=len(g_first))
    give_first = np.cumsum(give) - give
    waiter: list[np.ndarray] = []
    waited: list[np.ndarray] = []
    prev = np.r_[False, g_src[1:] == g_src[:-1]] & ~np.r_[False, g_explicit[:-1]]
    k = np.flatnonzero(prev)
    if len(k):
        a, b = pairs(g_first[k], take[k], give_first[k - 1], give[k - 1])
        waiter.append(order[a])
        waited.append(order[give_pos[b]])
    chain = ~new & np.repeat(g_seq, g_count)
    if chain.any():
        pos = np.flatnonzero(chain)
        waiter.append(order[pos])
        waited.append(order[pos - 1])
    # receptions: waited for by the receiver's first step with sends in a later phase; of those one
    # step of a peer posted, the last and the largest (all of them when reduced)
    rec_ids = ids[:explicit_from]
    key = g_src * (beyond + 1) + g_ph
    query = dst[rec_ids] * (beyond + 1) + phase[rec_ids]
    by_query = np.argsort(query, kind="stable")  # sorted queries search faster (cache)
    at = np.empty(len(query), np.int64)
    at[by_query] = np.searchsorted(key, query[by_query], side="right")
    ok = at < len(key)
    ok[ok] = g_src[at[ok]] == dst[rec_ids[ok]]
    rec_ids, at = rec_ids[ok], at[ok]
    if len(rec_ids):
        plain = ~combine[rec_ids]
        if compress and plain.any() and np.bincount(at, minlength=len(g_first)).max() > 1:
            keep = ~plain
            sub = np.flatnonzero(plain)
            keep[sub] = _last_and_largest(at[sub] * (beyond + 1) + phase[rec_ids[sub]], src[rec_ids[sub]],
                                          rec_ids[sub], nbytes[rec_ids[sub]])
            rec_ids, at = rec_ids[keep], at[keep]
        a, b = pairs(g_first[at], take[at], rec_ids, np.ones(len(rec_ids), np.int64))
        waiter.append(order[a])
        waited.append(b)
    if not waiter:
        return EMPTY, EMPTY
    return np.concatenate(waiter), np.concatenate(waited)
