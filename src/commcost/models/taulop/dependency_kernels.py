"""The compiled kernels of the tau-Lop dependency engine: the event loop and the law evaluation it calls.

:mod:`.dependency_engine` prepares a schedule (domains, successors, laws as
arrays) and calls :func:`event_loop`, which prices it under paper 000's
rules (section 3) as that module's docstring states them: a transmission
is released once what it waits for has completed, released transmissions
sharing a contention domain progress together (A2: a piece of delta bytes
at concurrency tau lasts tau||T^c(delta) - tau||T^c(0), the fixed cost
tau||T^c(0) paid once when a transmission ends, cut pro rata when a
transmission joins), and domains do not interfere (A3).

Everything here is compiled (:mod:`commcost.jit`; numba caches it on disk,
per module and function): an indexed heap of the running pieces' ends (one
entry per busy domain, moved in place when a join or an end changes the
piece, so no stale events: ``_dom_*``), a heap of future releases (the
heap of :mod:`commcost.models.dependency_timeline`), one heap of finishing
marks per domain (``_mark_*``) and a table of T^c(0, tau) (:func:`fixed_table`);
O(E log E). Each channel's law is passed as flat arrays
(:class:`.dependency_engine.LawArrays`, the compiled grids of
:class:`~.params.TransmissionLaw`) and evaluated by :func:`law_time` as
``TransmissionLaw.time`` does.
"""

from __future__ import annotations

import numpy as np

from commcost.jit import njit
from commcost.models.dependency_timeline import _heap_pop, _heap_push

FIXED_TABLE_MAX = 4096  # T^c(0, tau) is tabulated up to this tau, computed beyond


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


@njit(inline=True)
def mark_heaps(dom, ndom):  # pragma: no cover - compiled
    """Room for one heap of finishing marks per domain, each a region of the keys and ids from ``off[d]`` as
    large as the domain's transmissions: (off, keys, ids, sizes)."""
    n = len(dom)
    count = np.zeros(ndom, np.int64)
    for i in range(n):
        count[dom[i]] += 1
    off = np.zeros(ndom + 1, np.int64)
    for d in range(ndom):
        off[d + 1] = off[d] + count[d]
    return off, np.empty(n), np.empty(n, np.int64), np.zeros(ndom, np.int64)


@njit
def fixed_table(top, xs, xs_off, ys, row_off, slope, period, tau_sat, hold):  # pragma: no cover - compiled
    """T^c(0, tau) for every channel c and tau = 0..top (tau in a domain never exceeds its number of
    transmissions; the event loop computes larger ones, up to ``FIXED_TABLE_MAX``, as it meets them)."""
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


@njit(inline=True)
def _record(tr_dom, tr_tau, tr_bytes, tr_start, tr_end, tr_cut, ntr, d, tau, nbytes, start, end,
            cut):  # pragma: no cover - compiled
    """Trace one piece of domain d (its concurrency, bytes moved, start and end, whether a join cut it);
    returns the number of pieces traced."""
    tr_dom[ntr] = d
    tr_tau[ntr] = tau
    tr_bytes[ntr] = nbytes
    tr_start[ntr] = start
    tr_end[ntr] = end
    tr_cut[ntr] = cut
    return ntr + 1


@njit
def event_loop(dom, chan_of_dom, nbytes, after_ptr, succ_ptr, succ_idx, src, dst, cost, link, rstate, release, xs, xs_off, ys, row_off, slope, period, tau_sat, hold, fixed_of,
               trace):  # pragma: no cover - compiled
    """Price one prepared dependency schedule (module docstring): per transmission its compacted domain
    ``dom``, bytes, sender and receiver, ``cost[0]`` the receiver's reduction time and ``cost[1]`` its hold
    on the receiver's port, ``link[0]`` the reception its receiver takes just before it (-1: any) and
    ``link[1]`` the inverse, the earliest time it may start ``release`` (0: when its waits allow) and the
    CSR lists of what it waits for (``after_ptr``) and what waits for it (``succ_ptr``/``succ_idx``);
    ``rstate[0]`` and ``rstate[1]`` each rank's receiving port and processor: when its last reception so
    far was in and done (updated in place; -inf: none); ``chan_of_dom`` each domain's channel; then the
    :class:`.dependency_engine.LawArrays` fields and ``fixed_of[c, tau]`` = T^c(0, tau) (:func:`fixed_table`:
    computed once per schedule, not per run). Returns (done, end, port) per transmission (port: when its
    receiver's port let it in) and the traced pieces' (domain, tau, nbytes, start, end, cut) arrays, empty
    unless ``trace``."""
    n = len(dom)
    ndom = len(chan_of_dom)
    tx = np.zeros((3, n))  # per transmission: END (bytes moved), DONE (its receiver done with it), PORT (in)
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
    off, mkey, mid, msize = mark_heaps(dom, ndom)
    top_tau = fixed_of.shape[1] - 1  # T^c(0, tau) tabulated up to here, computed beyond
    # events: the running pieces' ends (one entry per busy domain, moved when the piece changes) and
    # future releases (time, job)
    hk = np.empty(ndom)
    hd = np.empty(ndom, np.int64)
    pos = np.full(ndom + 1, -1, np.int64)
    pos[-1] = 0
    rkey = np.empty(n + 1)
    rid = np.empty(n + 1, np.int64)
    rsize = 0
    flag = np.zeros((2, n), np.bool_)  # TAKEN by its receiver; PARKED: in before the one ordered before it
    batch = np.empty(n, np.int64)  # the jobs one piece end finishes
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
        ready_at[i] = release[i]
        if pending[i] == 0:
            if release[i] > 0.0:
                rsize = _heap_push(rkey, rid, rsize, release[i], i)
            else:
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
                            ntr = _record(tr_dom, tr_tau, tr_bytes, tr_start, tr_end, tr_cut, ntr, d, tau[d],
                                          B - B0[d], t0[d], t, True)
                        B0[d] = B
                    else:
                        if trace:
                            ntr = _record(tr_dom, tr_tau, tr_bytes, tr_start, tr_end, tr_cut, ntr, d, tau[d],
                                          dB[d], t0[d], t, False)
                        B0[d] = B0[d] + dB[d]
                        nready, rsize = _finish(d, t, fixed[d], B0[d], mkey, mid, off, msize, tau, tx, cost, link, flag,
                                                dst, src, rstate, succ_ptr, succ_idx, ready_at, pending, ready, nready,
                                                rkey, rid, rsize, batch)
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
                ntr = _record(tr_dom, tr_tau, tr_bytes, tr_start, tr_end, tr_cut, ntr, d, tau[d], dB[d], t0[d], t,
                              False)
            nready, rsize = _finish(d, t, fixed[d], B, mkey, mid, off, msize, tau, tx, cost, link, flag, dst, src,
                                    rstate, succ_ptr, succ_idx, ready_at, pending, ready, nready, rkey, rid, rsize,
                                    batch)
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
    return tx[DONE], tx[END], tx[PORT], tr_dom[:ntr], tr_tau[:ntr], tr_bytes[:ntr], tr_start[:ntr], tr_end[:ntr], tr_cut[:ntr]


