"""Many parameter sets priced in one pass of a dependency schedule: a fit's finite differences at once.

A fit prices every training schedule at theta and at theta + h e_j for each
parameter j it moves (:mod:`commcost.calibration.fit_from_collectives`).
Those runs share the schedule, its dependency structure and, almost always,
the order in which its receivers take their messages; only the numbers
differ. Here the c parameter sets are c columns of every per-transmission
time (``send_busy``, ``inject``, ``flight``, ``service``, ``occupancy``:
:mod:`.dependency_timeline`'s recurrences), and one walk through the
schedule computes every column:

* with nothing queued at the receivers the one pass in array order is the
  same for every column (:func:`_one_pass_columns`);
* otherwise the event loop takes receptions in the order of the first
  column's keys (when each message's first byte comes in), and checks, for
  every other column, that its own run would have taken them in the same
  order: a column's run pops the least (key, id) among the messages whose
  sends have started, so the first column's order is that column's too
  unless a message popped after y was pushed has a larger (key, id) in the
  column than y. A monotone stack of the pops' keys per column answers
  "the largest since y was pushed" in O(log n) (:func:`_events_columns`).

A column whose order would differ is priced again alone
(:func:`commcost.models.dependency_timeline.dependency_completions`), so
every column is, number for number, what its own run gives: the max and
plus of the recurrences are evaluated in the same order on the same values.

The loops here mirror :mod:`.dependency_timeline`'s line for line, with a
column per set; they are kept apart because the one-set loops price every
schedule of every command (one set through these is 5-15% slower: the
columns' indexing), and tests/test_parameter_sets.py holds the two to the
same bits.
"""

from __future__ import annotations

import numpy as np

from commcost.jit import njit
from commcost.models.dependency_timeline import (TransmissionTimes, _first_ready, _flags, _heap_pop, _heap_push,
                                                 dependency_completions, structure_of)


@njit
def _one_pass_columns(src, dst, after_ptr, after_idx, send_busy, inject, flight, nprocs,
                      serialize):  # pragma: no cover
    """:func:`~.dependency_timeline._one_pass` with every time an (n, c) array: c runs in one walk."""
    n, c = send_busy.shape
    start = np.empty((n, c))
    done = np.empty((n, c))
    port = np.zeros((nprocs, c))
    ready = np.empty(c)
    for i in range(n):
        s = src[i]
        for q in range(c):
            ready[q] = 0.0
        for k in range(after_ptr[i], after_ptr[i + 1]):
            j = after_idx[k]
            if dst[j] == s:
                for q in range(c):
                    t = done[j, q]
                    if t > ready[q]:
                        ready[q] = t
            else:
                for q in range(c):
                    t = start[j, q] + inject[j, q]
                    if t > ready[q]:
                        ready[q] = t
        for q in range(c):
            r = ready[q]
            if serialize and port[s, q] > r:
                r = port[s, q]
            start[i, q] = r
            port[s, q] = r + send_busy[i, q]
            done[i, q] = r + flight[i, q]
    return start, done


@njit(inline=True)
def _release_columns(i, t, rank, src, succ_ptr, succ_idx, ready, pending, prev, started, serialize, stack,
                     top):  # pragma: no cover
    """:func:`~.dependency_timeline._release` with ``t`` a column per parameter set."""
    c = t.shape[0]
    for k in range(succ_ptr[i], succ_ptr[i + 1]):
        w = succ_idx[k]
        if src[w] != rank:
            continue
        for q in range(c):
            if t[q] > ready[w, q]:
                ready[w, q] = t[q]
        pending[w] -= 1
        if pending[w] == 0 and (not serialize or prev[w] < 0 or started[prev[w]]):
            stack[top] = w
            top += 1
    return top


@njit(inline=True)
def _take_columns(i, dst, src, occupancy, service, recv_port, recv_free, done, taken, succ_ptr, succ_idx, ready,
                  pending, prev, started, serialize, stack, top, sync, completed, arrived, fin,
                  held):  # pragma: no cover
    """:func:`~.dependency_timeline._take` for every column (its bytes in at ``arrived[i]``)."""
    d = dst[i]
    c = fin.shape[0]
    for q in range(c):
        t = arrived[i, q]
        e = recv_port[d, q] + occupancy[i, q]
        if t > e:
            e = t
        recv_port[d, q] = e
        f = recv_free[d, q]
        if e > f:
            f = e
        f += service[i, q]
        recv_free[d, q] = f
        done[i, q] = f
        fin[q] = f
        if sync[i]:
            completed[i, q] += e - t
            held[q] = completed[i, q]
    taken[i] = True
    top = _release_columns(i, fin, d, src, succ_ptr, succ_idx, ready, pending, prev, started, serialize, stack, top)
    if sync[i]:
        top = _release_columns(i, held, src[i], src, succ_ptr, succ_idx, ready, pending, prev, started, serialize,
                               stack, top)
    return top


