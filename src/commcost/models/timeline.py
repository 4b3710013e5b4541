"""Vectorized timelines of the point-to-point models: senders send one after another, receivers queue.

Hockney, LogGP, LogGPH and HLogGP price a phase the same way; all ranks
start it at t = 0 and the schedule lists each (phase, src)'s transmissions
in send order:

* a sender's transmissions leave one after another:
  start_0 = 0, start_i = start_{i-1} + busy_{i-1}
  (Hockney: busy = alpha + beta m; LogGP: busy = max(g, o_send + (m-1) G));
* a receiver takes its messages one at a time, in the order they begin to
  come in (a_k - u_k), ties in transmission order: each holds its port for
  its occupancy u_k (Hockney:
  the message's alpha + beta m; LogGP: its receive gap max(g, (m-1) G)),
  in_k = max(a_k, in_{k-1} + u_k), and then costs its processor its
  service s_k (LogGP: o_recv; a reduction: gamma(m)),
  done_k = max(in_k, done_{k-1}) + s_k (:func:`queue_done`).

These models know neither channel contention (tau-Lop's job) nor send
modes: sends posted together (Isend + Waitall) are priced like a sequence of
blocking sends, since a processor injects one message at a time either way.

No Python loop runs over transmissions, ranks or phases. Transmissions are
grouped by (phase, src) or (phase, dst) and each recurrence becomes a
segmented scan, run with ``ufunc.accumulate`` along the rows of padded 2-D
blocks (groups bucketed by length, so padding at most doubles memory). The
scans add in the recurrence's own order, so sender times equal a plain loop
bit for bit; the receiver queue is solved in closed form (see
:func:`queue_done`), equal to the loop up to rounding.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class LogGPArrays(NamedTuple):
    """LogGP parameters per transmission (seconds, seconds per byte), aligned with the schedule."""

    o_send_s: np.ndarray
    o_recv_s: np.ndarray
    L_s: np.ndarray
    g_s: np.ndarray
    G_s_per_byte: np.ndarray


class _Groups:
    """Runs of equal keys in a key-sorted array, laid out for exact segmented scans."""

    def __init__(self, sorted_key: np.ndarray) -> None:
        n = len(sorted_key)
        if n == 0:
            self.pos = np.zeros(0, dtype=np.int64)
            self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, int]] = []
            return
        starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
        lengths = np.diff(np.r_[starts, n])
        gid = np.repeat(np.arange(len(starts)), lengths)
        self.pos = np.arange(n) - starts[gid]
        # bucket k holds the groups of length 2^k .. 2^(k+1)-1 (frexp is exact on integers)
        bucket = np.frexp(lengths.astype(np.float64))[1] - 1
        self._blocks = []
        for k in np.unique(bucket):
            in_bucket = bucket == k
            row_of_group = np.cumsum(in_bucket) - 1
            members = np.flatnonzero(in_bucket[gid])
            rows = row_of_group[gid[members]]
            self._blocks.append((members, rows, self.pos[members],
                                 int(in_bucket.sum()), int(lengths[in_bucket].max())))

    def scan(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """Inclusive ``ufunc.accumulate`` of ``values`` restarted at each group, in array order."""
        out = np.empty(len(values))
        for members, rows, cols, nrows, width in self._blocks:
            block = np.zeros((nrows, width))  # padding sits after each group's values: never read
            block[rows, cols] = values[members]
            out[members] = ufunc.accumulate(block, axis=1)[rows, cols]
        return out

    def previous(self, scanned: np.ndarray, first: float = 0.0) -> np.ndarray:
        """The exclusive scan from an inclusive one: each entry's predecessor, ``first`` at group starts."""
        shifted = np.r_[first, scanned[:-1]] if len(scanned) else scanned
        return np.where(self.pos > 0, shifted, first)


