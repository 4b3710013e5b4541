"""tau-Lop's event loop walked once for many parameter sets of one schedule: a fit's finite differences.

A fit of tau-Lop to collective timings (:mod:`commcost.calibration.fit_from_collectives`)
prices each training schedule at theta and at theta + h e_j for every
parameter j that can move it. The sets share the schedule, its domains and
its waits; they differ in the laws T^c(m, tau), the receivers' holds and
the reductions. :func:`event_loop_columns` runs :func:`.dependency_kernels.event_loop`'s
rules (paper 000 section 3, A1-A3, as :mod:`.dependency_engine` states them)
with one column of times per set, its control (which event comes next,
which jobs a piece end finishes, which receptions wait) taken from the
first set. That control is another set's own only where its times order
the events alike, so each column is checked as the walk goes and flagged
where its own run could part ways:

* the events (piece ends, releases) come in the same order, with ties
  exactly where the first set has them;
* a job that joins a domain cuts its running piece, or meets its end, in
  every set alike, and moves it, or finds it at its start, alike;
* a released job starts at once, or waits for its release time, alike;
* the jobs a piece end finishes are, in every set, the jobs its own run
  would finish there: the piece ran to the least mark among them, and none
  left running was passed.

A flagged column is priced again alone (:func:`statistics_columns`); every
other column holds the numbers its own run gives, to the last bit: the
same operations on the same values in the same order.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from commcost.jit import njit
from commcost.models.dependency_timeline import _heap_pop, _heap_push
from commcost.models.taulop.dependency_kernels import (_dom_remove, _dom_set, _mark_pop, _mark_push, law_time,
                                                       mark_heaps)

END, DONE, PORT = 0, 1, 2  # rows of the per-transmission times (as .dependency_kernels)


@njit(inline=True)
def _advance(now, new, ok, tie):  # pragma: no cover - compiled
    """Every column's time moves to ``new``: flag a column whose event does not come next in its own order
    (``tie``: the first set's event is at the same time as the last one, so every set's must be too)."""
    for q in range(len(now)):
        if tie:
            if new[q] != now[q]:
                ok[q] = False
        elif not new[q] > now[q]:
            ok[q] = False
        now[q] = new[q]


@njit(inline=True)
def _release(w, when, now, ok, ready_at, pending, ready, nready, rkey, rid, rsize):  # pragma: no cover - compiled
    """One wait of w completed at ``when`` (per column, the engine at ``now``): as the single-set loop's
    ``_release``, its start now or at its release time decided by the first set and checked in the others."""
    for q in range(len(now)):
        if when[q] > ready_at[w, q]:
            ready_at[w, q] = when[q]
    pending[w] -= 1
    if pending[w] == 0:
        start_now = ready_at[w, 0] <= now[0]
        for q in range(1, len(now)):
            if (ready_at[w, q] <= now[q]) != start_now:
                ok[q] = False
        if start_now:
            ready[nready] = w
            nready += 1
        else:
            rsize = _heap_push(rkey, rid, rsize, ready_at[w, 0], w)
    return nready, rsize


@njit(inline=True)
def _receive(j, tx, cost, flag, dst, rstate, fin):  # pragma: no cover - compiled
    """The receiver of j takes it, in every column (the single-set loop's ``_receive``); ``fin`` gets when it is
    done with it."""
    r = dst[j]
    for q in range(tx.shape[2]):
        e = rstate[0, r, q] + cost[1, j, q]
        if tx[END, j, q] > e:
            e = tx[END, j, q]
        rstate[0, r, q] = e
        tx[PORT, j, q] = e
        f = rstate[1, r, q]
        if e > f:
            f = e
        f += cost[0, j, q]
        rstate[1, r, q] = f
        tx[DONE, j, q] = f
        fin[q] = f
    flag[0, j] = True


@njit(inline=True)
def _take(j, now, ok, tx, cost, flag, dst, src, rstate, succ_ptr, succ_idx, ready_at, pending, ready, nready, rkey,
          rid, rsize, fin):  # pragma: no cover - compiled
    """:func:`_receive` j, then release what waited for the reception. Returns (nready, rsize)."""
    _receive(j, tx, cost, flag, dst, rstate, fin)
    for k in range(succ_ptr[j], succ_ptr[j + 1]):
        w = succ_idx[k]
        if dst[j] == src[w]:
            nready, rsize = _release(w, fin, now, ok, ready_at, pending, ready, nready, rkey, rid, rsize)
    return nready, rsize


@njit
def _finish(d, now, ok, fixed, B, mkey, mid, marks, off, msize, joined, finishes, passed, top, tau, tx, cost,
            link, flag, dst, src, rstate, succ_ptr, succ_idx, ready_at, pending, ready, nready, rkey, rid, rsize,
            batch, scratch):  # pragma: no cover - compiled
    """Domain d's counters reached ``B`` (per column): the jobs whose mark the first set's passed end
    ``fixed`` later (the single-set loop's ``_finish``); a column is flagged where its own marks would end
    other jobs here (the piece did not run to its least mark among them, or one ended at an earlier end of
    the domain or is passed and left running). Returns (nready, rsize)."""
    ncol = len(now)
    limit = B[0] + 1e-12 * B[0] + 1e-9
    count = 0
    while msize[d] > 0 and mkey[off[d]] <= limit:
        batch[count] = _mark_pop(mkey, mid, off, msize, d)
        count += 1
    for q in range(1, ncol):
        lim = B[q] + 1e-12 * B[q] + 1e-9
        least = marks[top[d], q]
        for p in range(count):
            j = batch[p]
            m = marks[j, q]
            if m > lim or m < least or (joined[j] < finishes[d] and not m > passed[d, q]):
                ok[q] = False
        passed[d, q] = lim
    finishes[d] += 1
    if count > 1:
        batch[:count] = np.sort(batch[:count])
    t_end = scratch[0]
    fin = scratch[1]
    for q in range(ncol):
        t_end[q] = now[q] + fixed[d, q]
    for p in range(count):
        j = batch[p]
        for q in range(ncol):
            tx[END, j, q] = t_end[q]
        tau[d] -= 1
        k = link[0, j]
        parked = k >= 0 and not flag[0, k]
        if parked:
            flag[1, j] = True
        else:
            _receive(j, tx, cost, flag, dst, rstate, fin)
        for e in range(succ_ptr[j], succ_ptr[j + 1]):
            w = succ_idx[e]
            if dst[j] != src[w]:
                nready, rsize = _release(w, t_end, now, ok, ready_at, pending, ready, nready, rkey, rid, rsize)
            elif not parked:
                nready, rsize = _release(w, fin, now, ok, ready_at, pending, ready, nready, rkey, rid, rsize)
        if parked:
            continue
        k = link[1, j]
        while k >= 0 and flag[1, k]:
            flag[1, k] = False
            nready, rsize = _take(k, now, ok, tx, cost, flag, dst, src, rstate, succ_ptr, succ_idx, ready_at,
                                  pending, ready, nready, rkey, rid, rsize, scratch[2])
            k = link[1, k]
    return nready, rsize


@njit(inline=True)
def _piece(d, q, t, B0, t0, dB, dur, tend, fixed, tau, chan_of_dom, fixed_of, top_tau, start, xs, xs_off, ys,
           row_off, slope, period, tau_sat, hold):  # pragma: no cover - compiled
    """Column q of domain d starts a piece at t from its counter towards the mark ``start`` (the single-set
    loop's piece start, on set q's laws)."""
    t0[d, q] = t
    delta = start - B0[d, q]
    if delta < 0.0:
        delta = 0.0
    dB[d, q] = delta
    c = chan_of_dom[d]
    if tau[d] <= top_tau:
        fixed[d, q] = fixed_of[q, c, tau[d]]
    else:
        fixed[d, q] = law_time(xs, xs_off, ys[q], row_off, slope[q], period[q], tau_sat, hold, c, 0.0, tau[d])
    span = law_time(xs, xs_off, ys[q], row_off, slope[q], period[q], tau_sat, hold, c, delta, tau[d]) - fixed[d, q]
    if span < 0.0:
        span = 0.0
    dur[d, q] = span
    tend[d, q] = t + span


@njit
def event_loop_columns(dom, chan_of_dom, nbytes, after_ptr, succ_ptr, succ_idx, src, dst, nprocs, cost, link, xs,
                       xs_off, ys, row_off, slope, period, tau_sat, hold, fixed_of):  # pragma: no cover - compiled
    """:func:`.dependency_kernels.event_loop` of one prepared schedule (every rank idle at 0, released by its
    waits alone, not traced) for C parameter sets at once: ``cost[:, :, q]``, ``ys[q]``, ``slope[q]``,
    ``period[q]`` and ``fixed_of[q]`` set q's (the sizes of the laws' grids and their rows shared). Returns
    (done, end) per transmission and set, and per set whether its column is its own run's (module docstring);
    the first set's always is."""
    n = len(dom)
    ndom = len(chan_of_dom)
    ncol = cost.shape[2]
    tx = np.zeros((3, n, ncol))
    ready_at = np.zeros((n, ncol))
    pending = np.empty(n, np.int64)
    for i in range(n):
        pending[i] = after_ptr[i + 1] - after_ptr[i]
    tau = np.zeros(ndom, np.int64)
    B0 = np.zeros((ndom, ncol))
    t0 = np.zeros((ndom, ncol))
    dB = np.zeros((ndom, ncol))
    dur = np.zeros((ndom, ncol))
    tend = np.zeros((ndom, ncol))
    fixed = np.zeros((ndom, ncol))
    top = np.zeros(ndom, np.int64)  # the job whose mark the running piece runs to (the first set's least)
    finishes = np.zeros(ndom, np.int64)  # piece ends so far, per domain
    passed = np.full((ndom, ncol), -np.inf)  # the last piece end's limit: marks at or below it ended then
    joined = np.zeros(n, np.int64)  # the domain's piece ends before the job joined
    off, mkey, mid, msize = mark_heaps(dom, ndom)  # the first set's marks, a heap per domain
    marks = np.empty((n, ncol))  # every set's mark of each job
    top_tau = fixed_of.shape[2] - 1
    hk = np.empty(ndom)
    hd = np.empty(ndom, np.int64)
    pos = np.full(ndom + 1, -1, np.int64)
    pos[-1] = 0
    rkey = np.empty(n + 1)
    rid = np.empty(n + 1, np.int64)
    rsize = 0
    flag = np.zeros((2, n), np.bool_)
    batch = np.empty(n, np.int64)
    ready = np.empty(n, np.int64)
    nready = 0
    touched = np.zeros(ndom, np.bool_)
    touched_list = np.empty(ndom, np.int64)
    ntouched = 0
    rstate = np.full((2, nprocs, ncol), -np.inf)
    ok = np.ones(ncol, np.bool_)
    now = np.zeros(ncol)
    new = np.zeros(ncol)
    scratch = np.zeros((3, ncol))
    Bq = np.zeros(ncol)
    for i in range(n):
        if pending[i] == 0:
            ready[nready] = i
            nready += 1
    t = 0.0
    while True:
        k = 0
        while k < nready:
            j = ready[k]
            k += 1
            d = dom[j]
            if not touched[d]:
                touched[d] = True
                touched_list[ntouched] = d
                ntouched += 1
                if tau[d] > 0:
                    moved = t > t0[d, 0]
                    for q in range(1, ncol):
                        if (now[q] > t0[d, q]) != moved:
                            ok[q] = False
                    if moved:
                        cut = t < tend[d, 0] - 1e-12 * tend[d, 0]
                        for q in range(1, ncol):
                            if (now[q] < tend[d, q] - 1e-12 * tend[d, q]) != cut:
                                ok[q] = False
                        if cut:
                            for q in range(ncol):
                                if dur[d, q] > 0.0:
                                    B0[d, q] = B0[d, q] + dB[d, q] * ((now[q] - t0[d, q]) / dur[d, q])
                                else:
                                    B0[d, q] = B0[d, q] + dB[d, q]
                        else:
                            for q in range(ncol):
                                B0[d, q] = B0[d, q] + dB[d, q]
                                Bq[q] = B0[d, q]
                            nready, rsize = _finish(d, now, ok, fixed, Bq, mkey, mid, marks, off, msize, joined,
                                                    finishes, passed, top, tau, tx, cost, link, flag, dst, src,
                                                    rstate, succ_ptr, succ_idx, ready_at, pending, ready, nready,
                                                    rkey, rid, rsize, batch, scratch)
                for q in range(ncol):
                    t0[d, q] = now[q]
            for q in range(ncol):
                marks[j, q] = B0[d, q] + nbytes[j]
            joined[j] = finishes[d]
            _mark_push(mkey, mid, off, msize, d, marks[j, 0], j)
            tau[d] += 1
        nready = 0
        for p in range(ntouched):
            d = touched_list[p]
            touched[d] = False
            top[d] = mid[off[d]]
            for q in range(ncol):
                _piece(d, q, now[q], B0, t0, dB, dur, tend, fixed, tau, chan_of_dom, fixed_of, top_tau,
                       marks[top[d], q], xs, xs_off, ys, row_off, slope, period, tau_sat, hold)
            _dom_set(hk, hd, pos, d, tend[d, 0])
        ntouched = 0
        if pos[-1] > 0 and (rsize == 0 or hk[0] <= rkey[0]):
            d = hd[0]
            tie = hk[0] == t
            t = hk[0]
            for q in range(ncol):
                new[q] = tend[d, q]
            _advance(now, new, ok, tie)
            _dom_remove(hk, hd, pos, d)
            for q in range(ncol):
                Bq[q] = B0[d, q] + dB[d, q]
            nready, rsize = _finish(d, now, ok, fixed, Bq, mkey, mid, marks, off, msize, joined, finishes, passed,
                                    top, tau, tx, cost, link, flag, dst, src, rstate, succ_ptr, succ_idx, ready_at,
                                    pending, ready, nready, rkey, rid, rsize, batch, scratch)
            for q in range(ncol):
                B0[d, q] = Bq[q]
                t0[d, q] = now[q]
            if tau[d] > 0:
                touched[d] = True
                touched_list[ntouched] = d
                ntouched += 1
        elif rsize > 0:
            tie = rkey[0] == t
            t = rkey[0]
            first = rid[0]
            for q in range(ncol):
                new[q] = ready_at[first, q]
            _advance(now, new, ok, tie)
            while rsize > 0 and rkey[0] == t:
                w = rid[0]
                for q in range(ncol):
                    if ready_at[w, q] != now[q]:
                        ok[q] = False
                ready[nready] = w
                nready += 1
                _, _, rsize = _heap_pop(rkey, rid, rsize)
        else:
            break
    return tx[DONE], tx[END], ok


_STACKED: dict[tuple, tuple] = {}  # the last sets' laws stacked (a fit's step prices every point with the same sets)


def _stacked(flats: list, width: int) -> tuple | None:
    """The sets' flattened laws as the columns' arrays (ys, slope, period, T^c(0, tau) up to ``width`` - 1),
    None where their grids differ; kept for the same flattened laws and width."""
    from commcost.models.taulop.dependency_engine import _keep, fixed_of_laws

    key = (tuple(id(f) for f in flats), width)
    hit = _STACKED.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], flats)):
        return hit[1]
    base = flats[0]
    same = all(np.array_equal(f.xs, base.xs) and np.array_equal(f.xs_off, base.xs_off)
               and np.array_equal(f.row_off, base.row_off) and f.ys.shape == base.ys.shape
               and np.array_equal(f.tau_sat, base.tau_sat) and np.array_equal(f.hold, base.hold) for f in flats[1:])
    arrays = None if not same else (np.stack([f.ys for f in flats]), np.stack([f.slope for f in flats]),
                                    np.stack([f.period for f in flats]),
                                    np.stack([fixed_of_laws(f, width - 1)[:, :width] for f in flats]))
    _keep(_STACKED, key, (list(flats), arrays))  # the laws held too, so their ids stay theirs
    return arrays


