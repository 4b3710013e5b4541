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

The loop is compiled (:mod:`commcost.jit`): an indexed heap of the running
pieces' ends (one entry per busy domain, moved in place when a join or an
end changes the piece, so no stale events), a heap of future releases, one
heap of finishing marks per domain and a table of T^c(0, tau); O(E log E). Each
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
FIXED_TABLE_MAX = 4096  # T^c(0, tau) is tabulated up to this tau, computed beyond


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
def _inside(xs, a, n, ys, r, x):  # pragma: no cover - compiled
    """Row r of a piecewise-linear grid (sizes ``xs[a:a + n]``) at x, flat before the first size (x at most
    the last size)."""
    if x <= xs[a]:
        return ys[r, 0]
    if x >= xs[a + n - 1]:
        return ys[r, n - 1]
    lo, hi = 0, n - 1  # xs[a + lo] <= x < xs[a + hi]
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if xs[a + mid] <= x:
            lo = mid
        else:
            hi = mid
    return ys[r, lo] + (ys[r, hi] - ys[r, lo]) * (x - xs[a + lo]) / (xs[a + hi] - xs[a + lo])


@njit
def _at(xs, a, n, ys, r, slope, period, x):  # pragma: no cover - compiled
    """Row r of a compiled grid at x: flat before the first size; past the last, along ``slope[r]``, or in
    whole chunks of ``period[r]`` when it is > 0 (params._at)."""
    if x > xs[a + n - 1]:
        chunk = period[r]
        if chunk > 0.0:
            chunks = np.floor(x / chunk)
            rest = x - chunks * chunk
            value = chunks * ys[r, n - 1]
            if rest > 0.0:
                value += _inside(xs, a, n, ys, r, rest)
            return value
        return ys[r, n - 1] + slope[r] * (x - xs[a + n - 1])
    return _inside(xs, a, n, ys, r, x)


@njit
def law_time(xs_all, xs_off, ys, row_off, slope, period, tau_sat, hold, c, nbytes,
             tau):  # pragma: no cover - compiled
    """tau || T^c(m) for channel c, as ``TransmissionLaw.time`` (indices into the flat arrays, no views)."""
    a = xs_off[c]
    n = xs_off[c + 1] - a
    base = row_off[c]
    sat = tau_sat[c]
    if tau > sat:
        if hold[c]:
            tau = sat
        else:
            o = _at(xs_all, a, n, ys, base + sat, slope, period, nbytes)
            s = _at(xs_all, a, n, ys, base + sat + 1, slope, period, nbytes)
            return o + tau * s
    return _at(xs_all, a, n, ys, base + tau - 1, slope, period, nbytes)


@njit(inline=True)
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


@njit(inline=True)
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
def _fixed_table(top, xs, xs_off, ys, row_off, slope, period, tau_sat, hold):  # pragma: no cover - compiled
    """T^c(0, tau) for every channel c and tau = 0..top."""
    nchan = len(xs_off) - 1
    table = np.zeros((nchan, top + 1))
    for c in range(nchan):
        for t in range(1, top + 1):
            table[c, t] = law_time(xs, xs_off, ys, row_off, slope, period, tau_sat, hold, c, 0.0, t)
    return table


@njit(inline=True)
def _dom_sift(hk, hd, pos, i):  # pragma: no cover - compiled
    """Restore the (time, domain) heap around slot i after its key changed (up, then down)."""
    while i > 0:
        parent = (i - 1) >> 1
        if hk[parent] < hk[i] or (hk[parent] == hk[i] and hd[parent] <= hd[i]):
            break
        hk[parent], hk[i] = hk[i], hk[parent]
        hd[parent], hd[i] = hd[i], hd[parent]
        pos[hd[i]] = i
        pos[hd[parent]] = parent
        i = parent
    size = pos[-1]
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        small = left
        right = left + 1
        if right < size and (hk[right] < hk[left] or (hk[right] == hk[left] and hd[right] < hd[left])):
            small = right
        if hk[i] < hk[small] or (hk[i] == hk[small] and hd[i] <= hd[small]):
            break
        hk[small], hk[i] = hk[i], hk[small]
        hd[small], hd[i] = hd[i], hd[small]
        pos[hd[i]] = i
        pos[hd[small]] = small
        i = small


