"""tau-Lop on dependency schedules: the exact event-driven engine with transmissions released by what they wait for.

Paper 000's rules (section 3) as :mod:`.engine` applies them, with the
start of every transmission given by the schedule's dependencies
(:mod:`commcost.schedule.schedule`) instead of phases:

* a transmission is released once everything it waits for has completed
  (its sender's receptions and earlier sends: their last bytes moved, and,
  for a combine transmission under a reduction law, the receiver's
  reduction of it, receptions reduced one after another in order of
  arrival);
* A2: released transmissions sharing a contention domain progress together,
  each moving the same number of bytes; a piece of delta bytes at
  concurrency tau lasts the *size-dependent part* of the law,
  tau||T^c(delta) - tau||T^c(0), and a transmission whose bytes have all
  moved ends tau||T^c(0) later, tau the concurrency it ended in (its fixed
  cost, o^c(0) + sum_k L^k(0, tau), paid once). When a transmission joins
  in the middle of a piece, the piece is cut pro rata and the rest goes on
  at the new concurrency;
* A3: domains do not interfere.

Transmissions that start together with equal sizes (the steps of trees
and rings) cost exactly the paper's tau||T^c(m) (eq. 5). Where sizes
differ the paper's staircase (eq. 6-7) charges the fixed cost again on
every step, (n-1)||T(m2 - m1); here it is paid once per transmission.
The paper's own examples are phased schedules, priced by :mod:`.engine`
with the staircase as the paper writes it. The difference matters when
transmissions start at different times: a staircase that recharged the
fixed cost at every join and every end priced a ring of staggered 1-byte
transmissions up to 16x above its lockstep price, a price no ring shows.
Paying it once keeps the price continuous in the start times where
L^c(0, tau) is flat in tau (measured tables: the latency is not shared);
where a table makes L^c(0, tau) grow with tau, the fixed cost taken at
the concurrency a transmission ends in moves by at most
L^c(0, tau) - L^c(0, 1) when that concurrency changes.

Every transmission is its own job: assumption A1 (a sender's consecutive
blocking sends on one channel priced as one message of the summed size)
belongs to the paper's algebra of phased schedules and is not applied
here; a blocking send's successor starts when it has ended.

The loop is compiled (:mod:`commcost.jit`): one event heap (piece ends and
future releases), one heap of finishing marks per domain, O(E log E). Each
channel's law is passed as arrays (the compiled grids of
:class:`~.params.TransmissionLaw`), evaluated as ``TransmissionLaw.time``
does. :func:`sweep_dependencies` prices one schedule at several size factors
(a size sweep), preparing domains, laws and successors once.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple

import numpy as np

from commcost.jit import njit
from commcost.models.dependency_timeline import _heap_pop, _heap_push, successors
from commcost.models.taulop.params import TransmissionLaw

TRACE_FIELDS = ("domain", "tau", "nbytes", "start_s", "end_s", "cut")
PARALLEL_FROM = 500_000  # transmissions x factors from which a size sweep runs its factors on several cores


class LawArrays(NamedTuple):
    """Every channel's T^c(m, tau) as flat arrays (see :func:`law_arrays`)."""

    xs: np.ndarray  # sizes of each channel's grid, concatenated
    xs_off: np.ndarray  # channel c's sizes: xs[xs_off[c]:xs_off[c + 1]]
    ys: np.ndarray  # rows of values on that grid: tau = 1..tau_sat, then o, then S
    row_off: np.ndarray  # channel c's first row
    slope: np.ndarray  # slope past the last size, one per row
    period: np.ndarray  # > 0: past the last size in whole chunks of it instead (beyond_m = "chunks"), per row
    tau_sat: np.ndarray  # above it T = o + tau * S, or T(tau_sat) where hold
    hold: np.ndarray  # per channel: beyond tau_sat hold T(m, tau_sat) (beyond_tau = "hold")