@njit(inline=True)
def _release(w, when, t, ready_at, pending, ready, nready, rkey, rid, rsize):  # pragma: no cover - compiled
    """One wait of w completed at ``when`` (engine time ``t``): w starts now or later once none is left.
    Returns the new (nready, rsize)."""
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


END, DONE, PORT = 0, 1, 2  # rows of the per-transmission times
TAKEN, PARKED = 0, 1  # rows of the per-transmission flags


@njit(inline=True)
def _receive(j, tx, cost, flag, dst, rstate):  # pragma: no cover - compiled
    """The receiver of j takes it (its bytes in at END): its port lets it in at
    PORT = max(END, the port's last + hold), its processor is done with it at
    DONE = max(PORT, its last done) + reduction. Returns DONE."""
    r = dst[j]
    e = rstate[0, r] + cost[1, j]
    if tx[END, j] > e:
        e = tx[END, j]
    rstate[0, r] = e
    tx[PORT, j] = e
    fin = rstate[1, r]
    if e > fin:
        fin = e
    fin += cost[0, j]
    rstate[1, r] = fin
    tx[DONE, j] = fin
    flag[TAKEN, j] = True
    return fin


@njit(inline=True)
def _take(j, t, tx, cost, flag, dst, src, rstate, succ_ptr, succ_idx, ready_at, pending, ready, nready, rkey, rid,
          rsize):  # pragma: no cover - compiled
    """:func:`_receive` j, then release what waited for the reception (its own sends' waiters were released when
    it ended). Returns (nready, rsize)."""
    fin = _receive(j, tx, cost, flag, dst, rstate)
    for k in range(succ_ptr[j], succ_ptr[j + 1]):
        w = succ_idx[k]
        if dst[j] == src[w]:  # a wait for a reception sees its completion (and reduction)
            nready, rsize = _release(w, fin, t, ready_at, pending, ready, nready, rkey, rid, rsize)
    return nready, rsize


@njit(inline=True)
def _finish(d, t, fixed, B, mkey, mid, off, msize, tau, tx, cost, link, flag, dst, src, rstate, succ_ptr, succ_idx,
            ready_at, pending, ready, nready, rkey, rid, rsize, batch):  # pragma: no cover - compiled
    """Domain d's counter reached B at t: the jobs whose mark it passed have moved their bytes and end
    ``fixed`` (T(0, tau) at the concurrency they ended in) later; their receivers take them in transmission
    order (now, or, for a reception ordered after one not taken yet, when that one is); release what waited
    for them, as sends at their end, as receptions at their completion. ``batch``: scratch space. Returns
    the new (nready, rsize)."""
    limit = B + 1e-12 * B + 1e-9
    t_end = t + fixed
    count = 0
    while msize[d] > 0 and mkey[off[d]] <= limit:
        batch[count] = _mark_pop(mkey, mid, off, msize, d)
        count += 1
    if count > 1:
        batch[:count] = np.sort(batch[:count])  # ends at one time: taken in transmission order
    for q in range(count):
        j = batch[q]
        tx[END, j] = t_end
        tau[d] -= 1
        k = link[0, j]
        parked = k >= 0 and not flag[TAKEN, k]
        fin = t_end
        if parked:
            flag[PARKED, j] = True
        else:
            fin = _receive(j, tx, cost, flag, dst, rstate)
        for e in range(succ_ptr[j], succ_ptr[j + 1]):
            w = succ_idx[e]
            if dst[j] != src[w]:  # a wait for an own send sees its end
                nready, rsize = _release(w, t_end, t, ready_at, pending, ready, nready, rkey, rid, rsize)
            elif not parked:  # a wait for a reception sees its completion (and reduction)
                nready, rsize = _release(w, fin, t, ready_at, pending, ready, nready, rkey, rid, rsize)
        if parked:
            continue
        k = link[1, j]
        while k >= 0 and flag[PARKED, k]:  # receptions ordered after it that arrived first
            flag[PARKED, k] = False
            nready, rsize = _take(k, t, tx, cost, flag, dst, src, rstate, succ_ptr, succ_idx, ready_at, pending,
                                  ready, nready, rkey, rid, rsize)
            k = link[1, k]
    return nready, rsize