def statistics_columns(models: Sequence, placed, statistic: str, queues: bool) -> np.ndarray | None:
    """``[m.statistic_s(placed, statistic) for m in models]`` for tau-Lop models of one configuration, the same
    numbers, the schedule walked once for all (:func:`event_loop_columns`) and only the sets whose walk could
    part ways priced again alone; None where the walk does not apply (a schedule without waits, laws on
    other grids: price them one at a time). ``queues``: whether a receiver's port can delay a reception (each
    set's holds priced then, as its own run does)."""
    from commcost.models.parameter_sets import _statistics
    from commcost.models.taulop.dependency_engine import law_arrays, prepare

    s = placed.schedule
    first = models[0]
    if not s.has_dependencies or statistic not in ("max", "", "mean", "min", "rank0") or s.ntransmissions == 0 \
            or any((m.fold, m.fold_from) != (first.fold, first.fold_from) for m in models):
        return None
    laws = [m.laws_for(placed) for m in models]
    flats = [law_arrays(law) for law in laws]
    fold = first._fold(placed)
    keep, src, dst, nprocs, after_ptr, after_idx = first._engine_view(placed, fold)
    prep = prepare(placed.domain[keep], placed.channel[keep], src, dst, nprocs, after_ptr, after_idx,
                   laws[0], s.recv_prev if fold is None else fold.recv_prev, holder=placed,
                   key=first.prepared_key(fold))
    stacked = _stacked(flats, prep.fixed_top + 1)
    if stacked is None:
        return None
    ys, slope, period, fixed_of = stacked
    n, ncol = len(prep.src), len(models)
    cost = np.zeros((2, n, ncol))
    services: dict = {}  # each set's reductions and receive holds, made once for the sets that price them alike:
    holds: dict = {}  # the same reduction law, the same compiled laws (a fit's sets share those of the tables
    for q, m in enumerate(models):  # they leave alone, commcost.calibration.fit_pricer.Pricer._share_laws)
        r = m.reduction
        key = None if r is None else (r.m.tobytes(), r.time_s.tobytes(), r.beyond_m)
        if key not in services:
            services[key] = m.reduction_service_s(s)
        if services[key] is not None:
            cost[0, :, q] = services[key][keep]
        if queues:
            key = tuple(map(id, laws[q]))
            if key not in holds:
                holds[key] = m.receive_occupancy_s(placed)[keep]
            cost[1, :, q] = holds[key]
    succ_ptr, succ_idx = prep.succ
    base = flats[0]
    done, end, ok = event_loop_columns(prep.dom, prep.chan_of_dom, np.ascontiguousarray(s.nbytes[keep], np.float64),
                                       prep.after_ptr, succ_ptr, succ_idx, prep.src, prep.dst, prep.nprocs, cost,
                                       prep.recv_links, base.xs, base.xs_off, ys, base.row_off, slope, period,
                                       base.tau_sat, base.hold, fixed_of)
    if fold is not None:
        end, done = end[fold.rep], done[fold.rep]
    out = _statistics(s, end, done, statistic)
    for q in np.flatnonzero(~ok).tolist():  # a walk that could part ways from its own: priced alone
        out[q] = models[q].statistic_s(placed, statistic)
    return out