@njit(inline=True)
def _check_order(i, pops, pushed_at, arrived, occupancy, mono_key, mono_id, mono_pos, mono_len,
                 bad):  # pragma: no cover
    """Whether each column's own run would pop i now (module docstring): the largest (key, id) popped since
    i was pushed must be below i's in that column. Then i joins each column's monotone stack."""
    c = bad.shape[0]
    since = pushed_at[i]
    for q in range(c):
        key = arrived[i, q] - occupancy[i, q]
        length = mono_len[q]
        lo, hi = 0, length  # the first entry popped at or after ``since``: the largest since then
        while lo < hi:
            mid = (lo + hi) >> 1
            if mono_pos[mid, q] < since:
                lo = mid + 1
            else:
                hi = mid
        if lo < length:
            k2 = mono_key[lo, q]
            if k2 > key or (k2 == key and mono_id[lo, q] > i):
                bad[q] = True
        while length > 0 and (mono_key[length - 1, q] < key
                              or (mono_key[length - 1, q] == key and mono_id[length - 1, q] < i)):
            length -= 1
        mono_key[length, q] = key
        mono_id[length, q] = i
        mono_pos[length, q] = pops
        mono_len[q] = length + 1


@njit
def _events_columns(src, dst, after_ptr, after_idx, succ_ptr, succ_idx, prev, nxt, send_busy, inject, flight,
                    service, occupancy, recv_prev, recv_next, nprocs, serialize, sync,
                    pressed):  # pragma: no cover
    """:func:`~.dependency_timeline._events` with every time an (n, c) array, receptions taken in the order
    of column 0's keys; returns (start, completed, done, bad): ``bad[q]`` where column q's own run would
    have taken them in another order (its numbers then are not its run's)."""
    n, c = send_busy.shape
    start = np.zeros((n, c))
    done = np.zeros((n, c))
    completed = np.zeros((n, c))
    arrived = np.zeros((n, c))
    ready = np.zeros((n, c))
    pending = np.empty(n, np.int64)
    for i in range(n):
        pending[i] = after_ptr[i + 1] - after_ptr[i]
    started = np.zeros(n, np.bool_)
    taken = np.zeros(n, np.bool_)
    parked = np.zeros(n, np.bool_)
    port = np.zeros((nprocs, c))
    recv_port = np.full((nprocs, c), -np.inf)
    recv_free = np.full((nprocs, c), -np.inf)
    drain = np.full((nprocs, c), -np.inf)
    key = np.empty(n)
    ids = np.empty(n, np.int64)
    pushed_at = np.zeros(n, np.int64)
    checked = n if c > 1 else 0  # one set alone takes its own order: nothing to check
    mono_key = np.empty((checked, c))
    mono_id = np.empty((checked, c), np.int64)
    mono_pos = np.empty((checked, c), np.int64)
    mono_len = np.zeros(c, np.int64)
    bad = np.zeros(c, np.bool_)
    fin = np.empty(c)
    held = np.empty(c)
    sent = np.empty(c)
    size = 0
    pops = 0
    stack, top = _first_ready(pending, prev, serialize)
    remaining = n
    while remaining > 0:
        while top > 0:
            top -= 1
            i = stack[top]
            if started[i]:
                continue
            s = src[i]
            for q in range(c):
                t0 = ready[i, q]
                if serialize and port[s, q] > t0:
                    t0 = port[s, q]
                start[i, q] = t0
                port[s, q] = t0 + send_busy[i, q]
                arrived[i, q] = t0 + flight[i, q]
                sent[q] = t0 + inject[i, q]
                completed[i, q] = sent[q]
            started[i] = True
            pushed_at[i] = pops
            size = _heap_push(key, ids, size, arrived[i, 0] - occupancy[i, 0], i)
            for k in range(succ_ptr[i], succ_ptr[i + 1]):
                w = succ_idx[k]
                if src[w] == s and not sync[i] and not pressed[i]:
                    for q in range(c):
                        if sent[q] > ready[w, q]:
                            ready[w, q] = sent[q]
                    pending[w] -= 1
                    if not serialize and pending[w] == 0:
                        stack[top] = w
                        top += 1
            w = nxt[i]
            if serialize and w >= 0 and pending[w] == 0:
                stack[top] = w
                top += 1
        if size == 0:
            break
        _, i, size = _heap_pop(key, ids, size)
        if c > 1:
            _check_order(i, pops, pushed_at, arrived, occupancy, mono_key, mono_id, mono_pos, mono_len, bad)
        pops += 1
        remaining -= 1
        if pressed[i]:
            d = dst[i]
            for q in range(c):
                e = drain[d, q] + occupancy[i, q]
                if arrived[i, q] > e:
                    e = arrived[i, q]
                drain[d, q] = e
                completed[i, q] += e - arrived[i, q]
                held[q] = completed[i, q]
            top = _release_columns(i, held, src[i], src, succ_ptr, succ_idx, ready, pending, prev, started,
                                   serialize, stack, top)
        j = recv_prev[i]
        if j >= 0 and not taken[j]:
            parked[i] = True
            continue
        top = _take_columns(i, dst, src, occupancy, service, recv_port, recv_free, done, taken, succ_ptr, succ_idx,
                            ready, pending, prev, started, serialize, stack, top, sync, completed, arrived, fin,
                            held)
        j = recv_next[i]
        while j >= 0 and parked[j]:
            parked[j] = False
            top = _take_columns(j, dst, src, occupancy, service, recv_port, recv_free, done, taken, succ_ptr,
                                succ_idx, ready, pending, prev, started, serialize, stack, top, sync, completed,
                                arrived, fin, held)
            j = recv_next[j]
    return start, completed, done, bad