def serialized(group_key: np.ndarray, busy_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of jobs run one after another within each group, in array order.

    start_0 = 0, start_i = start_{i-1} + busy_{i-1}; end_i = start_i + busy_i.
    Groups (equal ``group_key``) need not be contiguous.
    """
    order = np.argsort(group_key, kind="stable")
    groups = _Groups(group_key[order])
    end_sorted = groups.scan(np.add, busy_s[order])
    start = np.empty(len(order))
    end = np.empty(len(order))
    start[order] = groups.previous(end_sorted)
    end[order] = end_sorted
    return start, end


def queue_done(group_key: np.ndarray, arrival_s: np.ndarray, service_s: np.ndarray,
               occupancy_s: np.ndarray | None = None) -> np.ndarray:
    """When a single server per group finishes each job, taking jobs in order of arrival.

    Ties in arrival are taken in array order. done_k = max(a_k, done_{k-1})
    + s_k unrolls to done_k = S_k + max_{j<=k}(a_j - S_{j-1}), with S the
    running sum of service times in arrival order: two segmented scans.
    With ``occupancy_s`` (u: a job first holds a port for the u before its
    arrival, a message's bytes coming in) the port goes first, in the order
    the jobs begin, a_k - u_k: in_k = max(a_k, in_{k-1} + u_k), the same
    recurrence with arrival a_k - u_k and service u_k, and then
    done_k = max(in_k, done_{k-1}) + s_k (a job alone ends at a_k + s_k).
    Taken in that order the last done never falls when a job arrives later
    or holds the port longer.
    """
    begin = arrival_s if occupancy_s is None else arrival_s - np.broadcast_to(
        np.asarray(occupancy_s, dtype=np.float64), np.shape(arrival_s))
    order = np.lexsort((begin, group_key))
    groups = _Groups(group_key[order])
    arrival = np.asarray(arrival_s, dtype=np.float64)[order]
    if occupancy_s is not None:
        hold = np.broadcast_to(np.asarray(occupancy_s, dtype=np.float64), np.shape(arrival_s))[order]
        arrival = _served(groups, arrival - hold, hold)
    done = np.empty(len(order))
    done[order] = _served(groups, arrival, np.broadcast_to(np.asarray(service_s, dtype=np.float64),
                                                           np.shape(arrival_s))[order])
    return done


def _served(groups: "_Groups", arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """done_k = max(a_k, done_{k-1}) + s_k within each group, in array order (sorted by group)."""
    served = groups.scan(np.add, service)
    return served + groups.scan(np.maximum, arrival - groups.previous(served))


def loggp_receive_occupancy(nbytes: np.ndarray, g_s: np.ndarray, G_s_per_byte: np.ndarray) -> np.ndarray:
    """How long a message holds its receiver's network port: max(g, (m-1) G), LogGP's gaps per message and
    per byte binding a receiving interface as they bind a sending one (Alexandrov et al. 1995; LogGOPSim
    keeps a receive gap per rank the same way). The receive overhead o_recv is the processor's, after it."""
    return np.maximum(g_s, np.maximum(np.asarray(nbytes, dtype=np.float64) - 1.0, 0.0) * G_s_per_byte)


def loggp_end_times(
    phase: np.ndarray, src: np.ndarray, dst: np.ndarray, nprocs: int, nbytes: np.ndarray, params: LogGPArrays,
    reduction_s: np.ndarray | None = None,
) -> np.ndarray:
    """End time of each transmission under LogGP-family parameters, from the start of its phase.

    Alexandrov et al. 1995 (LogGP), per transmission i of m_i bytes:
    inj_i = o_send_i + max(m_i - 1, 0) G_i; the sender starts its next
    message max(g_i, inj_i) after this one; the message arrives at
    a_i = start_i + inj_i + L_i; the receiver takes arrivals one at a time,
    each holding its port max(g, (m-1) G) (:func:`loggp_receive_occupancy`),
    and then spends o_recv (plus ``reduction_s``, gamma(m) of a combine
    transmission) on it, one after another (:func:`queue_done`). One
    message alone costs 2o + L + (m-1)G; k messages into one rank at once
    take k - 1 receive gaps (or overheads) more.
    """
    o_send, o_recv, L, g, G = (np.asarray(a, dtype=np.float64) for a in params)
    injection = o_send + np.maximum(nbytes - 1.0, 0.0) * G
    start, _ = serialized(phase * nprocs + src, np.maximum(g, injection))
    arrival = start + injection + L
    service = o_recv if reduction_s is None else o_recv + reduction_s
    return queue_done(phase * nprocs + dst, arrival, service, loggp_receive_occupancy(nbytes, g, G))