def law_arrays(laws: list[TransmissionLaw | None]) -> LawArrays:
    """Flatten the compiled laws of the channels (None: a channel the schedule does not use)."""
    xs_parts, y_rows, slopes, periods, xs_off, row_off, tau_sat, hold = [], [], [], [], [0], [], [], []
    for law in laws:
        hold.append(law is not None and law.hold)
        if law is None:
            grids = [([0.0], [0.0], 0.0, 0.0)] * 3
            sat = 1
        else:
            sat = law.tau_saturated
            o_grid, s_grid = law._saturated()
            grids = [law._compiled(t) for t in range(1, sat + 1)] + [o_grid, s_grid]
        xs = np.asarray(grids[0][0], dtype=np.float64)
        width = len(xs)
        for grid in grids:
            if len(grid[0]) != width:
                raise ValueError("a channel's grids must share their sizes")
        row_off.append(len(y_rows))
        for _, ys, slope, period in grids:
            y_rows.append(np.asarray(ys, dtype=np.float64))
            slopes.append(float(slope))
            periods.append(float(period))
        xs_parts.append(xs)
        xs_off.append(xs_off[-1] + width)
        tau_sat.append(sat)
    row_len = np.array([len(r) for r in y_rows])
    ys = np.zeros((len(y_rows), int(row_len.max(initial=1))))
    for k, r in enumerate(y_rows):
        ys[k, :len(r)] = r
    return LawArrays(np.concatenate(xs_parts) if xs_parts else np.zeros(0), np.array(xs_off, np.int64), ys,
                     np.array(row_off, np.int64), np.array(slopes), np.array(periods), np.array(tau_sat, np.int64),
                     np.array(hold, np.bool_))


@njit
def _inside(xs, ys, x):  # pragma: no cover - compiled
    """A piecewise-linear grid at x, flat before the first size (x at most the last size)."""
    n = len(xs)
    if x <= xs[0]:
        return ys[0]
    if x >= xs[n - 1]:
        return ys[n - 1]
    lo, hi = 0, n - 1  # xs[lo] <= x < xs[hi]
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if xs[mid] <= x:
            lo = mid
        else:
            hi = mid
    return ys[lo] + (ys[hi] - ys[lo]) * (x - xs[lo]) / (xs[hi] - xs[lo])


@njit
def _at(xs, ys, slope, period, x):  # pragma: no cover - compiled
    """A compiled grid at x: flat before the first size; past the last, along ``slope``, or in whole chunks
    of ``period`` when it is > 0 (params._at)."""
    n = len(xs)
    if x > xs[n - 1]:
        if period > 0.0:
            chunks = np.floor(x / period)
            rest = x - chunks * period
            value = chunks * ys[n - 1]
            if rest > 0.0:
                value += _inside(xs, ys, rest)
            return value
        return ys[n - 1] + slope * (x - xs[n - 1])
    return _inside(xs, ys, x)


@njit
def law_time(xs_all, xs_off, ys, row_off, slope, period, tau_sat, hold, c, nbytes,
             tau):  # pragma: no cover - compiled
    """tau || T^c(m) for channel c, as ``TransmissionLaw.time``."""
    xs = xs_all[xs_off[c]:xs_off[c + 1]]
    width = len(xs)
    base = row_off[c]
    sat = tau_sat[c]
    if tau > sat:
        if hold[c]:
            tau = sat
        else:
            o = _at(xs, ys[base + sat, :width], slope[base + sat], period[base + sat], nbytes)
            s = _at(xs, ys[base + sat + 1, :width], slope[base + sat + 1], period[base + sat + 1], nbytes)
            return o + tau * s
    return _at(xs, ys[base + tau - 1, :width], slope[base + tau - 1], period[base + tau - 1], nbytes)


