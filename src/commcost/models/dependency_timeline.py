"""Timelines of dependency schedules under the point-to-point models (Hockney, LogGP, LogGPH, HLogGP).

A dependency schedule (:mod:`commcost.schedule.schedule`) has no phase
barriers: transmission i starts once what it waits for has completed. Per
transmission the models give four numbers (seconds):

* ``send_busy`` - how long the sender's processor is taken before it can
  start its next message (Hockney: alpha + beta m; LogGP: max(g, o_send +
  (m-1) G));
* ``inject`` - from start until the send has completed for the sender (a
  blocking send returns, a Waitall sees it; Hockney: alpha + beta m; LogGP:
  o_send + (m-1) G);
* ``flight`` - from start until the message has arrived (Hockney: alpha +
  beta m; LogGP: o_send + (m-1) G + L);
* ``recv_occupancy`` - how long the message holds its receiver's port (one
  message in at a time: Hockney alpha + beta m; LogGP max(g, (m-1) G));
* ``recv_service`` - what the receiver's processor spends on it after its
  bytes are in (LogGP: o_recv; a reduction adds gamma(m) when the
  transmission combines), one message after another too.

A receiver takes its messages one at a time: in the order they begin to
come in (arrival minus occupancy: Hockney's start, ties in transmission
order), or, for a reception the schedule orders (``recv_prev[i] = j``: a
blocking receive posted after the one of j), only once j has been taken.

Then, with ``prev(i)`` the sender's previous transmission in program (array)
order and j ranging over after(i):

    ready_i   = max_j ( done_j if dst_j == src_i  else  start_j + inject_j )
    start_i   = max(ready_i, start_prev(i) + send_busy_prev(i))    (senders inject one message at a time)
    arrival_i = start_i + flight_i
    in_i      = max(arrival_i, in_k + recv_occupancy_i)               (the receiving port)
    done_i    = max(in_i, done_k) + recv_service_i                     (the receiving processor)

with k the reception its receiver took before i. A *synchronous* send
(``sync_i``) completes for its sender as much later as its message waited
at the receiver's port: start_i + inject_i + (in_i - arrival_i), both for
what waits for the send and for the sender's own end; with inject_i =
flight_i that is in_i, a rendezvous, where the receiver pulls the bytes (a
linear gather's senders above the eager limit wait their turn at the root;
LogGOPSim's rendezvous, Hoefler, Schneider and Lumsdaine 2010, section 3).
A *pressed* eager send (``pressed_i``, backpressure) is held only while
its receiver's queue drains what arrived before it, in arrival order
whether or not the receive is posted (a message for a receive not yet
posted waits in the unexpected queue, its sender done):

    drained_i   = max(arrival_i, drained_k' + recv_occupancy_i)
    completed_i = start_i + inject_i + drained_i - arrival_i

with k' the message that arrived at the same receiver before i. A message alone costs
what it did without the queue (its arrival, plus its service); k messages
arriving together into one rank take the sum of their occupancies: the
single-port, full-duplex assumption of the collective literature (Thakur,
Rabenseifner and Gropp 2005), a rank sending one message and receiving
another at the same time. The port takes the next message while the
processor still reduces the last (Open MPI's reduce posts the next
receive before it reduces).

This is LogGP's law (Alexandrov et al. 1995, as in :mod:`.timeline`) and
Hockney's (1994) applied to a program's real order of operations, in the
spirit of LogGOPSim (Hoefler, Schneider and Lumsdaine 2010), without its
receive matching. With nothing to queue at the
receivers (no service, and no rank receiving twice) done = arrival and one
pass in array order is exact; otherwise an event loop takes arrivals in
time order (a receiver's queue is first come, first served, within the
order the schedule imposes). Both loops are compiled
(:mod:`commcost.jit`): O(E log E) for E transmissions and dependencies.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from commcost.jit import njit
from commcost.schedule.rows import csr_transpose


class TransmissionTimes(NamedTuple):
    """What a model says of each transmission of a dependency schedule, the recurrences of the module
    docstring's inputs (seconds; None: zeros, or no flag set)."""

    send_busy: np.ndarray
    inject: np.ndarray
    flight: np.ndarray
    service: np.ndarray | None
    occupancy: np.ndarray | None
    sync: np.ndarray | None = None
    pressed: np.ndarray | None = None


