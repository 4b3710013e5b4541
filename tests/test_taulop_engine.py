"""The exact tau-Lop engine: A1-A3 as properties, the fast staircase equal to the event loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commcost.models.base import PlacedSchedule
from commcost.models.taulop.model import TauLop, channel_laws
from commcost.platform import Mapping
from commcost.schedule import Schedule, ScheduleBuilder, SendMode

from taulop_fixtures import two_channel_params, two_node_platform

PARAMS = two_channel_params()
PLATFORM = two_node_platform()


def price(builder: ScheduleBuilder, nodes: list[int], fast: bool = True) -> float:
    placed = PlacedSchedule.of(builder.build(), PLATFORM, Mapping.on_nodes(nodes))
    return TauLop(PARAMS, fast=fast).price(placed).time_s


def law(name: str):
    channel = PLATFORM.channel(name)
    return PARAMS.law(channel.name, channel.transfers)


def test_one_shm_transmission_is_overhead_plus_two_transfers():
    """Paper 000 eq. 1: T^0(m) = o^0(m) + 2 L^0(m, 1)."""
    b = ScheduleBuilder(2).phase().send(0, 1, 5000)
    shm = PARAMS.tables["shm"]
    assert price(b, [0, 0]) == pytest.approx(float(shm.o(5000) + 2 * shm.L(5000, 1)))


def test_one_rdma_transmission_is_overhead_plus_one_transfer():
    """Paper 000 eq. 3: T^1(m) = o^1(m) + L^1(m, 1)."""
    b = ScheduleBuilder(2).phase().send(0, 1, 5000)
    ib = PARAMS.tables["ib"]
    assert price(b, [0, 1]) == pytest.approx(float(ib.o(5000) + ib.L(5000, 1)))


@given(st.integers(1, 12), st.floats(1, 4e6))
def test_n_concurrent_transmissions_cost_between_one_and_n(n, m):
    """n||T(m) = o(m) + 2L(m, n), between T(m) and n*T(m) (paper 000 section 3)."""
    b = ScheduleBuilder(2 * n).phase(mode=SendMode.POSTED)
    for r in range(n):
        b.send(2 * r, 2 * r + 1, m)
    t = price(b, [0] * (2 * n))
    one = law("shm").time(m, 1)
    assert one - 1e-15 <= t <= n * one + 1e-15
    assert t == pytest.approx(law("shm").time(m, n))


def test_a1_sequence_on_one_channel_costs_as_one_transmission_of_summed_size():
    b = ScheduleBuilder(4).phase().send(0, 1, 1000).send(0, 2, 3000).send(0, 3, 500)
    assert price(b, [0, 0, 0, 0]) == pytest.approx(law("shm").time(4500, 1))


def test_a2_two_transmissions_share_the_channel_until_the_shorter_ends():
    """T(m1) || T(m2) = 2||T(m1) + T(m2 - m1)."""
    b = ScheduleBuilder(4).phase(mode=SendMode.POSTED).send(0, 1, 1000).send(2, 3, 7000)
    shm = law("shm")
    assert price(b, [0, 0, 0, 0]) == pytest.approx(shm.time(1000, 2) + shm.time(6000, 1))


def test_a3_transmissions_on_different_channels_do_not_interfere():
    """T^0(m1) || T^1(m2) = max{T^0(m1), T^1(m2)}."""
    b = ScheduleBuilder(4).phase(mode=SendMode.POSTED).send(0, 1, 1000).send(2, 3, 7000)
    assert price(b, [0, 0, 0, 1]) == pytest.approx(max(law("shm").time(1000, 1), law("ib").time(7000, 1)))


def test_phases_add():
    b = ScheduleBuilder(4).phase().send(0, 1, 1000).phase().send(2, 3, 7000)
    assert price(b, [0, 0, 1, 1]) == pytest.approx(law("shm").time(1000, 1) + law("shm").time(7000, 1))


def test_node_contention_scope_separates_nodes():
    """With contention per node, shm transmissions on two nodes do not share capacity."""
    from commcost.platform import Channel, ContentionScope, Platform

    shm = Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE)
    platform = Platform("p", PLATFORM.node_types, PLATFORM.nodes, (shm, PLATFORM.channels[1]))
    b = ScheduleBuilder(4).phase(mode=SendMode.POSTED).send(0, 1, 4000).send(2, 3, 4000)
    placed = PlacedSchedule.of(b.build(), platform, Mapping.on_nodes([0, 0, 1, 1]))
    assert TauLop(PARAMS).price(placed).time_s == pytest.approx(law("shm").time(4000, 1))


def random_schedule(seed: int, nprocs: int, ntx: int, nphases: int, posted_share: float) -> Schedule:
    rng = np.random.default_rng(seed)
    phase = np.sort(rng.integers(0, nphases, ntx))
    src = rng.integers(0, nprocs, ntx)
    dst = (src + rng.integers(1, nprocs, ntx)) % nprocs
    order = np.lexsort((src, phase))
    posted_rank = rng.random((nphases, nprocs)) < posted_share
    nbytes = rng.choice([0, 1, 100, 4096, 60000, 1 << 20], ntx).astype(float)
    return Schedule(nprocs, src[order], dst[order], nbytes, phase[order],
                    posted_rank[phase[order], src[order]], tuple(f"p{i}" for i in range(nphases)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(1, 60))
def test_fast_staircase_equals_event_loop(seed, nprocs, ntx):
    schedule = random_schedule(seed, nprocs, ntx, 3, posted_share=1.0)
    placed = PlacedSchedule.of(schedule, PLATFORM, Mapping.sequential(PLATFORM, nprocs, 8))
    fast = TauLop(PARAMS, fast=True).end_times(placed)
    events = TauLop(PARAMS, fast=False).end_times(placed)
    assert np.allclose(fast, events, rtol=1e-9, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(1, 60), st.floats(0, 1))
def test_engine_never_ends_before_any_transmission_alone(seed, nprocs, ntx, posted_share):
    """A transmission is never faster than alone on its channel, and a phase never ends before its longest."""
    schedule = random_schedule(seed, nprocs, ntx, 3, posted_share)
    placed = PlacedSchedule.of(schedule, PLATFORM, Mapping.sequential(PLATFORM, nprocs, -(-nprocs // 2)))
    model = TauLop(PARAMS)
    end = model.end_times(placed)
    laws = channel_laws(PARAMS, placed)
    alone = np.array([laws[c].time(m, 1) for c, m in zip(placed.channel, schedule.nbytes)])
    assert np.all(end >= alone * (1 - 1e-9))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 10), st.integers(1, 40), st.floats(0, 1), st.floats(1.0, 8.0))
def test_cost_never_falls_when_every_message_grows(seed, nprocs, ntx, posted_share, factor):
    schedule = random_schedule(seed, nprocs, ntx, 2, posted_share)
    mapping = Mapping.sequential(PLATFORM, nprocs, -(-nprocs // 2))
    model = TauLop(PARAMS)
    base = model.price(PlacedSchedule.of(schedule, PLATFORM, mapping)).time_s
    grown = model.price(PlacedSchedule.of(schedule.scaled(factor), PLATFORM, mapping)).time_s
    assert grown >= base * (1 - 1e-9)


@given(st.integers(1, 10), st.floats(1, 1e6), st.floats(1, 1e6))
def test_cost_never_falls_when_a_message_of_a_sequence_grows(k, m, extra):
    b1 = ScheduleBuilder(3).phase()
    b2 = ScheduleBuilder(3).phase()
    for i in range(k):
        dst = 1 + i % 2
        b1.send(0, dst, m)
        b2.send(0, dst, m + (extra if i == k - 1 else 0))
    assert price(b2, [0, 0, 1]) >= price(b1, [0, 0, 1]) * (1 - 1e-12)


def test_event_loop_equals_staircase_when_pieces_are_short_against_the_clock():
    """Thousands of distinct sizes in one domain: late pieces last far less than the time they
    start at. A piece's own end must not read as a cut (a rounding slip once re-paid latency
    millions of times and inflated the cost)."""
    rng = np.random.default_rng(3)
    n = 3000
    b = ScheduleBuilder(2 * n).phase(mode=SendMode.POSTED)
    for i, m in enumerate(rng.integers(1, 1 << 16, n)):
        b.send(2 * i, 2 * i + 1, float(m))
    placed = PlacedSchedule.of(b.build(), PLATFORM, Mapping.on_nodes([0] * (2 * n)))
    fast = TauLop(PARAMS, fast=True).end_times(placed)
    events = TauLop(PARAMS, fast=False).end_times(placed)
    assert np.allclose(fast, events, rtol=1e-9)
    trace = TauLop(PARAMS, fast=False).price(placed, explain=True).explain["timeline"]
    assert len(trace) <= n


def test_rank_times_dense_and_sorted_paths_agree():
    from commcost.models import base

    rng = np.random.default_rng(5)
    phase = np.sort(rng.integers(0, 7, 5000))
    rank = rng.integers(0, 300, 5000)
    value = rng.random(5000)
    dense = base._sum_of_group_max(phase, rank, value, 300)
    big = 4_000_001 // 7 + 1  # as many ranks as force the sorted path
    sparse = base._sum_of_group_max(phase, rank, value, big)[:300]
    assert np.allclose(dense, sparse)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 16), st.integers(1, 80), st.floats(0, 1))
def test_staircase_outside_chained_domains_equals_the_event_loop_everywhere(seed, nprocs, ntx, posted_share):
    """With chains of blocking sends across channels, the fast path runs the event loop only for the
    domains the chains reach and the staircase elsewhere (A3); it must equal the event loop on all."""
    schedule = random_schedule(seed, nprocs, ntx, 3, posted_share)
    placed = PlacedSchedule.of(schedule, PLATFORM, Mapping.sequential(PLATFORM, nprocs, -(-nprocs // 2)))
    fast = TauLop(PARAMS, fast=True).end_times(placed)
    events = TauLop(PARAMS, fast=False).end_times(placed)
    assert np.allclose(fast, events, rtol=1e-9, atol=1e-15)
    factors = np.array([0.5, 1.0, 7.0])
    swept = TauLop(PARAMS, fast=True).price_scaled(placed, factors)
    one_by_one = [TauLop(PARAMS, fast=False).total_time_s(PlacedSchedule.of(schedule.scaled(f), PLATFORM,
                                                                              placed.mapping)) for f in factors]
    assert np.allclose(swept, one_by_one, rtol=1e-9, atol=1e-15)


def test_split_binary_tree_chains_cross_node_edges_and_stay_exact():
    """Open MPI's split binary tree sends in sequence to children on two channels (a node's edge): those
    domains need the event loop, the others do not."""
    from commcost.collectives import Case, Collective, build, find

    platform = two_node_platform(cores=32)
    schedule = build(find(Collective.BCAST, "split_binary_tree"), Case(Collective.BCAST, 64, 1 << 16)).schedule
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 64, 32))
    split = TauLop(PARAMS)._split(placed)
    assert split.hard and np.any(split.easy) and not np.all(split.easy)
    assert np.allclose(TauLop(PARAMS).end_times(placed), TauLop(PARAMS, fast=False).end_times(placed), rtol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(1, 60), st.floats(0, 1))
def test_no_contention_domain_carries_its_bytes_faster_than_its_best_aggregate_pace(seed, nprocs, ntx,
                                                                                  posted_share):
    """The largest domain load (its bytes at the channel's least seconds per byte over every concurrency,
    TauLop.loads_s) never exceeds the price: what branch and bound prunes long pipelines with."""
    schedule = random_schedule(seed, nprocs, ntx, 3, posted_share)
    placed = PlacedSchedule.of(schedule, PLATFORM, Mapping.sequential(PLATFORM, nprocs, -(-nprocs // 2)))
    model = TauLop(PARAMS)
    assert model.loads_s(placed)[1].max() <= model.price(placed).time_s * (1 + 1e-12)