@njit
def _mark_push(key, ids, off, size, d, mark, j):  # pragma: no cover - compiled
    """Push (mark, j) on domain d's heap of finishing marks (a region of ``key``/``ids`` from ``off[d]``)."""
    base = off[d]
    pos = size[d]
    key[base + pos] = mark
    ids[base + pos] = j
    size[d] = pos + 1
    while pos > 0:
        parent = (pos - 1) >> 1
        if key[base + parent] <= key[base + pos]:
            break
        key[base + parent], key[base + pos] = key[base + pos], key[base + parent]
        ids[base + parent], ids[base + pos] = ids[base + pos], ids[base + parent]
        pos = parent


@njit
def _mark_pop(key, ids, off, size, d):  # pragma: no cover - compiled
    base = off[d]
    j = ids[base]
    n = size[d] - 1
    size[d] = n
    key[base] = key[base + n]
    ids[base] = ids[base + n]
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= n:
            break
        small = left
        if left + 1 < n and key[base + left + 1] < key[base + left]:
            small = left + 1
        if key[base + pos] <= key[base + small]:
            break
        key[base + small], key[base + pos] = key[base + pos], key[base + small]
        ids[base + small], ids[base + pos] = ids[base + pos], ids[base + small]
        pos = small
    return j


@njit
def _simulate(dom, chan_of_dom, nbytes, after_ptr, succ_ptr, succ_idx, src, dst, service, nprocs,
              xs, xs_off, ys, row_off, slope, period, tau_sat, hold, trace):  # pragma: no cover - compiled
    n = len(dom)
    ndom = len(chan_of_dom)
    done = np.zeros(n)
    end = np.zeros(n)
    ready_at = np.zeros(n)
    pending = np.empty(n, np.int64)
    for i in range(n):
        pending[i] = after_ptr[i + 1] - after_ptr[i]
    # per-domain state of the running piece
    tau = np.zeros(ndom, np.int64)
    B0 = np.zeros(ndom)
    t0 = np.zeros(ndom)
    dB = np.zeros(ndom)
    dur = np.zeros(ndom)
    tend = np.zeros(ndom)
    fixed = np.zeros(ndom)  # T(0, tau) of the running piece: what each job ending in it pays once
    version = np.zeros(ndom, np.int64)
    # finishing marks, one heap per domain
    count = np.zeros(ndom, np.int64)
    for i in range(n):
        count[dom[i]] += 1
    off = np.zeros(ndom + 1, np.int64)
    for d in range(ndom):
        off[d + 1] = off[d] + count[d]
    mkey = np.empty(n)
    mid = np.empty(n, np.int64)
    msize = np.zeros(ndom, np.int64)
    # events: piece ends (id = domain, with the version it was scheduled at) and releases (id = ndom + job)
    cap = 4 * n + 4
    ekey = np.empty(cap)
    eid = np.empty(cap, np.int64)
    ever = np.empty(cap, np.int64)
    esize = 0
    recv_free = np.zeros(nprocs)
    ready = np.empty(n, np.int64)  # jobs starting now
    nready = 0
    touched = np.zeros(ndom, np.bool_)
    touched_list = np.empty(ndom, np.int64)
    ntouched = 0
    tcap = 3 * n + 4 if trace else 1
    tr_dom = np.empty(tcap, np.int64)
    tr_tau = np.empty(tcap, np.int64)
    tr_bytes = np.empty(tcap)
    tr_start = np.empty(tcap)
    tr_end = np.empty(tcap)
    tr_cut = np.empty(tcap, np.bool_)
    ntr = 0
    for i in range(n):
        if pending[i] == 0:
            ready[nready] = i
            nready += 1
    t = 0.0
    while True:
        # start every job released now; settle each domain they join once
        k = 0
        while k < nready:
            j = ready[k]
            k += 1
            d = dom[j]
            if not touched[d]:
                touched[d] = True
                touched_list[ntouched] = d
                ntouched += 1
                # settle domain d at time t: a cut (pro rata), or its piece ends now too
                if tau[d] > 0 and t > t0[d]:
                    if t < tend[d] - 1e-12 * tend[d]:
                        B = B0[d] + dB[d] * ((t - t0[d]) / dur[d])
                        if trace:
                            tr_dom[ntr] = d
                            tr_tau[ntr] = tau[d]
                            tr_bytes[ntr] = B - B0[d]
                            tr_start[ntr] = t0[d]
                            tr_end[ntr] = t
                            tr_cut[ntr] = True
                            ntr += 1
                        B0[d] = B
                    else:
                        if trace:
                            tr_dom[ntr] = d
                            tr_tau[ntr] = tau[d]
                            tr_bytes[ntr] = dB[d]
                            tr_start[ntr] = t0[d]
                            tr_end[ntr] = t
                            tr_cut[ntr] = False
                            ntr += 1
                        B0[d] = B0[d] + dB[d]
                        nready, esize = _finish(d, t, fixed[d], B0[d], mkey, mid, off, msize, tau, end, done, service,
                                                dst, src,
                                                recv_free, succ_ptr, succ_idx, ready_at, pending, ready, nready,
                                                ekey, eid, ever, esize, ndom)
                t0[d] = t
            mark = B0[d] + nbytes[j]
            _mark_push(mkey, mid, off, msize, d, mark, j)
            tau[d] += 1
        nready = 0
        for q in range(ntouched):
            d = touched_list[q]
            touched[d] = False
            # start a piece at t from the counter B0[d]
            t0[d] = t
            delta = mkey[off[d]] - B0[d]
            if delta < 0.0:
                delta = 0.0
            dB[d] = delta
            c = chan_of_dom[d]
            fixed[d] = law_time(xs, xs_off, ys, row_off, slope, period, tau_sat, hold, c, 0.0, tau[d])
            span = law_time(xs, xs_off, ys, row_off, slope, period, tau_sat, hold, c, delta, tau[d]) - fixed[d]
            if span < 0.0:
                span = 0.0
            dur[d] = span
            tend[d] = t + span
            version[d] += 1
            ekey[esize] = tend[d]
            eid[esize] = d
            ever[esize] = version[d]
            esize = _event_push(ekey, eid, ever, esize)
        ntouched = 0
        # the next event that still holds
        found = False
        while esize > 0:
            tt, ident, ver, esize = _event_pop(ekey, eid, ever, esize)
            if ident >= ndom:
                t = tt
                ready[nready] = ident - ndom
                nready += 1
                found = True
                # take every release at the same time
                while esize > 0 and ekey[0] == t and eid[0] >= ndom:
                    tt, ident, ver, esize = _event_pop(ekey, eid, ever, esize)
                    ready[nready] = ident - ndom
                    nready += 1
                break
            if ver != version[ident]:
                continue
            t = tt
            d = ident
            found = True
            B = B0[d] + dB[d]
            if trace:
                tr_dom[ntr] = d
                tr_tau[ntr] = tau[d]
                tr_bytes[ntr] = dB[d]
                tr_start[ntr] = t0[d]
                tr_end[ntr] = t
                tr_cut[ntr] = False
                ntr += 1
            nready, esize = _finish(d, t, fixed[d], B, mkey, mid, off, msize, tau, end, done, service, dst, src, recv_free,
                                    succ_ptr, succ_idx, ready_at, pending, ready, nready, ekey, eid, ever, esize, ndom)
            B0[d] = B
            t0[d] = t
            if tau[d] > 0:
                touched[d] = True
                touched_list[ntouched] = d
                ntouched += 1
            else:
                version[d] += 1
            break
        if not found:
            break
        # other domains' pieces ending at this same time are taken by the next turns (their events hold t)
    return done, end, tr_dom[:ntr], tr_tau[:ntr], tr_bytes[:ntr], tr_start[:ntr], tr_end[:ntr], tr_cut[:ntr]


