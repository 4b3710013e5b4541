"""Lower bounds of tau-Lop prices of dependency schedules, at a fraction of the event engine's cost.

What for: selection (:mod:`commcost.selection.select`) prices candidates
by branch and bound. A candidate whose *floor* already reaches the best
time found so far cannot be the fastest, and need not go through the
event engine (:mod:`.dependency_engine`): a ring of P (P - 1)
transmissions then costs one pass over its waits instead of an event per
piece.

The floor rests on two facts of the engine's rules (paper 000 section 3,
A2, as :mod:`.dependency_engine` applies them):

* a transmission pays its fixed cost tau||T^c(0) once, at the concurrency
  tau it ends in, so at least ``fixed_c = min over tau of tau||T^c(0)``;
* its bytes move in pieces; a piece planned for delta bytes at
  concurrency tau lasts f_tau(delta) = max(0, tau||T^c(delta) -
  tau||T^c(0)), and a part b of it (a cut) lasts b f_tau(delta) / delta.
  So m bytes take at least ``m * per_byte_c``, with ``per_byte_c = inf
  over tau, delta > 0 of f_tau(delta) / delta``. On a piecewise-linear
  grid that ratio is monotone on each segment, so its infimum is at a grid
  size or past the last one: along the row's slope (``beyond_m =
  "slope"``), or no lower than the grid's ratios in whole chunks of the
  last size (``"chunks"``). Past tau_max the rows are o + tau S
  (``beyond_tau = "linear"``): the least is at tau_max + 1 when S does not
  decrease, and zero is taken otherwise.

Every transmission then lasts at least ``fixed_c + per_byte_c m`` and
starts no earlier than what it waits for ends (the engine releases a
transmission once everything it waits for has ended), so the length of
any path of the waits with those durations, and so of the longest (one
pass in array order: waits point backwards), is a lower bound of the
engine's last end. Reductions at the receiver only add time.

*What a domain can carry* (:func:`domain_loads_s`). The longest path
knows nothing of what shares a channel: a binomial tree's root node sends
32 copies of the message over its network port, concurrently in the
path's eyes. But at concurrency tau each transmission of a contention
domain moves its bytes at most 1 / per_byte_tau a second (per_byte_tau =
inf over delta of f_tau(delta) / delta), so the domain together at most
tau / per_byte_tau; its bytes B take at least ``B * rho_c``, rho_c = inf
over tau of per_byte_tau / tau (:func:`law_domain_floor`; past tau_max,
rows o + tau S, no less than S's least ratio, with o's added over
tau_max + 1 where it is negative; 0, no limit, where rows hold past
tau_max or S decreases). The largest domain's load is a lower bound of
the last end: for that binomial bcast of 512 MiB on 1,024 ranks, 4.95 s
against its price of 4.98 s, where the longest path gives 0.35 s.

*What a receiver must take* (:func:`receiver_loads_s`). A receiver takes
one message at a time: each holds its port for its last transfer alone,
and its processor then reduces it (:mod:`.dependency_engine`), so its
last message is done no sooner than the holds of all its messages but the
first (the largest of the schedule's, not knowing which), and no sooner
than all its reductions. A reduce's root receiving from 1,023 ranks pays
that much however its senders share their channels.
"""

from __future__ import annotations

import numpy as np

from commcost.arrays import unique_inverse
from commcost.jit import njit
from commcost.models.taulop.params import TransmissionLaw


def law_floor(law: TransmissionLaw) -> tuple[float, float]:
    """``(fixed_s, per_byte_s)``: every transmission of m bytes on this channel lasts at least
    ``fixed_s + per_byte_s * m`` in the event engine, whatever its concurrency and pieces (module docstring)."""
    rows = [law._compiled(t) for t in range(1, law.tau_saturated + 1)]
    fixed = [ys[0] for _, ys, _, _ in rows]  # T(0, tau): each row is flat before its first size
    per_byte = [_least_ratio(row) for row in rows]
    if not law.hold:
        o_row, s_row = law._saturated()
        s_ys = np.asarray(s_row[1])
        if np.all(s_ys >= s_ys[0]) and s_row[2] >= 0.0:  # S does not decrease: tau_max + 1 is the least
            tau = law.tau_saturated + 1
            xs, o_ys = o_row[0], np.asarray(o_row[1])
            row = (xs, (o_ys + tau * s_ys).tolist(), o_row[2] + tau * s_row[2], o_row[3])
            fixed.append(row[1][0])
            per_byte.append(_least_ratio(row))
        else:
            fixed.append(0.0)
            per_byte.append(0.0)
    return max(min(fixed), 0.0), max(min(per_byte), 0.0)


