"""Dependency schedules under Hockney and the LogGP family: hand-worked timelines and a naive reference."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from commcost.models import PlacedSchedule
from commcost.models.dependency_timeline import dependency_completions, dependency_times
from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
from commcost.models.loggp import LogGP, LogGPParams
from commcost.models.reduction import ReductionLaw
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
from commcost.schedule.schedule import ScheduleBuilder

US = 1e-6


def one_channel(nprocs: int) -> tuple[Platform, Mapping]:
    """Every rank on its own node, one network channel."""
    kind = NodeType("solo", 1)
    platform = Platform("flat", (kind,), tuple(Node(f"n{i}", kind) for i in range(nprocs)),
                        (Channel("net", 0, "world", ("net",), ContentionScope.CHANNEL),))
    return platform, Mapping.sequential(platform, nprocs, 1)


def hockney(alpha_us: float = 1.0, beta_us: float = 0.0) -> Hockney:
    return Hockney(HockneyParams({"net": HockneyChannel(alpha_us * US, beta_us * US)}))


def price(model, schedule) -> float:
    platform, mapping = one_channel(schedule.nprocs)
    return model.price(PlacedSchedule.of(schedule, platform, mapping)).time_s


def test_chain_forwarding_costs_one_message_per_hop():
    b = ScheduleBuilder(4)
    a = b.add(0, 1, 100)
    c = b.add(1, 2, 100, after=[a])
    b.add(2, 3, 100, after=[c])
    assert price(hockney(1.0, 0.01), b.build()) == pytest.approx(3 * 2.0 * US)


def test_forward_waits_for_its_own_data_not_for_a_level():
    # root sends to 1 then 2; rank 1 forwards to 3 as soon as its own message arrived (at T), while the root
    # is still sending to 2: 3 receives at 2T. A phase barrier would make it 3T.
    b = ScheduleBuilder(4)
    a = b.add(0, 1, 1)
    b.add(0, 2, 1)
    b.add(1, 3, 1, after=[a])
    assert price(hockney(), b.build()) == pytest.approx(2 * US)
    barrier = ScheduleBuilder(4).phase(repeat=1).send(0, 1, 1).send(0, 2, 1).phase().send(1, 3, 1).build()
    assert price(hockney(), barrier) == pytest.approx(3 * US)


def test_sender_serializes_in_program_order_even_when_a_later_send_is_ready_first():
    # rank 1 first forwards what it receives from 0 (ready at T), then sends its own data to 3 (ready at 0):
    # in program order the second send waits behind the first: 1 -> 2 in [T, 2T], 1 -> 3 in [2T, 3T].
    b = ScheduleBuilder(4)
    a = b.add(0, 1, 1)
    b.add(1, 2, 1, after=[a])
    b.add(1, 3, 1)
    platform, mapping = one_channel(4)
    end = hockney().end_times(PlacedSchedule.of(b.build(), platform, mapping))
    assert end.tolist() == pytest.approx([1 * US, 2 * US, 3 * US])


def test_a_wait_for_an_own_send_is_its_completion():
    # LogGP: a send completes for its sender after inj = o + (m-1)G, the next may start after max(g, inj);
    # a Waitall edge makes a send wait for an earlier send's completion.
    model = LogGP(LogGPParams(L_s=5 * US, o_s=1 * US, g_s=3 * US, G_s_per_byte=0.0))
    b = ScheduleBuilder(3)
    a = b.add(0, 1, 1)
    b.add(0, 2, 1, after=[a])
    platform, mapping = one_channel(3)
    end = model.end_times(PlacedSchedule.of(b.build(), platform, mapping))
    # 0 -> 1: start 0, arrives 0 + 1 + 5, done + o = 7; 0 -> 2 starts at max(g = 3, inj = 1) = 3: done 10
    assert end.tolist() == pytest.approx([7 * US, 10 * US])


def test_loggp_binomial_by_hand():
    # o = 1, L = 2, g = 0.5 (< o), G = 0: inj = 1, a sender starts a message every 1, arrival = start + 3,
    # done = arrival + 1 (receiver overhead). P = 8 binomial (children 1, 2, 4 of 0; 3, 5 of 1; 6 of 2; 7 of 3).
    model = LogGP(LogGPParams(L_s=2 * US, o_s=1 * US, g_s=0.5 * US, G_s_per_byte=0.0))
    b = ScheduleBuilder(8)
    to1 = b.add(0, 1, 1)
    to2 = b.add(0, 2, 1)
    b.add(0, 4, 1)
    to3 = b.add(1, 3, 1, after=[to1])
    b.add(1, 5, 1, after=[to1])
    b.add(2, 6, 1, after=[to2])
    b.add(3, 7, 1, after=[to3])
    platform, mapping = one_channel(8)
    end = model.end_times(PlacedSchedule.of(b.build(), platform, mapping))
    # 0->1 done 4, 0->2 done 5, 0->4 done 6; 1 starts at 4: 1->3 done 8, 1->5 done 9; 2->6: 5 + 4 = 9; 3->7: 12
    assert end.tolist() == pytest.approx([4 * US, 5 * US, 6 * US, 8 * US, 9 * US, 9 * US, 12 * US])


def test_receiver_takes_arrivals_first_come_first_served():
    model = LogGP(LogGPParams(L_s=2 * US, o_s=1 * US, g_s=1 * US, G_s_per_byte=0.0))
    b = ScheduleBuilder(4)
    for src in (1, 2, 3):
        b.add(src, 0, 1)
    # all arrive at 3; the root spends o = 1 on each: 4, 5, 6
    assert price(model, b.build()) == pytest.approx(6 * US)


def test_a_reduction_delays_what_forwards_the_partial_result():
    law = ReductionLaw("sum", np.array([0.0, 1e6]), np.array([0.0, 1.0]))  # 1 us per byte
    model = hockney().with_reduction(law)
    b = ScheduleBuilder(4)
    x = b.add(2, 1, 3)
    y = b.add(3, 1, 3)
    b.add(1, 0, 3, after=[x, y])
    s = replace(b.build(), combine=np.array([True, True, True]))
    platform, mapping = one_channel(4)
    end = model.end_times(PlacedSchedule.of(s, platform, mapping))
    # both arrive at 1; rank 1 reduces one after the other (3 us each): 4, 7; it forwards at 7: arrives 8,
    # rank 0 reduces: 11
    assert end.tolist() == pytest.approx([4 * US, 7 * US, 11 * US])


def reference(src, dst, deps, busy, inject, flight, service, nprocs, sync=None):
    """A naive simulation: repeatedly take the earliest arrival among started transmissions (a ``sync``
    send completes at its arrival, when its receiver, with no port occupancy, takes it)."""
    sync = np.zeros(len(src), bool) if sync is None else sync
    n = len(src)
    start = [None] * n
    done = [None] * n
    port = [0.0] * nprocs
    recv_free = [0.0] * nprocs
    arrived = []
    next_in_order = {r: [i for i in range(n) if src[i] == r] for r in range(nprocs)}
    while any(d is None for d in done):
        progress = True
        while progress:
            progress = False
            for r, queue in next_in_order.items():
                if not queue:
                    continue
                i = queue[0]
                times = []
                for j in deps[i]:
                    if dst[j] == src[i]:
                        if done[j] is None:
                            break
                        times.append(done[j])
                    else:
                        if start[j] is None:
                            break
                        times.append(start[j] + (flight[j] if sync[j] else inject[j]))
                else:
                    start[i] = max([port[r], *times])
                    port[r] = start[i] + busy[i]
                    arrived.append((start[i] + flight[i], i))
                    queue.pop(0)
                    progress = True
        arrived.sort()
        t, i = arrived.pop(0)
        done[i] = max(t, recv_free[dst[i]]) + service[i]
        recv_free[dst[i]] = done[i]
    return np.array(start), np.array(done)


@pytest.mark.parametrize("seed", range(12))
def test_compiled_loops_equal_a_naive_reference(seed):
    rng = np.random.default_rng(seed)
    nprocs = int(rng.integers(2, 7))
    n = int(rng.integers(1, 40))
    src = rng.integers(0, nprocs, n)
    dst = (src + rng.integers(1, nprocs, n)) % nprocs
    deps = []
    for i in range(n):
        local = [j for j in range(i) if dst[j] == src[i] or src[j] == src[i]]
        k = int(rng.integers(0, min(3, len(local)) + 1))
        deps.append(sorted(rng.choice(local, size=k, replace=False).tolist()) if k else [])
    ptr = np.r_[0, np.cumsum([len(d) for d in deps])].astype(np.int64)
    idx = np.array([j for d in deps for j in d], dtype=np.int64)
    busy = rng.uniform(0.5, 2.0, n)
    inject = busy * rng.uniform(0.3, 1.0, n)
    flight = inject + rng.uniform(0.0, 3.0, n)
    for service in (np.zeros(n), rng.uniform(0.1, 1.0, n)):
        want_start, want_done = reference(src, dst, deps, busy, inject, flight, service + 0.0, nprocs)
        start, done = dependency_times(src, dst, ptr, idx, nprocs, busy, inject, flight, service)
        assert start == pytest.approx(want_start)
        assert done == pytest.approx(want_done)
        sync = rng.random(n) < 0.5  # rendezvous: complete when taken, with no port occupancy at arrival
        want_start, want_done = reference(src, dst, deps, busy, inject, flight, service + 0.0, nprocs, sync)
        start, completed, done = dependency_completions(src, dst, ptr, idx, nprocs, busy,
                                                        np.where(sync, flight, inject), flight, service, sync=sync)
        assert start == pytest.approx(want_start)
        assert done == pytest.approx(want_done)
        assert completed == pytest.approx(start + np.where(sync, flight, inject))


def test_backpressure_holds_a_sender_for_the_queue_not_for_an_unposted_receive():
    """Rank 3 sends to rank 1, which forwards to the root after it; rank 2 sends to the root, which takes
    rank 1's message first (a tree's children in order). Eager shares s = 1, wire w = 4, receiver's share
    r = 1. Rank 2's message arrives at 4 to an empty queue and waits only for its receive to be posted (at
    the unexpected queue): under backpressure its sender is done at s, while a synchronous (rendezvous)
    send completes when the root takes it, 2w + r. Two messages arriving together at one queue do hold the
    second sender for the first one's share."""
    src, dst = np.array([3, 1, 2]), np.array([1, 0, 0])
    ptr, idx = np.array([0, 0, 1, 1], np.int64), np.array([0], np.int64)
    s, w, r = 1.0, 4.0, 1.0
    args = (src, dst, ptr, idx, 4, np.full(3, s), np.full(3, s), np.full(3, w))
    order = np.array([-1, -1, 1])  # the root takes rank 2's message after rank 1's
    _, completed, done = dependency_completions(*args, recv_occupancy_s=np.full(3, r), recv_prev=order,
                                                pressed=np.ones(3, bool))
    assert completed.tolist() == [s, w + s, s]
    assert done.tolist() == [w, 2 * w, 2 * w + r]
    _, completed, _ = dependency_completions(src, dst, ptr, idx, 4, np.full(3, s), np.full(3, w), np.full(3, w),
                                             recv_occupancy_s=np.full(3, r), recv_prev=order, sync=np.ones(3, bool))
    assert completed.tolist() == [w, 2 * w, 2 * w + r]
    together = (np.array([1, 2]), np.array([0, 0]), np.zeros(3, np.int64), np.zeros(0, np.int64), 3)
    _, completed, _ = dependency_completions(*together, np.full(2, s), np.full(2, s), np.full(2, w),
                                             recv_occupancy_s=np.full(2, r), pressed=np.ones(2, bool))
    assert completed.tolist() == [s, s + r]