@njit
def _finish(d, t, fixed, B, mkey, mid, off, msize, tau, end, done, service, dst, src, recv_free, succ_ptr,
            succ_idx, ready_at, pending, ready, nready, ekey, eid, ever, esize, ndom):  # pragma: no cover - compiled
    """Domain d's counter reached B at t: the jobs whose mark it passed have moved their bytes and end
    ``fixed`` (T(0, tau) at the concurrency they ended in) later; release what waited for them (then, or
    after a reduction). Returns the new (nready, esize)."""
    limit = B + 1e-12 * B + 1e-9
    t_end = t + fixed
    while msize[d] > 0 and mkey[off[d]] <= limit:
        j = _mark_pop(mkey, mid, off, msize, d)
        end[j] = t_end
        tau[d] -= 1
        fin = t_end
        if service[j] > 0.0:
            r = dst[j]
            if recv_free[r] > fin:
                fin = recv_free[r]
            fin += service[j]
            recv_free[r] = fin
        done[j] = fin
        for e in range(succ_ptr[j], succ_ptr[j + 1]):
            w = succ_idx[e]
            # a wait for an own send sees its end; a wait for a reception sees its reduction too
            when = fin if dst[j] == src[w] else t_end
            if when > ready_at[w]:
                ready_at[w] = when
            pending[w] -= 1
            if pending[w] == 0:
                if ready_at[w] <= t:
                    ready[nready] = w
                    nready += 1
                else:
                    ekey[esize] = ready_at[w]
                    eid[esize] = ndom + w
                    ever[esize] = 0
                    esize = _event_push(ekey, eid, ever, esize)
    return nready, esize