def _least_ratio(grid: tuple[list[float], list[float], float, float], clamp: bool = True) -> float:
    """inf over delta > 0 of max(0, y(delta) - y(0)) / delta for one compiled row (module docstring); of
    (y(delta) - y(0)) / delta, which may be negative, without ``clamp``."""
    xs, ys, slope, period = np.asarray(grid[0]), np.asarray(grid[1]), grid[2], grid[3]
    y0 = ys[0]  # y(0): the row is flat before its first size
    inside = xs > 0.0
    rise = ys[inside] - y0
    ratios = (np.maximum(rise, 0.0) if clamp else rise) / xs[inside]
    least = float(ratios.min()) if len(ratios) else 0.0
    if xs[0] > 0.0:
        least = min(least, 0.0)  # flat from 0 to the first size: a piece of fewer bytes costs nothing beyond T(0)
    if period <= 0.0:  # past the last size along the slope: the ratio tends to it
        least = min(least, max(slope, 0.0) if clamp else slope)
    return least


def law_domain_floor(law: TransmissionLaw) -> float:
    """rho_c: seconds per byte a contention domain of this channel takes at least, whatever its concurrency
    (module docstring, "What a domain can carry"); 0 where the law sets no limit."""
    sat = law.tau_saturated
    rho = min(_least_ratio(law._compiled(t)) / t for t in range(1, sat + 1))
    if law.hold:
        return 0.0  # any number of transmissions at the saturated pace each
    o_row, s_row = law._saturated()
    s_ys = np.asarray(s_row[1])
    if not (np.all(s_ys >= s_ys[0]) and s_row[2] >= 0.0):
        return 0.0
    beyond = _least_ratio(s_row) + min(0.0, _least_ratio(o_row, clamp=False)) / (sat + 1)
    return max(min(rho, beyond), 0.0)


def domain_loads_s(laws: list[TransmissionLaw | None], channel: np.ndarray, domain: np.ndarray,
                   nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(domains, seconds): each contention domain's bytes times its channel's :func:`law_domain_floor`, a
    lower bound of the last end wherever the domain's transmissions all move their bytes."""
    rho = np.array([law_domain_floor(law) if law is not None else 0.0 for law in laws])
    keys, inverse = unique_inverse(np.asarray(domain))
    loads = np.zeros(len(keys))
    np.add.at(loads, inverse, rho[np.asarray(channel)] * np.asarray(nbytes, np.float64))
    return keys, loads


def floor_times(laws: list[TransmissionLaw | None], channel: np.ndarray, nbytes: np.ndarray, src: np.ndarray,
                after_ptr: np.ndarray, after_idx: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """A lower bound of the last end of a dependency schedule under tau-Lop, with every size times each of
    ``factors``: the longest path of its waits, each transmission lasting ``fixed + per_byte * m`` of its
    channel (:func:`law_floor`).

    The longest path is found at the smallest and the largest factor only (two passes, however many
    factors): each is a path of the schedule, so its fixed costs A and bytes B price a lower bound
    A + f B at every other factor f too; the floor is the larger of the two.
    """
    factors = np.asarray(factors, np.float64)
    if len(src) == 0:
        return np.zeros(len(factors))
    bounds = np.array([law_floor(law) if law is not None else (0.0, 0.0) for law in laws])
    fixed = np.ascontiguousarray(bounds[channel, 0])
    work = np.ascontiguousarray(bounds[channel, 1] * np.asarray(nbytes, np.float64))
    ptr, idx = (np.ascontiguousarray(a, np.int64) for a in (after_ptr, after_idx))
    paths = [_longest_path(ptr, idx, fixed, work, f) for f in sorted({float(factors.min()), float(factors.max())})]
    return np.max([a + factors * b for a, b in paths], axis=0)


@njit
def _longest_path(after_ptr, after_idx, fixed, work, factor):  # pragma: no cover - compiled
    """(fixed sum, work sum) of the longest path of the waits, transmission i lasting fixed[i] + factor *
    work[i] (waits point backwards: one pass in array order)."""
    n = len(fixed)
    end = np.empty(n)
    path_a = np.empty(n)
    path_b = np.empty(n)
    best, best_a, best_b = -1.0, 0.0, 0.0
    for i in range(n):
        t, a, b = 0.0, 0.0, 0.0
        for k in range(after_ptr[i], after_ptr[i + 1]):
            j = after_idx[k]
            if end[j] > t:
                t, a, b = end[j], path_a[j], path_b[j]
        end[i] = t + fixed[i] + factor * work[i]
        path_a[i] = a + fixed[i]
        path_b[i] = b + work[i]
        if end[i] > best:
            best, best_a, best_b = end[i], path_a[i], path_b[i]
    return best_a, best_b


def receiver_loads_s(dst: np.ndarray, nprocs: int, hold_s: np.ndarray | None,
                     service_s: np.ndarray | None) -> np.ndarray:
    """Per rank, a lower bound of when its last reception is done (module docstring, "What a receiver must
    take"): the larger of its holds' sum less the schedule's largest hold, and its reductions' sum."""
    out = np.zeros(nprocs)
    if hold_s is not None and len(hold_s):
        out = np.maximum(np.bincount(dst, weights=hold_s, minlength=nprocs) - float(hold_s.max()), 0.0)
    if service_s is not None and len(service_s):
        out = np.maximum(out, np.bincount(dst, weights=service_s, minlength=nprocs))
    return out