def successors(after_ptr: np.ndarray, after_idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The transposed dependency rows: for each transmission, the transmissions that wait for it, ascending
    (:func:`commcost.schedule.rows.csr_transpose`)."""
    return csr_transpose(np.ascontiguousarray(after_ptr, np.int64), np.ascontiguousarray(after_idx, np.int64), n)


def previous_of_sender(src: np.ndarray) -> np.ndarray:
    """Each transmission's previous transmission of the same sender in array order, or -1."""
    n = len(src)
    order = np.argsort(src, kind="stable")
    prev = np.full(n, -1, np.int64)
    if n > 1:
        same = src[order][1:] == src[order][:-1]
        prev[order[1:][same]] = order[:-1][same]
    return prev


@njit
def _one_pass(src, dst, after_ptr, after_idx, send_busy, inject, flight, nprocs, serialize,
              origin):  # pragma: no cover
    n = len(src)
    start = np.empty(n)
    done = np.empty(n)
    port = np.zeros(nprocs)
    for i in range(n):
        s = src[i]
        ready = origin[s]
        for k in range(after_ptr[i], after_ptr[i + 1]):
            j = after_idx[k]
            t = done[j] if dst[j] == s else start[j] + inject[j]
            if t > ready:
                ready = t
        if serialize and port[s] > ready:
            ready = port[s]
        start[i] = ready
        port[s] = ready + send_busy[i]
        done[i] = max(ready + flight[i], origin[dst[i]])  # a message in before its receiver started waits for it
    return start, done


@njit
def _heap_push(key, ids, size, t, i):  # pragma: no cover
    """Push (t, i) on a binary min-heap of (time, id) held in arrays; returns the new size."""
    pos = size
    key[pos] = t
    ids[pos] = i
    while pos > 0:
        parent = (pos - 1) >> 1
        if key[parent] < key[pos] or (key[parent] == key[pos] and ids[parent] < ids[pos]):
            break
        key[parent], key[pos] = key[pos], key[parent]
        ids[parent], ids[pos] = ids[pos], ids[parent]
        pos = parent
    return size + 1


@njit
def _heap_pop(key, ids, size):  # pragma: no cover
    """Remove the smallest (time, id); returns (time, id, new size)."""
    t, i = key[0], ids[0]
    size -= 1
    key[0] = key[size]
    ids[0] = ids[size]
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        small = left
        right = left + 1
        if right < size and (key[right] < key[left] or (key[right] == key[left] and ids[right] < ids[left])):
            small = right
        if key[pos] < key[small] or (key[pos] == key[small] and ids[pos] < ids[small]):
            break
        key[small], key[pos] = key[pos], key[small]
        ids[small], ids[pos] = ids[pos], ids[small]
        pos = small
    return t, i, size


@njit(inline=True)
def _first_ready(pending, prev, serialize):  # pragma: no cover
    """The stack of the event loops (room for every transmission twice) holding those that wait for nothing:
    no dependency, and, with ``serialize``, no earlier send of their sender. Returns (stack, top)."""
    n = len(pending)
    stack = np.empty(2 * n + 1, np.int64)
    top = 0
    for i in range(n):
        if pending[i] == 0 and (not serialize or prev[i] < 0):
            stack[top] = i
            top += 1
    return stack, top


@njit(inline=True)
def _release(i, t, rank, src, succ_ptr, succ_idx, ready, pending, prev, started, serialize, stack,
             top):  # pragma: no cover
    """What ``rank`` waited for on i (its reception, for i's receiver; its send's completion, for i's
    sender) may go at ``t``; returns the new stack top."""
    for k in range(succ_ptr[i], succ_ptr[i + 1]):
        w = succ_idx[k]
        if src[w] != rank:
            continue
        if t > ready[w]:
            ready[w] = t
        pending[w] -= 1
        if pending[w] == 0 and (not serialize or prev[w] < 0 or started[prev[w]]):
            stack[top] = w
            top += 1
    return top


@njit(inline=True)
def _take(i, t, dst, src, occupancy, service, recv_port, recv_free, done, taken, succ_ptr, succ_idx, ready, pending,
          prev, started, serialize, stack, top, sync, completed):  # pragma: no cover
    """The receiver of i takes it (its bytes in at ``t``): its port lets it in at
    e_i = max(t, the port's last + occupancy_i), its processor is done at done_i = max(e_i, its last done) +
    service_i; release what waited for this reception, and, for a synchronous send, what waited for the
    send (it completes e_i - t later than it would have). Returns the new stack top."""
    d = dst[i]
    e = recv_port[d] + occupancy[i]
    if t > e:
        e = t
    recv_port[d] = e
    fin = recv_free[d]
    if e > fin:
        fin = e
    fin += service[i]
    recv_free[d] = fin
    done[i] = fin
    taken[i] = True
    top = _release(i, fin, d, src, succ_ptr, succ_idx, ready, pending, prev, started, serialize, stack, top)
    if sync[i]:
        completed[i] += e - t  # held for as long as its message waited at the receiver's port
        top = _release(i, completed[i], src[i], src, succ_ptr, succ_idx, ready, pending, prev, started, serialize,
                       stack, top)
    return top


@njit
def _events(src, dst, after_ptr, after_idx, succ_ptr, succ_idx, prev, nxt, send_busy, inject, flight,
            service, occupancy, recv_prev, recv_next, nprocs, serialize, sync, pressed, origin):  # pragma: no cover
    """Receptions in the order their bytes begin to come in (arrival minus occupancy), each receiver first
    come first served (a reception with ``recv_prev[i] >= 0`` only after that one was taken); with
    ``serialize`` a send starts only after the sender's previous send started (program order) and its
    processor is free; a ``sync`` send completes as much later as its message waited at its receiver, a
    ``pressed`` one as much later as it waited for the receiver's queue to drain (in arrival order, whether
    or not its receive is posted); rank r starts at ``origin[r]`` (its sends no earlier, its processor free
    from then). Returns (start, completed, done)."""
    n = len(src)
    start = np.zeros(n)
    done = np.zeros(n)
    completed = np.zeros(n)
    arrived = np.zeros(n)
    ready = np.empty(n)
    for i in range(n):
        ready[i] = origin[src[i]]
    pending = np.empty(n, np.int64)
    for i in range(n):
        pending[i] = after_ptr[i + 1] - after_ptr[i]
    started = np.zeros(n, np.bool_)
    taken = np.zeros(n, np.bool_)
    parked = np.zeros(n, np.bool_)
    port = np.zeros(nprocs)
    recv_port = np.full(nprocs, -np.inf)  # a rank's first reception waits for no earlier one
    recv_free = origin.copy()  # its processor takes no message before it started (every e is >= 0)
    drain = np.full(nprocs, -np.inf)  # when each receiver's queue has let the last pressed message in
    key = np.empty(n)
    ids = np.empty(n, np.int64)
    size = 0
    stack, top = _first_ready(pending, prev, serialize)
    remaining = n
    while remaining > 0:
        while top > 0:
            top -= 1
            i = stack[top]
            if started[i]:
                continue
            s = src[i]
            t0 = ready[i]
            if serialize and port[s] > t0:
                t0 = port[s]
            start[i] = t0
            port[s] = t0 + send_busy[i]
            started[i] = True
            arrived[i] = t0 + flight[i]
            size = _heap_push(key, ids, size, arrived[i] - occupancy[i], i)  # taken in order of its first byte
            sent = t0 + inject[i]
            completed[i] = sent
            for k in range(succ_ptr[i], succ_ptr[i + 1]):
                w = succ_idx[k]
                if src[w] == s and not sync[i] and not pressed[i]:  # w waits for this send to complete
                    if sent > ready[w]:
                        ready[w] = sent
                    pending[w] -= 1
                    if not serialize and pending[w] == 0:
                        stack[top] = w
                        top += 1
            w = nxt[i]  # program order: only the sender's next send can have been waiting for this start
            if serialize and w >= 0 and pending[w] == 0:
                stack[top] = w
                top += 1
        if size == 0:
            break  # pragma: no cover
        _, i, size = _heap_pop(key, ids, size)
        remaining -= 1
        if pressed[i]:  # the sender is held while its receiver's queue drains the messages before it
            d = dst[i]
            e = drain[d] + occupancy[i]
            if arrived[i] > e:
                e = arrived[i]
            drain[d] = e
            completed[i] += e - arrived[i]
            top = _release(i, completed[i], src[i], src, succ_ptr, succ_idx, ready, pending, prev, started, serialize,
                           stack, top)
        j = recv_prev[i]
        if j >= 0 and not taken[j]:
            parked[i] = True  # its blocking receive is not posted yet
            continue
        top = _take(i, arrived[i], dst, src, occupancy, service, recv_port, recv_free, done, taken, succ_ptr, succ_idx, ready,
                    pending, prev, started, serialize, stack, top, sync, completed)
        j = recv_next[i]
        while j >= 0 and parked[j]:  # the receptions ordered after it that were waiting
            parked[j] = False
            top = _take(j, arrived[j], dst, src, occupancy, service, recv_port, recv_free, done, taken, succ_ptr,
                        succ_idx, ready, pending, prev, started, serialize, stack, top, sync, completed)
            j = recv_next[j]
    return start, completed, done


def next_of(prev: np.ndarray) -> np.ndarray:
    """The inverse of a "previous" link: for each i, the k with ``prev[k] == i`` (-1 if none)."""
    nxt = np.full(len(prev), -1, np.int64)
    has = prev >= 0
    nxt[prev[has]] = np.flatnonzero(has)
    return nxt


def receives_alone(dst: np.ndarray, nprocs: int) -> bool:
    """Whether every rank receives at most one transmission (then no receiver ever queues)."""
    return len(dst) == 0 or int(np.bincount(dst, minlength=nprocs).max()) <= 1


def _structure(src, dst, after_ptr, after_idx, nprocs: int, recv_prev) -> tuple:
    """What :func:`dependency_times` needs of a schedule apart from its times: its index arrays as int64,
    whether receptions are ordered, whether every rank receives at most once, and the derived links
    (successors, each sender's previous and next transmission, each ordered reception's next)."""
    n = len(src)
    args = [np.ascontiguousarray(a, dtype=np.int64) for a in (src, dst, after_ptr, after_idx)]
    ordered = recv_prev is not None and bool(np.any(np.asarray(recv_prev) >= 0))
    rprev = np.full(n, -1, np.int64) if not ordered else np.ascontiguousarray(recv_prev, dtype=np.int64)
    succ_ptr, succ_idx = successors(args[2], args[3], n)
    prev = previous_of_sender(args[0])
    return args, ordered, receives_alone(args[1], nprocs), rprev, succ_ptr, succ_idx, prev, next_of(prev), \
        next_of(rprev)


def structure_of(src, dst, after_ptr, after_idx, nprocs: int, recv_prev, schedule=None) -> tuple:
    """:func:`_structure` of these arrays, kept on ``schedule`` (what they are of) for its next pricing."""
    cached = None if schedule is None else schedule.__dict__.get(STRUCTURE_KEY)
    if cached is None:
        cached = _structure(src, dst, after_ptr, after_idx, nprocs, recv_prev)
        if schedule is not None:
            schedule.__dict__[STRUCTURE_KEY] = cached  # (a frozen dataclass: its fields stay as they are)
    return cached


def _per_transmission(a, n: int) -> np.ndarray:
    """``a`` as n contiguous float64 (a scalar repeated); an array that already is one is taken as it is."""
    if isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (n,) and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(np.broadcast_to(a, (n,)), dtype=np.float64)


def _flags(a, n: int) -> np.ndarray:
    """``a`` as n contiguous booleans (None: all false; a scalar repeated); a flag array already so, as it is."""
    if a is None:
        return np.zeros(n, np.bool_)
    if isinstance(a, np.ndarray) and a.dtype == np.bool_ and a.shape == (n,) and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(np.broadcast_to(a, (n,)), dtype=np.bool_)


STRUCTURE_KEY = "_dependency_structure"  # where a schedule keeps its structure once computed


def dependency_times(src: np.ndarray, dst: np.ndarray, after_ptr: np.ndarray, after_idx: np.ndarray, nprocs: int,
                     send_busy_s: np.ndarray, inject_s: np.ndarray, flight_s: np.ndarray,
                     recv_service_s: np.ndarray | None = None,
                     serialize: bool = True, recv_occupancy_s: np.ndarray | None = None,
                     recv_prev: np.ndarray | None = None, schedule=None, folded=None) -> tuple[np.ndarray, np.ndarray]:
    """``(start, done)`` of every transmission of a dependency schedule (seconds from its start), by the
    recurrences of the module docstring; ``serialize``: a sender injects one message at a time;
    ``recv_prev``: the reception its receiver takes before each one (-1: any order). ``schedule``: the
    :class:`~commcost.schedule.Schedule` these arrays are of, which then keeps their derived structure for
    the next pricing (a fit prices the same schedules hundreds of times). ``folded``: the schedule's
    :class:`~commcost.models.symmetry.NodeFold`, to run one node's transmissions only."""
    start, _, done = dependency_completions(src, dst, after_ptr, after_idx, nprocs, send_busy_s, inject_s, flight_s,
                                            recv_service_s, serialize, recv_occupancy_s, recv_prev, schedule,
                                            folded=folded)
    return start, done


def dependency_completions(src: np.ndarray, dst: np.ndarray, after_ptr: np.ndarray, after_idx: np.ndarray,
                           nprocs: int, send_busy_s: np.ndarray, inject_s: np.ndarray, flight_s: np.ndarray,
                           recv_service_s: np.ndarray | None = None, serialize: bool = True,
                           recv_occupancy_s: np.ndarray | None = None, recv_prev: np.ndarray | None = None,
                           schedule=None, sync: np.ndarray | None = None, pressed: np.ndarray | None = None,
                           folded=None, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(start, completed, done)`` of every transmission (:func:`dependency_times`, with when each send
    completes for its sender): ``start + inject``, and where ``sync`` is true that plus how long its message
    waited at its receiver's port (a rendezvous send, with inject = flight: when its receiver takes it),
    where ``pressed`` is true that plus how long it waited for the receiver's queue to drain what arrived
    before it (backpressure; module docstring).

    ``folded``: a :class:`~commcost.models.symmetry.NodeFold` of the schedule (a shift of ranks by one
    node's ranks that maps it onto itself, its times included): then only the representatives run, on the
    folded ranks, and every transmission takes its representative's times (exact: the run is invariant
    under the shift; tests/test_symmetry_fold.py compares with whole runs).

    ``origin``: when each rank starts, seconds (None: all at 0), as a barrier releases them before a timed
    call: a rank sends nothing before its start, and a message in before its receiver started is taken
    then (the unexpected queue); times stay from the common 0. ``folded`` is then not used (the starts
    need not repeat with the shift)."""
    if origin is not None:
        folded = None
    if folded is not None:
        f = folded.fold

        def part(a):
            return a[f.keep] if isinstance(a, np.ndarray) and a.ndim else a
        start, completed, done = dependency_completions(
            f.src, f.dst, f.after_ptr, f.after_idx, f.nprocs, part(send_busy_s), part(inject_s), part(flight_s),
            part(recv_service_s), serialize, part(recv_occupancy_s), f.recv_prev, folded, part(sync), part(pressed))
        return start[f.rep], completed[f.rep], done[f.rep]
    n = len(src)
    if n == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    args, ordered, alone, rprev, succ_ptr, succ_idx, prev, nxt, rnext = structure_of(
        src, dst, after_ptr, after_idx, nprocs, recv_prev, schedule)
    busy, inject, flight = (_per_transmission(a, n) for a in (send_busy_s, inject_s, flight_s))
    service = np.zeros(n) if recv_service_s is None else _per_transmission(recv_service_s, n)
    occupancy = np.zeros(n) if recv_occupancy_s is None else _per_transmission(recv_occupancy_s, n)
    synchronous, held = (_flags(a, n) for a in (sync, pressed))
    starts = np.zeros(nprocs) if origin is None else np.ascontiguousarray(origin, dtype=np.float64)
    if not ordered and not np.any(service) and (not np.any(occupancy) or alone):
        # no receiver queues: a message is taken at its arrival, so a synchronous send waits for nothing more
        start, done = _one_pass(*args, busy, inject, flight, nprocs, serialize, starts)
        return start, start + inject, done
    return _events(*args, succ_ptr, succ_idx, prev, nxt, busy, inject, flight, service, occupancy, rprev,
                   rnext, nprocs, serialize, synchronous, held, starts)