@njit
def _event_push(key, ids, ver, size):  # pragma: no cover - compiled
    """Sift up the entry just written at ``size`` of the (time, id) event heap; returns the new size."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if key[parent] < key[pos] or (key[parent] == key[pos] and ids[parent] <= ids[pos]):
            break
        key[parent], key[pos] = key[pos], key[parent]
        ids[parent], ids[pos] = ids[pos], ids[parent]
        ver[parent], ver[pos] = ver[pos], ver[parent]
        pos = parent
    return size + 1


@njit
def _event_pop(key, ids, ver, size):  # pragma: no cover - compiled
    t, i, v = key[0], ids[0], ver[0]
    size -= 1
    key[0], ids[0], ver[0] = key[size], ids[size], ver[size]
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        small = left
        right = left + 1
        if right < size and (key[right] < key[left] or (key[right] == key[left] and ids[right] < ids[left])):
            small = right
        if key[pos] < key[small] or (key[pos] == key[small] and ids[pos] <= ids[small]):
            break
        key[small], key[pos] = key[pos], key[small]
        ids[small], ids[pos] = ids[pos], ids[small]
        ver[small], ver[pos] = ver[pos], ver[small]
        pos = small
    return t, i, v, size


class DependencyRun(NamedTuple):
    """What the engine gives: per transmission its end and what waiting on it sees (end + reduction), and,
    when traced, the pieces."""

    end_s: np.ndarray
    done_s: np.ndarray
    pieces: dict[str, np.ndarray]


def _compact(domain: np.ndarray, channel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Domain numbers renumbered 0..D-1 (first by value) and the channel of each; O(n) for the small
    numbers :meth:`Platform.contention_domains` gives, a sort otherwise."""
    domain = np.asarray(domain, np.int64)
    top = int(domain.max()) + 1 if len(domain) else 0
    if 0 <= int(domain.min(initial=0)) and top <= 4 * len(domain) + 1024:
        present = np.zeros(top, bool)
        present[domain] = True
        number = np.cumsum(present) - 1
        dom = number[domain]
        ndom = int(present.sum())
    else:
        _, dom = np.unique(domain, return_inverse=True)
        ndom = int(dom.max()) + 1
    chan_of_dom = np.zeros(ndom, np.int64)
    chan_of_dom[dom] = channel
    return dom.astype(np.int64), chan_of_dom


class _Prepared(NamedTuple):
    """What every run of one schedule shares, whatever its sizes: domains, laws, successors."""

    dom: np.ndarray
    chan_of_dom: np.ndarray
    laws: LawArrays
    after_ptr: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    nprocs: int