@njit(inline=True)
def _dom_set(hk, hd, pos, d, key):  # pragma: no cover - compiled
    """Domain d's running piece ends at ``key`` (insert, or move its entry). ``pos[-1]`` is the heap size."""
    i = pos[d]
    if i < 0:
        i = pos[-1]
        pos[-1] = i + 1
        hd[i] = d
        pos[d] = i
    hk[i] = key
    _dom_sift(hk, hd, pos, i)


@njit(inline=True)
def _dom_remove(hk, hd, pos, d):  # pragma: no cover - compiled
    """Domain d has no running piece: take its entry out of the heap."""
    i = pos[d]
    if i < 0:
        return
    last = pos[-1] - 1
    pos[-1] = last
    pos[d] = -1
    if i != last:
        hk[i] = hk[last]
        hd[i] = hd[last]
        pos[hd[i]] = i
        _dom_sift(hk, hd, pos, i)


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
    # tau in a domain never exceeds its number of transmissions
    fixed_of = _fixed_table(min(max(count.max(), 1), FIXED_TABLE_MAX), xs, xs_off, ys, row_off, slope, period,
                            tau_sat, hold)
    top_tau = fixed_of.shape[1] - 1
    # events: the running pieces' ends (one entry per busy domain, moved when the piece changes) and
    # future releases (time, job)
    hk = np.empty(ndom)
    hd = np.empty(ndom, np.int64)
    pos = np.full(ndom + 1, -1, np.int64)
    pos[-1] = 0
    rkey = np.empty(n + 1)
    rid = np.empty(n + 1, np.int64)
    rsize = 0
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
                        nready, rsize = _finish(d, t, fixed[d], B0[d], mkey, mid, off, msize, tau, end, done, service,
                                                dst, src, recv_free, succ_ptr, succ_idx, ready_at, pending, ready,
                                                nready, rkey, rid, rsize)
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
            if tau[d] <= top_tau:
                fixed[d] = fixed_of[c, tau[d]]
            else:
                fixed[d] = law_time(xs, xs_off, ys, row_off, slope, period, tau_sat, hold, c, 0.0, tau[d])
            span = law_time(xs, xs_off, ys, row_off, slope, period, tau_sat, hold, c, delta, tau[d]) - fixed[d]
            if span < 0.0:
                span = 0.0
            dur[d] = span
            tend[d] = t + span
            _dom_set(hk, hd, pos, d, tend[d])
        ntouched = 0
        # the next event: a piece end (first at equal times, by domain), else every release due then
        if pos[-1] > 0 and (rsize == 0 or hk[0] <= rkey[0]):
            d = hd[0]
            t = hk[0]
            _dom_remove(hk, hd, pos, d)
            B = B0[d] + dB[d]
            if trace:
                tr_dom[ntr] = d
                tr_tau[ntr] = tau[d]
                tr_bytes[ntr] = dB[d]
                tr_start[ntr] = t0[d]
                tr_end[ntr] = t
                tr_cut[ntr] = False
                ntr += 1
            nready, rsize = _finish(d, t, fixed[d], B, mkey, mid, off, msize, tau, end, done, service, dst, src,
                                    recv_free, succ_ptr, succ_idx, ready_at, pending, ready, nready, rkey, rid, rsize)
            B0[d] = B
            t0[d] = t
            if tau[d] > 0:
                touched[d] = True
                touched_list[ntouched] = d
                ntouched += 1
        elif rsize > 0:
            t = rkey[0]
            while rsize > 0 and rkey[0] == t:
                ready[nready] = rid[0]
                nready += 1
                _, _, rsize = _heap_pop(rkey, rid, rsize)
        else:
            break
        # other domains' pieces ending at this same time are taken by the next turns
    return done, end, tr_dom[:ntr], tr_tau[:ntr], tr_bytes[:ntr], tr_start[:ntr], tr_end[:ntr], tr_cut[:ntr]


@njit(inline=True)
def _finish(d, t, fixed, B, mkey, mid, off, msize, tau, end, done, service, dst, src, recv_free, succ_ptr,
            succ_idx, ready_at, pending, ready, nready, rkey, rid, rsize):  # pragma: no cover - compiled
    """Domain d's counter reached B at t: the jobs whose mark it passed have moved their bytes and end
    ``fixed`` (T(0, tau) at the concurrency they ended in) later; release what waited for them (then, or
    after a reduction). Returns the new (nready, rsize)."""
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
                    rsize = _heap_push(rkey, rid, rsize, ready_at[w], w)
    return nready, rsize


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
