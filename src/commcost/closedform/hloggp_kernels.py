"""HLogGP as paper 000 prices its kernels: per-sender sums of point-to-point costs, then the maximum.

Paper 000 section 4.1 (SUMMA): "for vertical communication, we calculate
the total cost of every column, and we take the maximum ... For the
horizontal communication, we take the maximum cost of the processes in
each column block"; section 4.2 (Wave2D): "the cost per process as the sum
of the transmission costs to the neighbors. The iteration cost is the
maximum of the per process cost." In a SUMMA phase one process per column
sends, so both rules, like Wave2D's, are: a phase costs

    max over senders i of  sum over its messages (i -> j, m bytes) of
        o_send[i] + (m - 1) G[i,j] + L[i,j] + o_recv[j]

(the HLogGP point-to-point time, Bosque and Pastor 2006, paper 000 ref.
[23]), and a run costs the sum of its phases, repeats included. Unlike the
``hloggp`` model's timeline, each message pays its latency and receive
overhead in full and receivers never queue. The parameters are the
``[hloggp]`` section's (:class:`commcost.models.hloggp.HLogGPParams`).
"""

from __future__ import annotations

import numpy as np

from commcost.models.base import Cost, PlacedSchedule
from commcost.models.hloggp import HLogGPParams

NAME = "hloggp-paper000"
RULE = ("phase = max over senders of sum of o_send[i] + (m-1)G[i,j] + L[i,j] + o_recv[j] "
        "(paper 000 section 4); total = sum of phases x repeats")


def p2p_times_s(placed: PlacedSchedule, params: HLogGPParams) -> np.ndarray:
    """HLogGP time of each transmission alone: o_send[i] + (m-1) G[i,j] + L[i,j] + o_recv[j]."""
    a = params.per_transmission(placed)
    m = placed.schedule.nbytes
    return a.o_send_s + np.maximum(m - 1.0, 0.0) * a.G_s_per_byte + a.L_s + a.o_recv_s


def sender_sum_end_times(placed: PlacedSchedule, params: HLogGPParams) -> np.ndarray:
    """End time of each transmission when a sender's messages cost their p2p times one after another."""
    s = placed.schedule
    cost = p2p_times_s(placed, params)
    order = np.lexsort((np.arange(s.ntransmissions), s.src, s.phase))
    running = np.cumsum(cost[order])
    key = s.phase[order] * s.nprocs + s.src[order]
    first = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(key)), 0)) if len(key) else key
    before = np.where(group_start > 0, running[group_start - 1], 0.0)
    end = np.empty_like(cost)
    end[order] = running - before
    return end


def price(placed: PlacedSchedule, params: HLogGPParams) -> Cost:
    """Paper 000's HLogGP kernel cost of a placed schedule, per phase, rank and channel."""
    cost = Cost.from_end_times(NAME, placed, sender_sum_end_times(placed, params))
    cost.explain = {"law": RULE}
    return cost
