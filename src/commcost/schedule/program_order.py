"""Each rank's program of steps, as waits: what a phased recording means without barriers.

A phase of a schedule is, for every rank that sends in it, one step of its
program: it posts its sends (isends, then a Waitall) or makes them one
after another (blocking sends, a ``Sendrecv``), and its next step starts
when every operation of this one has completed. :func:`program_order`
turns phases into the waits that say so (a dependency schedule, see
:mod:`.schedule`): the collectives' recorder uses it for every algorithm
that records steps, the GOAL writer for any phased schedule (a GOAL file
has no global barrier). Everything is numpy batches: no Python loop per
transmission.
"""

from __future__ import annotations

import numpy as np

EMPTY = np.zeros(0, np.int64)


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


def runs(key: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices grouped by ``key``: the (stable) order that puts equal keys together, and, for each value
    of ``query``, where its run starts in that order and how long it is (0 where no key has it)."""
    order = np.argsort(key, kind="stable")
    grouped = np.asarray(key)[order]
    first = np.searchsorted(grouped, query, side="left")
    return order, first, np.searchsorted(grouped, query, side="right") - first


def after_own(ids: np.ndarray, sender: np.ndarray, op_ids: np.ndarray, op_src: np.ndarray,
              op_dst: np.ndarray, received: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(waiter, waited)``: transmission ``ids[k]`` (sent by ``sender[k]``) waits for every
    transmission ``op_ids`` its sender sent or received: a rank enters a blocking call once its calls
    before have completed for it. ``received`` (a mask over ``op_ids``): the receptions to wait for, the
    others being taken before one of these (a receive order), so ended no later."""
    rank, op = own_operations(op_ids, op_src, op_dst, received)
    by_rank, first, count = runs(rank, sender)
    i, j = pairs(np.asarray(ids, np.int64), np.ones(len(ids), np.int64), first, count)
    return i, op[by_rank[j]]


def own_operations(op_ids: np.ndarray, op_src: np.ndarray, op_dst: np.ndarray,
                   received: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rank, transmission) of every operation a rank waits for in :func:`after_own`: each transmission as
    its sender's, and as its receiver's where ``received`` (None: all) says so."""
    if received is None:
        return np.concatenate([op_src, op_dst]), np.concatenate([op_ids, op_ids])
    return np.concatenate([op_src, op_dst[received]]), np.concatenate([op_ids, op_ids[received]])


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
    (``posted``, per phase or per transmission: isends, then a Waitall) or makes them one after
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
    n = len(src)
    posted = np.asarray(posted, bool)
    if len(posted) != n:  # one flag per phase: per transmission
        posted = posted[phase] if n else np.zeros(0, bool)
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
    g_seq = ~g_explicit & ~posted[order[g_first]]
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