def _matrix(a, n: int, c: int) -> np.ndarray:
    """An (n, c) time array (None: zeros) as C-contiguous float64."""
    if a is None:
        return np.zeros((n, c))
    return np.ascontiguousarray(np.broadcast_to(a, (n, c)), dtype=np.float64)


def dependency_completions_columns(src: np.ndarray, dst: np.ndarray, after_ptr: np.ndarray, after_idx: np.ndarray,
                                   nprocs: int, times: TransmissionTimes, serialize: bool = True,
                                   recv_prev: np.ndarray | None = None, schedule=None,
                                   folded=None) -> tuple[np.ndarray, np.ndarray]:
    """``(completed, done)``, (n, c) arrays: column q is what
    :func:`~.dependency_timeline.dependency_completions` gives for column q of ``times`` (the same
    numbers), all c priced in one walk where they take their receptions in one order (module docstring).
    ``times`` holds (n, c) arrays, one column per parameter set (service and occupancy may be None: zeros);
    its ``sync`` and ``pressed`` flags are the same for every set (they follow the sizes and the channels'
    limits, not the times)."""
    busy, inject, flight, service, occupancy, sync, pressed = times
    c = busy.shape[1]
    if folded is not None:
        f = folded.fold

        def part(a):
            return a[f.keep] if isinstance(a, np.ndarray) and a.ndim else a
        completed, done = dependency_completions_columns(
            f.src, f.dst, f.after_ptr, f.after_idx, f.nprocs, TransmissionTimes(*(part(a) for a in times)),
            serialize, f.recv_prev, folded)
        return completed[f.rep], done[f.rep]
    n = len(src)
    if n == 0:
        return np.zeros((0, c)), np.zeros((0, c))
    args, ordered, alone, rprev, succ_ptr, succ_idx, prev, nxt, rnext = structure_of(
        src, dst, after_ptr, after_idx, nprocs, recv_prev, schedule)
    busy, inject, flight, service, occupancy = (_matrix(a, n, c) for a in (busy, inject, flight, service, occupancy))
    # the path each run takes alone (dependency_completions): one pass where nothing queues
    simple = (not ordered) & ~service.any(axis=0) & (~occupancy.any(axis=0) | alone)
    completed, done = np.empty((n, c)), np.empty((n, c))
    for group in (np.flatnonzero(simple), np.flatnonzero(~simple)):
        if not len(group):
            continue
        mine = [a if len(group) == c else np.ascontiguousarray(a[:, group])
                for a in (busy, inject, flight, service, occupancy)]
        if simple[group[0]]:
            start, last = _one_pass_columns(*args, *mine[:3], nprocs, serialize)
            completed[:, group], done[:, group] = start + mine[1], last
            continue
        _, sent, last, bad = _events_columns(*args, succ_ptr, succ_idx, prev, nxt, *mine, rprev, rnext, nprocs,
                                             serialize, _flags(sync, n), _flags(pressed, n))
        completed[:, group[~bad]], done[:, group[~bad]] = sent[:, ~bad], last[:, ~bad]
        for q in group[bad].tolist():  # its own run takes the receptions in another order: alone
            _, completed[:, q], done[:, q] = dependency_completions(
                src, dst, after_ptr, after_idx, nprocs, busy[:, q], inject[:, q], flight[:, q], service[:, q],
                serialize, occupancy[:, q], recv_prev, schedule, sync, pressed)
    return completed, done
