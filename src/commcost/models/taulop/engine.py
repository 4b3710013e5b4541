"""The exact tau-Lop engine: event-driven, O(E log E) in the number of jobs.

Rules (paper 000 section 3):

* A2: transmissions sharing a channel's contention domain progress
  together, each moving the same number of bytes, at the cost of tau||T^c
  where tau is how many are active; when the shortest ends the others go
  on with what is left as a new piece, T^c(m1) || T^c(m2) =
  2||T^c(m1) + T^c(m2 - m1).
* A3: transmissions in different domains do not interfere.
* A1 is applied before the engine runs (:mod:`.jobs`).

Every piece, the time between two changes of a domain's active set, costs
tau||T^c(delta) = o^c(delta) + sum_k L^k(delta, tau) for the delta bytes
it moves, as the paper's algebra prices each term. A piece that starts
with a zero-byte transmission still costs T^c(0, tau).

When a transmission joins a domain in the middle of a piece (it was
waiting for its rank's previous send, on another channel), the running
piece is cut pro rata: the active transmissions have moved the fraction of
the piece's bytes equal to the fraction of its time that has passed; the
rest continues as a new piece at the new concurrency. The paper does not
cover this case; it is where the exact engine and the paper's shortcut of
eq. 5-7 part ways (paper 000 eq. 8).

A domain keeps one byte counter B shared by all its active jobs, and each
job's finishing mark B_join + m in a heap, so an event costs O(log E).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from commcost.models.taulop.jobs import PhaseJobs
from commcost.models.taulop.params import TransmissionLaw


@dataclass
class Piece:
    """One interval of a domain: ``tau`` jobs moved ``nbytes`` each between ``start_s`` and ``end_s``."""

    domain: int
    channel: int
    tau: int
    nbytes: float
    start_s: float
    end_s: float
    cut: bool = False  # ended early because a job joined


@dataclass
class PhaseResult:
    """Job end times (seconds after the phase starts) and, when asked for, the pieces."""

    job_end_s: np.ndarray
    pieces: list[Piece] = field(default_factory=list)


def simulate_phase(
    jobs: PhaseJobs, laws: list[TransmissionLaw], trace: bool = False, fast: bool = True
) -> PhaseResult:
    """Run one phase; ``laws[c]`` prices channel c. ``fast`` allows the vectorized staircase."""
    if jobs.njobs == 0:
        return PhaseResult(np.zeros(0))
    if fast and jobs.all_start_together:
        return _staircase(jobs, laws, trace)
    return _events(jobs, laws, trace)


def _staircase(jobs: PhaseJobs, laws: list[TransmissionLaw], trace: bool) -> PhaseResult:
    """All jobs start at once: per domain, sort by size and sum the A2 staircase, vectorized."""
    job_end, steps = staircase(jobs.domain, jobs.channel, jobs.nbytes, laws)
    pieces = []
    if trace:
        dom, chan, tau, delta, start, end, charged = steps
        for i in np.flatnonzero(charged):
            pieces.append(Piece(int(dom[i]), int(chan[i]), int(tau[i]), float(delta[i]),
                                float(start[i]), float(end[i])))
    return PhaseResult(job_end, pieces)


class _Steps(NamedTuple):
    """Jobs sorted by (group, size), each with the piece it opens: tau jobs moving ``delta`` more bytes."""

    order: np.ndarray  # sorted position -> job
    group: np.ndarray
    channel: np.ndarray
    group_start: np.ndarray  # first job of its group
    start_idx: np.ndarray  # sorted position of each group's first job
    gid: np.ndarray  # group number of each sorted job
    tau: np.ndarray
    delta: np.ndarray
    charged: np.ndarray  # the piece is priced: a group's first, or one that moves bytes


def _steps(group: np.ndarray, channel: np.ndarray, nbytes: np.ndarray) -> _Steps:
    """The staircase of jobs that all start at once (paper 000 eq. 5-7): inside a group, sorted by size,
    job k of n opens the piece (n - k)||T(m_k - m_{k-1})."""
    order = np.lexsort((nbytes, group))
    dom, size, chan = group[order], nbytes[order], channel[order]
    n = len(order)
    group_start = np.ones(n, dtype=bool)
    group_start[1:] = dom[1:] != dom[:-1]
    start_idx = np.flatnonzero(group_start)
    gid = np.cumsum(group_start) - 1
    ends = np.empty(len(start_idx), np.int64)
    ends[:-1] = start_idx[1:]
    if len(ends):
        ends[-1] = n
    tau = (ends - start_idx)[gid] - (np.arange(n) - start_idx[gid])
    delta = size.copy()
    delta[1:] -= size[:-1]
    delta[group_start] = size[group_start]
    return _Steps(order, dom, chan, group_start, start_idx, gid, tau, delta, group_start | (delta > 0))


def staircase(group: np.ndarray, channel: np.ndarray, nbytes: np.ndarray, laws: list[TransmissionLaw]):
    """End times of jobs that all start at once, A2 within each ``group`` (a contention domain).

    Sorted by size inside a group, job k (of n) ends after the pieces
    tau||T(m_i - m_{i-1}) for i <= k with tau = n - i + 1: the paper's
    staircase T(m1)||...||T(mn) = n||T(m1) + (n-1)||T(m2 - m1) + ...
    (paper 000 eq. 5-7, exact when all start together). Returns the end
    times and the pieces (group, channel, tau, delta, start, end, charged).
    """
    st = _steps(group, channel, nbytes)
    cost = np.zeros(len(st.order))
    for c in np.unique(st.channel[st.charged]):
        sel = st.charged & (st.channel == c)
        cost[sel] = laws[c].times(st.delta[sel], st.tau[sel])
    cum = np.cumsum(cost)
    end_sorted = cum - (cum[st.start_idx] - cost[st.start_idx])[st.gid]
    job_end = np.empty(len(st.order))
    job_end[st.order] = end_sorted
    return job_end, (st.group, st.channel, st.tau, st.delta, end_sorted - cost, end_sorted, st.charged)


def staircase_phase_times(group: np.ndarray, phase: np.ndarray, channel: np.ndarray, nbytes: np.ndarray,
                          laws: list[TransmissionLaw], scale: np.ndarray, nphases: int) -> np.ndarray:
    """``(K, nphases)``: each phase's last end, for jobs that all start at once, sizes times each factor.

    The same staircase as :func:`staircase` (a group's last job ends after
    the sum of its pieces tau||T(delta)), but only what a total needs: the
    pieces are priced once per distinct (channel, tau, delta), however many
    groups share them (the nodes of a regular collective repeat each
    other), and each phase keeps its slowest group. A positive factor does
    not change the sort, so one sort serves every factor. ``group`` must
    number groups so that a group lies in one ``phase``.
    """
    factors = np.asarray(scale, dtype=np.float64)
    out = np.zeros((len(factors), nphases))
    if not len(group):
        return out
    st = _steps(group, channel, nbytes)
    p_chan, p_tau, p_delta = st.channel[st.charged], st.tau[st.charged], st.delta[st.charged]
    # distinct pieces: sort by (channel, tau, delta) and cut where any changes
    by = np.lexsort((p_delta, p_tau, p_chan))
    new = np.ones(len(by), dtype=bool)
    sc, stau, sd = p_chan[by], p_tau[by], p_delta[by]
    new[1:] = (sc[1:] != sc[:-1]) | (stau[1:] != stau[:-1]) | (sd[1:] != sd[:-1])
    first = by[new]
    inverse = np.empty(len(by), dtype=np.int64)
    inverse[by] = np.cumsum(new) - 1
    u_chan, u_tau, u_delta = p_chan[first], p_tau[first], p_delta[first]
    cost = np.empty((len(first), len(factors)))
    for c in np.unique(u_chan).tolist():
        sel = u_chan == c
        d = u_delta[sel][:, None] * factors[None, :]
        cost[sel] = laws[c].times(d, np.broadcast_to(u_tau[sel][:, None], d.shape)).reshape(d.shape)
    # each group's total: its pieces, in order, are consecutive
    piece_group_start = np.flatnonzero(st.group_start[st.charged])
    group_total = np.add.reduceat(cost[inverse], piece_group_start, axis=0)
    group_phase = phase[st.order][st.start_idx]
    phase_new = np.ones(len(group_phase), dtype=bool)
    phase_new[1:] = group_phase[1:] != group_phase[:-1]
    phase_first = np.flatnonzero(phase_new)
    out[:, group_phase[phase_first]] = np.maximum.reduceat(group_total, phase_first, axis=0).T
    return out


def _events(jobs: PhaseJobs, laws: list[TransmissionLaw], trace: bool) -> PhaseResult:
    """General case: chains of jobs; an event loop over piece ends and joins."""
    dom_keys, job_dom_arr = np.unique(jobs.domain, return_inverse=True)
    ndom = len(dom_keys)
    job_dom = job_dom_arr.tolist()
    size = jobs.nbytes.tolist()
    nxt = jobs.chain_next.tolist()
    chan_of_dom = [0] * ndom
    chan_of_dom_arr = np.zeros(ndom, dtype=np.int64)
    chan_of_dom_arr[job_dom_arr] = jobs.channel
    chan_of_dom = chan_of_dom_arr.tolist()
    time_of = [laws[c].time for c in chan_of_dom]
    tau = [0] * ndom
    B0 = [0.0] * ndom  # byte counter at the start of the running piece
    t0 = [0.0] * ndom  # start of the running piece
    dB = [0.0] * ndom  # bytes the running piece moves
    dur = [0.0] * ndom  # its duration
    tend = [0.0] * ndom  # its end: t0 + dur, the very float its event carries
    version = [0] * ndom
    marks: list[list[float]] = [[] for _ in range(ndom)]  # finishing marks, a heap per domain
    who: list[dict[float, list[int]]] = [{} for _ in range(ndom)]  # mark -> jobs finishing there
    end = [0.0] * len(size)
    events: list[tuple[float, int, int]] = []
    pieces: list[Piece] = []
    heappush, heappop, heapify = heapq.heappush, heapq.heappop, heapq.heapify

    def start_piece(d: int, t: float, B: float) -> None:
        t0[d] = t
        B0[d] = B
        delta = marks[d][0] - B
        if delta < 0.0:
            delta = 0.0
        dB[d] = delta
        span = time_of[d](delta, tau[d])
        dur[d] = span
        tend[d] = t + span
        version[d] += 1
        heappush(events, (tend[d], version[d], d))

    def settle(d: int, t: float, ready: list[int]) -> float:
        """Bring domain d to time t: move its counter, finish the jobs that are done."""
        elapsed = t - t0[d]
        if tau[d] == 0 or elapsed <= 0.0:
            return B0[d]
        # A cut only when t is before the piece's end by more than rounding of absolute times:
        # comparing elapsed with dur would call a piece's own end a cut when t0 >> dur.
        if t < tend[d] - 1e-12 * tend[d]:  # cut: progress pro rata, nobody finishes
            B = B0[d] + dB[d] * (elapsed / dur[d])
            if trace:
                pieces.append(Piece(d, chan_of_dom[d], tau[d], B - B0[d], t0[d], t, cut=True))
            return B
        B = B0[d] + dB[d]
        if trace:
            pieces.append(Piece(d, chan_of_dom[d], tau[d], dB[d], t0[d], t))
        heap = marks[d]
        owners = who[d]
        limit = B + 1e-12 * B + 1e-9
        while heap and heap[0] <= limit:
            finished = owners.pop(heappop(heap), None)
            if finished is None:  # a mark shared by several jobs: all went with its first copy
                continue
            for j in finished:
                end[j] = t
                tau[d] -= 1
                if nxt[j] >= 0:
                    ready.append(nxt[j])
        return B

    ready: list[int] = np.flatnonzero(jobs.position == 0).tolist()
    t = 0.0
    while True:
        if ready:
            touched: dict[int, float] = {}
            arriving: dict[int, list[float]] = {}
            i = 0
            while i < len(ready):  # successors of jobs that end now are appended and start now
                j = ready[i]
                i += 1
                d = job_dom[j]
                B = touched.get(d)
                if B is None:
                    B = touched[d] = settle(d, t, ready)
                    arriving[d] = []
                mark = B + size[j]
                arriving[d].append(mark)
                owners = who[d]
                same = owners.get(mark)
                if same is None:
                    owners[mark] = [j]
                else:
                    same.append(j)
            for d, new_marks in arriving.items():
                heap = marks[d]
                if len(new_marks) > 8 and len(new_marks) >= len(heap):
                    heap.extend(new_marks)
                    heapify(heap)
                else:
                    for mark in new_marks:
                        heappush(heap, mark)
                tau[d] += len(new_marks)
                start_piece(d, t, touched[d])
            ready = []
        if not events:
            break
        t, ver, d = heappop(events)
        if ver != version[d]:
            continue
        B = settle(d, t, ready)
        if tau[d] > 0:
            start_piece(d, t, B)
        else:
            B0[d] = B
            version[d] += 1
    return PhaseResult(np.array(end), pieces)