def _prepare(domain, channel, src, dst, nprocs, after_ptr, after_idx, laws) -> _Prepared:
    n = len(src)
    dom, chan_of_dom = _compact(domain, channel)
    ptr = np.ascontiguousarray(after_ptr, np.int64)
    succ_ptr, succ_idx = successors(ptr, np.ascontiguousarray(after_idx, np.int64), n)
    return _Prepared(dom, chan_of_dom, law_arrays(laws), ptr, succ_ptr, succ_idx,
                     np.ascontiguousarray(src, np.int64), np.ascontiguousarray(dst, np.int64), int(nprocs))


def _run(prep: _Prepared, nbytes: np.ndarray, service_s: np.ndarray | None, trace: bool):
    service = np.zeros(len(prep.src)) if service_s is None else np.ascontiguousarray(service_s, np.float64)
    return _simulate(prep.dom, prep.chan_of_dom, np.ascontiguousarray(nbytes, np.float64), prep.after_ptr,
                     prep.succ_ptr, prep.succ_idx, prep.src, prep.dst, service, prep.nprocs, *prep.laws,
                     bool(trace))


def simulate_dependencies(domain: np.ndarray, channel: np.ndarray, nbytes: np.ndarray, src: np.ndarray,
                          dst: np.ndarray, nprocs: int, after_ptr: np.ndarray, after_idx: np.ndarray,
                          laws: list[TransmissionLaw | None], service_s: np.ndarray | None = None,
                          trace: bool = False) -> DependencyRun:
    """Run a dependency schedule under tau-Lop (module docstring). ``domain``/``channel`` per transmission
    (``PlacedSchedule``); ``laws[c]`` the compiled law of channel c; ``service_s`` the receiver's reduction
    of each transmission (0 where none). Pieces in ``pieces[field]`` for ``TRACE_FIELDS`` (domain numbers
    are the compacted ones; ``pieces['channel']`` gives their channel)."""
    n = len(src)
    if n == 0:
        empty = {f: np.zeros(0) for f in TRACE_FIELDS + ("channel",)}
        return DependencyRun(np.zeros(0), np.zeros(0), empty)
    prep = _prepare(domain, channel, src, dst, nprocs, after_ptr, after_idx, laws)
    out = _run(prep, nbytes, service_s, trace)
    done, end = out[0], out[1]
    pieces = dict(zip(TRACE_FIELDS, out[2:]))
    pieces["channel"] = prep.chan_of_dom[pieces["domain"]]
    return DependencyRun(end, done, pieces)


def sweep_dependencies(domain: np.ndarray, channel: np.ndarray, nbytes: np.ndarray, src: np.ndarray,
                       dst: np.ndarray, nprocs: int, after_ptr: np.ndarray, after_idx: np.ndarray,
                       laws: list[TransmissionLaw | None], factors: np.ndarray,
                       service_of: Callable[[float], np.ndarray | None] | None = None) -> np.ndarray:
    """The last completion of the schedule with every size times each of ``factors`` (a size sweep):
    one event loop per factor, the domains, laws and successors prepared once; large sweeps run their
    factors on all cores (the loop releases the GIL). ``service_of(f)`` gives the receivers' reduction
    times at factor f (None: no reductions)."""
    factors = np.asarray(factors, np.float64)
    if len(src) == 0:
        return np.zeros(len(factors))
    prep = _prepare(domain, channel, src, dst, nprocs, after_ptr, after_idx, laws)
    base = np.asarray(nbytes, np.float64)
    services = [service_of(f) if service_of is not None else None for f in factors.tolist()]

    def last_end(k: int) -> float:
        return float(_run(prep, base * factors[k], services[k], False)[0].max())

    workers = min(len(factors), os.cpu_count() or 1)
    if workers > 1 and len(src) * len(factors) >= PARALLEL_FROM:
        # the compiled loop releases the GIL: one run per factor on each core (same numbers, less wall time)
        with ThreadPoolExecutor(workers) as pool:
            return np.array(list(pool.map(last_end, range(len(factors)))))
    return np.array([last_end(k) for k in range(len(factors))])
