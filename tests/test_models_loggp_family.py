"""Properties of the point-to-point models: Hockney, LogGP, LogGPH and HLogGP."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commcost.errors import InputError
from commcost.models import MODELS
from commcost.models.base import PlacedSchedule
from commcost.models.hloggp import HLogGP, HLogGPParams, Link, Processor, RankOverride
from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
from commcost.models.loggp import LogGP, LogGPH, LogGPHParams, LogGPParams, loggp_time_s
from commcost.models.timeline import LogGPArrays, loggp_end_times, queue_done, serialized
from commcost.platform import Channel, Mapping, Node, NodeType, Platform
from commcost.schedule import Schedule, ScheduleBuilder, SendMode

XEON = NodeType("xeon", cores=8)
K20 = NodeType("k20", cores=8, gpus=2)
CHANNELS = (Channel("shm", 0, "node", ("shm", "shm")), Channel("net", 1, "world", ("net",)))
TWO_NODES = Platform("two-nodes", (XEON,), (Node("n0", XEON), Node("n1", XEON)), CHANNELS)
HETERO = Platform("hetero", (XEON, K20), (Node("n0", XEON), Node("n1", K20)), CHANNELS)

SHM = LogGPParams(L_s=0.5e-6, o_s=1e-6, g_s=2e-6, G_s_per_byte=1e-10)
NET = LogGPParams(L_s=5e-6, o_s=1e-6, g_s=4e-6, G_s_per_byte=8e-10)
HOCKNEY = HockneyParams({"shm": HockneyChannel(1e-6, 1e-10), "net": HockneyChannel(5e-6, 8e-10)})


def place(schedule: Schedule, nodes: list[int], platform: Platform = TWO_NODES,
          gpu: list[int] | None = None) -> PlacedSchedule:
    kind = np.zeros(len(nodes), np.int8) if gpu is None else np.array(gpu, np.int8)
    mapping = Mapping(np.array(nodes), kind, np.ones(len(nodes), np.int64))
    return PlacedSchedule.of(schedule, platform, mapping)


def sends(nprocs: int, pairs: list[tuple[int, int, float]], mode: SendMode = SendMode.SEQUENCE) -> Schedule:
    b = ScheduleBuilder(nprocs).phase("p", mode)
    for src, dst, m in pairs:
        b.send(src, dst, m)
    return b.build()


def hloggp_like(loggph: LogGPHParams, o_s: float) -> HLogGPParams:
    """HLogGP with every processor alike (overhead o_s) and LogGPH's links."""
    return HLogGPParams(
        processors={"default": Processor(o_s, o_s)},
        links={name: Link(p.L_s, p.g_s, p.G_s_per_byte) for name, p in loggph.channels.items()},
    )


# --- plain-Python references: the recurrences of the module docstrings, written as loops ---

def reference_receivers(s: Schedule, arrival: np.ndarray, hold: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Each phase's receivers, one message at a time in the order their bytes begin to come in (arrival -
    hold; ties in array order): the port lets a message in at max(arrival, the last one's + hold), the
    processor is done with it service later, after the last one."""
    end = np.zeros(s.ntransmissions)
    queues: dict[tuple[int, int], list[int]] = {}
    for i in range(s.ntransmissions):
        queues.setdefault((int(s.phase[i]), int(s.dst[i])), []).append(i)
    for members in queues.values():
        port = done = -np.inf
        for i in sorted(members, key=lambda j: (arrival[j] - hold[j], j)):
            port = max(arrival[i], port + hold[i])
            done = max(port, done) + service[i]
            end[i] = done
    return end


def reference_hockney(s: Schedule, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    sent = np.zeros(s.ntransmissions)
    clock: dict[tuple[int, int], float] = {}
    for i in range(s.ntransmissions):
        key = (int(s.phase[i]), int(s.src[i]))
        start = clock.get(key, 0.0)
        sent[i] = start + (alpha[i] + beta[i] * s.nbytes[i])
        clock[key] = sent[i]
    return reference_receivers(s, sent, alpha + beta * s.nbytes, np.zeros(s.ntransmissions))


def reference_loggp(s: Schedule, p: LogGPArrays) -> np.ndarray:
    arrival = np.zeros(s.ntransmissions)
    clock: dict[tuple[int, int], float] = {}
    for i in range(s.ntransmissions):
        key = (int(s.phase[i]), int(s.src[i]))
        start = clock.get(key, 0.0)
        inj = p.o_send_s[i] + max(s.nbytes[i] - 1.0, 0.0) * p.G_s_per_byte[i]
        arrival[i] = start + inj + p.L_s[i]
        clock[key] = start + max(p.g_s[i], inj)
    hold = np.maximum(p.g_s, np.maximum(s.nbytes - 1.0, 0.0) * p.G_s_per_byte)
    return reference_receivers(s, arrival, hold, p.o_recv_s)


# --- limit cases ---

@pytest.mark.parametrize("nodes, channel", [([0, 0], "shm"), ([0, 1], "net")])
@pytest.mark.parametrize("m", [0, 1, 1000, 1 << 20])
def test_hockney_one_message_costs_alpha_plus_beta_m(nodes, channel, m):
    cost = Hockney(HOCKNEY).price(place(sends(2, [(0, 1, m)]), nodes))
    ch = HOCKNEY.channels[channel]
    assert cost.time_s == pytest.approx(ch.alpha_s + ch.beta_s_per_byte * m, rel=1e-15)


@pytest.mark.parametrize("m", [0, 1, 2, 1000, 1 << 20])
def test_loggp_one_message_costs_2o_plus_L_plus_m_minus_1_G(m):
    cost = LogGP(NET).price(place(sends(2, [(0, 1, m)]), [0, 1]))
    expected = 2 * NET.o_s + NET.L_s + max(m - 1, 0) * NET.G_s_per_byte
    assert cost.time_s == pytest.approx(expected, rel=1e-15)
    assert loggp_time_s(m, NET.L_s, NET.o_s, NET.G_s_per_byte) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("k", [1, 2, 7])
def test_hockney_k_messages_from_one_sender_cost_k_times_alpha_plus_beta_m(k):
    m = 4096
    cost = Hockney(HOCKNEY).price(place(sends(k + 1, [(0, 1 + i, m) for i in range(k)]), [0] * (k + 1)))
    ch = HOCKNEY.channels["shm"]
    assert cost.time_s == pytest.approx(k * (ch.alpha_s + ch.beta_s_per_byte * m), rel=1e-14)


def test_hockney_receivers_take_one_message_at_a_time():
    """Three messages into one rank at once: it takes them one after another, each alpha + beta m (the
    single port of Thakur, Rabenseifner and Gropp), as one rank's three sends leave."""
    m = 4096
    placed = place(sends(4, [(1, 0, m), (2, 0, m), (3, 0, m)]), [0] * 4)
    ch = HOCKNEY.channels["shm"]
    t = ch.alpha_s + ch.beta_s_per_byte * m
    assert Hockney(HOCKNEY).price(placed).time_s == pytest.approx(3 * t, rel=1e-15)
    np.testing.assert_allclose(Hockney(HOCKNEY).end_times(placed), [t, 2 * t, 3 * t], rtol=1e-15)


@pytest.mark.parametrize("m", [1, 10, 100_000])  # gap-bound and bandwidth-bound senders
@pytest.mark.parametrize("k", [1, 2, 5])
def test_loggp_k_messages_from_one_sender_end_as_the_formula_says(k, m):
    p = NET
    cost = LogGP(p).price(place(sends(k + 1, [(0, 1 + i, m) for i in range(k)]), [0] + [1] * k))
    inj = p.o_s + (m - 1) * p.G_s_per_byte
    expected = (k - 1) * max(p.g_s, inj) + 2 * p.o_s + p.L_s + (m - 1) * p.G_s_per_byte
    assert cost.time_s == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("m", [1, 1000, 100_000])  # gap-, overhead- and bandwidth-bound receptions
@pytest.mark.parametrize("k", [1, 2, 8])
def test_loggp_gather_of_k_messages_is_serialized_at_the_receiver(k, m):
    """k messages arriving together: the receiver's port takes one every u = max(g, (m-1) G), its processor
    spends o on each after that, so they are done o + j max(u, o) after the arrival (j = 0 .. k-1)."""
    p = NET
    placed = place(sends(k + 1, [(1 + i, 0, m) for i in range(k)]), [0] + [1] * k)
    arrival = p.o_s + (m - 1) * p.G_s_per_byte + p.L_s
    step = max(p.g_s, (m - 1) * p.G_s_per_byte, p.o_s)
    assert LogGP(p).price(placed).time_s == pytest.approx(arrival + p.o_s + (k - 1) * step, rel=1e-14)
    np.testing.assert_allclose(LogGP(p).end_times(placed), arrival + p.o_s + step * np.arange(k), rtol=1e-14)


def test_posted_and_sequence_sends_cost_the_same():
    pairs = [(0, 1, 100), (0, 2, 5000), (0, 3, 7), (1, 0, 64)]
    seq = place(sends(4, pairs, SendMode.SEQUENCE), [0, 0, 1, 1])
    posted = place(sends(4, pairs, SendMode.POSTED), [0, 0, 1, 1])
    for model in (Hockney(HOCKNEY), LogGP(NET), LogGPH(LogGPHParams({"shm": SHM, "net": NET}))):
        np.testing.assert_array_equal(model.end_times(seq), model.end_times(posted))


def test_empty_schedule_costs_nothing():
    placed = place(ScheduleBuilder(2).phase("empty").build(), [0, 1])
    for model in (Hockney(HOCKNEY), LogGP(NET), LogGPH(LogGPHParams({"shm": SHM, "net": NET})),
                  HLogGP(hloggp_like(LogGPHParams({"shm": SHM, "net": NET}), 1e-6))):
        assert model.price(placed).time_s == 0.0


# --- equivalences between the models ---

@st.composite
def schedules(draw, max_nprocs=12, matchings=False):
    """Random phases of random sends; sizes often equal, so arrival ties are common.

    With ``matchings``, each rank sends at most one and receives at most one transmission per phase, so no
    rank's queue has an order that timing could change."""
    nprocs = draw(st.integers(2, max_nprocs))
    builder = ScheduleBuilder(nprocs)
    size = st.one_of(st.sampled_from([0, 1, 2, 1024]), st.integers(0, 10**6), st.floats(0, 1e6))
    for _ in range(draw(st.integers(1, 4))):
        builder.phase(mode=draw(st.sampled_from(SendMode)))
        for rank in draw(st.lists(st.integers(0, nprocs - 1), max_size=nprocs, unique=True)):
            builder.set_mode(rank, draw(st.sampled_from(SendMode)))
        senders: set[int] = set()
        receivers: set[int] = set()
        for _ in range(draw(st.integers(0, 30))):
            src = draw(st.integers(0, nprocs - 1))
            dst = draw(st.integers(0, nprocs - 2))
            dst += dst >= src
            if matchings and (src in senders or dst in receivers):
                continue
            senders.add(src)
            receivers.add(dst)
            builder.send(src, dst, draw(size))
    schedule = builder.build()
    nodes = draw(st.lists(st.integers(0, 1), min_size=nprocs, max_size=nprocs))
    gpu = draw(st.lists(st.integers(0, 1), min_size=nprocs, max_size=nprocs))
    return schedule, nodes, gpu


times = st.sampled_from([0.0, 1e-6, 2e-6, 3.3e-6, 1e-5])
per_byte = st.sampled_from([0.0, 1e-10, 8e-10, 3e-9])
loggp_params = st.builds(LogGPParams, L_s=times, o_s=times, g_s=times, G_s_per_byte=per_byte)
link_params = st.builds(Link, L_s=times, g_s=times, G_s_per_byte=per_byte)
processor_params = st.builds(Processor, o_send_s=times, o_recv_s=times)


@st.composite
def hloggp_params(draw, nprocs: int):
    return HLogGPParams(
        processors={"default": draw(processor_params), "k20": draw(processor_params),
                    "k20:gpu": draw(processor_params)},
        links={"shm": draw(link_params), "net": draw(link_params), "net:xeon:k20": draw(link_params)},
        ranks=draw(st.dictionaries(st.integers(0, nprocs + 2),
                                   st.builds(RankOverride, st.none() | times, st.none() | times), max_size=3)),
        pairs=draw(st.dictionaries(st.tuples(st.integers(0, nprocs + 2), st.integers(0, nprocs + 2))
                                   .filter(lambda p: p[0] != p[1]), link_params, max_size=4)),
    )


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(schedules(), loggp_params)
def test_loggph_with_identical_channels_equals_loggp(drawn, p):
    schedule, nodes, _ = drawn
    placed = place(schedule, nodes)
    np.testing.assert_array_equal(LogGPH(LogGPHParams({"shm": p, "net": p})).end_times(placed),
                                  LogGP(p).end_times(placed))


@FAST
@given(schedules(), loggp_params, loggp_params, times)
def test_hloggp_with_identical_processors_equals_loggph(drawn, shm, net, o_s):
    schedule, nodes, gpu = drawn
    loggph = LogGPHParams({"shm": replace(shm, o_s=o_s), "net": replace(net, o_s=o_s)})
    placed = place(schedule, nodes, HETERO, gpu)
    np.testing.assert_array_equal(HLogGP(hloggp_like(loggph, o_s)).end_times(placed),
                                  LogGPH(loggph).end_times(placed))


def test_hloggp_picks_gpu_node_type_and_directed_link_entries():
    params = HLogGPParams(
        processors={"default": Processor(1e-6, 2e-6), "k20": Processor(3e-6, 4e-6),
                    "k20:gpu": Processor(5e-6, 6e-6)},
        links={"shm": Link(1e-7, 0.0, 0.0), "net": Link(1e-5, 0.0, 0.0), "net:k20:xeon": Link(2e-5, 0.0, 0.0)},
    )
    # ranks: 0 CPU on xeon, 1 CPU on k20, 2 GPU on k20
    placed = place(sends(3, [(0, 1, 0), (1, 0, 0), (2, 0, 0), (1, 2, 0)]), [0, 1, 1], HETERO, [0, 0, 1])
    arrays = params.per_transmission(placed)
    np.testing.assert_array_equal(arrays.o_send_s, [1e-6, 3e-6, 5e-6, 3e-6])
    np.testing.assert_array_equal(arrays.o_recv_s, [4e-6, 2e-6, 2e-6, 6e-6])
    np.testing.assert_array_equal(arrays.L_s, [1e-5, 2e-5, 2e-5, 1e-7])


@FAST
@given(schedules(), st.data())
def test_hloggp_overrides_change_only_the_affected_transmissions(drawn, data):
    schedule, nodes, gpu = drawn
    placed = place(schedule, nodes, HETERO, gpu)
    base = data.draw(hloggp_params(schedule.nprocs))
    rank = data.draw(st.integers(0, schedule.nprocs - 1))
    pair = data.draw(st.tuples(st.integers(0, schedule.nprocs - 1), st.integers(0, schedule.nprocs - 1))
                     .filter(lambda p: p[0] != p[1]))
    bumped = replace(base, ranks={**base.ranks, rank: RankOverride(7.7e-3, 8.8e-3)},
                     pairs={**base.pairs, pair: Link(1.1e-3, 2.2e-3, 3.3e-3)})
    before, after = base.per_transmission(placed), bumped.per_transmission(placed)
    s = schedule
    hit_pair = (s.src == pair[0]) & (s.dst == pair[1])
    for name, affected in (("o_send_s", s.src == rank), ("o_recv_s", s.dst == rank), ("L_s", hit_pair),
                           ("g_s", hit_pair), ("G_s_per_byte", hit_pair)):
        old, new = getattr(before, name), getattr(after, name)
        np.testing.assert_array_equal(old[~affected], new[~affected])
        assert np.all(new[affected] > 1e-3)


# --- the vectorized evaluator against the loops ---

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules(), st.data())
def test_vectorized_evaluator_equals_reference_loop(drawn, data):
    schedule, nodes, gpu = drawn
    placed = place(schedule, nodes, HETERO, gpu)
    shm, net = data.draw(loggp_params), data.draw(loggp_params)
    hock = HockneyParams({"shm": HockneyChannel(shm.L_s, shm.G_s_per_byte),
                          "net": HockneyChannel(net.L_s, net.G_s_per_byte)})
    alpha = np.where(placed.channel == 0, shm.L_s, net.L_s)
    beta = np.where(placed.channel == 0, shm.G_s_per_byte, net.G_s_per_byte)
    np.testing.assert_allclose(Hockney(hock).end_times(placed), reference_hockney(schedule, alpha, beta),
                               rtol=1e-12, atol=1e-18)

    hlog = data.draw(hloggp_params(schedule.nprocs))
    loggph = LogGPHParams({"shm": shm, "net": net})
    for model, arrays in ((LogGP(shm), shm.per_transmission(schedule.ntransmissions)),
                          (LogGPH(loggph), loggph.per_transmission(placed)),
                          (HLogGP(hlog), hlog.per_transmission(placed))):
        np.testing.assert_allclose(model.end_times(placed), reference_loggp(schedule, arrays),
                                   rtol=1e-12, atol=1e-18, err_msg=model.NAME)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1.0, 2.5, 1e-6]),
                          st.sampled_from([0.0, 1.0, 0.1])), max_size=40))
def test_queue_takes_arrivals_in_order_ties_in_array_order(jobs):
    key = np.array([j[0] for j in jobs], dtype=np.int64)
    arrival = np.array([j[1] for j in jobs])
    service = np.array([j[2] for j in jobs])
    done = queue_done(key, arrival, service)
    expected = np.zeros(len(jobs))
    for k in set(key.tolist()):
        free = -np.inf
        for i in sorted(np.flatnonzero(key == k), key=lambda i: (arrival[i], i)):
            free = max(free, arrival[i]) + service[i]
            expected[i] = free
    np.testing.assert_allclose(done, expected, rtol=1e-14, atol=1e-300)


def test_serialized_groups_need_not_be_contiguous_and_long_groups_are_exact():
    rng = np.random.default_rng(7)
    key = rng.integers(0, 5, 3000)
    key[:1500] = 2  # one long group among short ones
    busy = rng.random(3000)
    start, end = serialized(key, busy)
    for k in range(5):
        members = np.flatnonzero(key == k)
        clock = 0.0
        for i in members:
            assert start[i] == clock
            clock += busy[i]
            assert end[i] == clock


# --- monotonicity ---

@FAST
@given(schedules(matchings=True), st.data())
def test_cost_never_falls_when_a_message_grows(drawn, data):
    """Where no rank's queue can be reordered (one send and one receive per rank per phase), every price is a
    max-plus composition of the sizes, so growing one cannot lower it. Where a queue can be reordered it can
    (test_a_larger_message_can_finish_a_first_come_first_served_queue_sooner)."""
    schedule, nodes, gpu = drawn
    if schedule.ntransmissions == 0:
        return
    i = data.draw(st.integers(0, schedule.ntransmissions - 1))
    grown = schedule.nbytes.copy()
    grown[i] += data.draw(st.sampled_from([1.0, 0.5, 1000.0, 1e6]))
    bigger = Schedule(schedule.nprocs, schedule.src, schedule.dst, grown, schedule.phase, schedule.posted,
                      schedule.phase_names)
    shm, net = data.draw(loggp_params), data.draw(loggp_params)
    models = (Hockney(HOCKNEY), LogGP(shm), LogGPH(LogGPHParams({"shm": shm, "net": net})),
              HLogGP(data.draw(hloggp_params(schedule.nprocs))))
    for model in models:
        small = model.price(place(schedule, nodes, HETERO, gpu))
        large = model.price(place(bigger, nodes, HETERO, gpu))
        assert np.all(large.phase_time_s >= small.phase_time_s * (1 - 1e-12)), model.NAME
        assert large.time_s >= small.time_s * (1 - 1e-12), model.NAME



def test_a_larger_message_can_finish_a_first_come_first_served_queue_sooner():
    """A list-scheduling anomaly that the models keep, as MPI's matching would: rank 1 takes its receives first
    come, first served (o_recv = 1 us each). Rank 3 sends rank 0 one byte, then rank 1 10,000 bytes (8 us on
    the wire); rank 0 forwards five empty messages to rank 1 once it has its byte. Growing the byte to two
    delays the large message just past the fifth of rank 0's, so rank 1 no longer waits for it first."""
    params = HLogGPParams(processors={"default": Processor(o_send_s=0.0, o_recv_s=1e-6)},
                          links={"shm": Link(L_s=0.0, g_s=0.0, G_s_per_byte=8e-10)}, ranks={}, pairs={})

    def price(first: int) -> float:
        builder = ScheduleBuilder(4).phase()
        builder.send(3, 0, first)
        for _ in range(4):
            builder.send(0, 1, 0)
        builder.send(3, 1, 10_000)
        builder.send(0, 1, 0)
        return HLogGP(params).price(place(builder.build(), [0] * 4, HETERO, [0] * 4)).time_s

    assert price(2) < price(1) - 0.9e-6

# --- parameters in and out ---

def test_every_point_to_point_model_is_registered_with_its_params_class():
    assert MODELS["hockney"] is Hockney and MODELS["loggp"] is LogGP
    assert MODELS["loggph"] is LogGPH and MODELS["hloggp"] is HLogGP
    for model in (Hockney, LogGP, LogGPH, HLogGP):
        assert model.DESCRIPTION and "\n" not in model.DESCRIPTION
        assert hasattr(model.PARAMS, "from_dict") and hasattr(model.PARAMS, "to_dict")


TOML = """
[hockney.shm]
alpha_s = 1e-6
beta_s_per_byte = 1e-10
[hockney.net]
alpha_s = 5e-6
beta_s_per_byte = 8e-10

[loggp]
L_s = 5e-6
o_s = 1e-6
g_s = 4e-6
G_s_per_byte = 8e-10

[loggph.shm]
L_s = 5e-7
o_s = 1e-6
g_s = 2e-6
G_s_per_byte = 1e-10
[loggph.net]
L_s = 5e-6
o_s = 1e-6
g_s = 4e-6
G_s_per_byte = 8e-10

[hloggp]
pairs = [[0, 1, 2e-6, 1e-6, 1e-10]]
[hloggp.processors.default]
o_send_s = 1e-6
o_recv_s = 1.2e-6
[hloggp.processors."k20:gpu"]
o_send_s = 4e-6
o_recv_s = 5e-6
[hloggp.links.shm]
L_s = 5e-7
g_s = 2e-6
G_s_per_byte = 1e-10
[hloggp.links.net]
L_s = 5e-6
g_s = 4e-6
G_s_per_byte = 8e-10
[hloggp.links."net:k20:xeon"]
L_s = 7e-6
g_s = 4e-6
G_s_per_byte = 9e-10
[hloggp.ranks.3]
o_send_s = 2e-6
"""


@pytest.mark.parametrize("section, model", [("hockney", Hockney), ("loggp", LogGP), ("loggph", LogGPH),
                                            ("hloggp", HLogGP)])
def test_params_round_trip_through_toml_and_to_dict(section, model):
    data = tomllib.loads(TOML)[section]
    params = model.PARAMS.from_dict(data)
    assert params.to_dict() == data
    assert model.PARAMS.from_dict(params.to_dict()) == params


def test_loaded_hloggp_params_price_a_schedule():
    params = HLogGPParams.from_dict(tomllib.loads(TOML)["hloggp"])
    placed = place(sends(4, [(0, 1, 100), (1, 0, 100), (3, 2, 100)]), [0, 1, 1, 0], HETERO, [0, 1, 0, 0])
    arrays = params.per_transmission(placed)
    np.testing.assert_array_equal(arrays.o_send_s, [1e-6, 4e-6, 2e-6])
    np.testing.assert_array_equal(arrays.L_s, [2e-6, 7e-6, 5e-6])
    assert HLogGP(params).price(placed).time_s > 0


GOOD_HOCKNEY = {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10}
GOOD_LOGGP = {"L_s": 1e-6, "o_s": 1e-6, "g_s": 1e-6, "G_s_per_byte": 1e-10}
GOOD_HLOGGP = {"processors": {"default": {"o_send_s": 1e-6, "o_recv_s": 1e-6}},
               "links": {"ib": {"L_s": 1e-6, "g_s": 1e-6, "G_s_per_byte": 1e-10}}}


def _with(base: dict, path: tuple, value) -> dict:
    import copy
    data = copy.deepcopy(base)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize("cls, data, where, expected", [
    (HockneyParams, {"shm": {**GOOD_HOCKNEY, "alpha_s": "abc"}}, "shm.alpha_s",
     "expected a number >= 0 (seconds), got 'abc'"),
    (HockneyParams, {"shm": {**GOOD_HOCKNEY, "beta_s_per_byte": -1}}, "shm.beta_s_per_byte",
     "expected a number >= 0 (seconds per byte), got -1"),
    (HockneyParams, {"shm": {"alpha_s": 1e-6}}, "shm.beta_s_per_byte", "missing beta_s_per_byte"),
    (HockneyParams, {"shm": {**GOOD_HOCKNEY, "gamma": 1}}, "shm.gamma", "unknown key 'gamma'"),
    (HockneyParams, {"alpha_s": 1e-6}, "alpha_s", "e.g. [hockney.shm]"),
    (LogGPParams, {**GOOD_LOGGP, "L_s": float("nan")}, "L_s", "expected a number >= 0 (seconds), got nan"),
    (LogGPParams, {**GOOD_LOGGP, "g_s": float("inf")}, "g_s", "expected a number >= 0"),
    (LogGPParams, {**GOOD_LOGGP, "o_s": True}, "o_s", "expected a number >= 0"),
    (LogGPParams, {k: v for k, v in GOOD_LOGGP.items() if k != "o_s"}, "o_s", "missing o_s"),
    (LogGPHParams, {"ib": {**GOOD_LOGGP, "G": 1}}, "ib.G", "unknown key 'G'"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("links", "ib", "L_s"), "x"), "links.ib.L_s",
     "expected a number >= 0 (seconds), got 'x'"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("processors", "default", "o_recv_s"), KeyError),
     "processors.default.o_recv_s", "missing o_recv_s"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("links",), KeyError), "links", "missing links"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("speed",), 1), "speed", "unknown key 'speed'"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("processors", "xeon:cpu"), {"o_send_s": 0, "o_recv_s": 0}),
     "processors.xeon:cpu", '"<nodetype>:gpu"'),
    (HLogGPParams, _with(GOOD_HLOGGP, ("links", "ib:xeon"), GOOD_HLOGGP["links"]["ib"]),
     "links.ib:xeon", '"<channel>:<srctype>:<dsttype>"'),
    (HLogGPParams, _with(GOOD_HLOGGP, ("ranks",), {"r1": {"o_send_s": 1e-6}}), "ranks.r1", "rank number >= 0"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("ranks",), {"1": {"o_sent_s": 1e-6}}), "ranks.1.o_sent_s",
     "unknown key 'o_sent_s'"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("pairs",), [[0, 1, 1e-6, 1e-6]]), "pairs[0]",
     "expected [src, dst, L_s, g_s, G_s_per_byte]"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("pairs",), [[0, 1, 1e-6, 1e-6, -2.0]]), "pairs[0].G_s_per_byte",
     "expected a number >= 0 (seconds per byte), got -2.0"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("pairs",), [[0, 1.5, 1e-6, 1e-6, 0]]), "pairs[0].dst", "rank number"),
    (HLogGPParams, _with(GOOD_HLOGGP, ("pairs",), [[0, 1, 0, 0, 0], [0, 1, 0, 0, 0]]), "pairs[1]", "twice"),
])
def test_bad_params_raise_input_error_naming_field_and_expectation(cls, data, where, expected):
    with pytest.raises(InputError) as info:
        cls.from_dict(data)
    assert info.value.where == where
    assert where in str(info.value) and expected in str(info.value)


def test_pricing_names_the_channel_or_node_type_without_parameters():
    placed = place(sends(2, [(0, 1, 10)]), [0, 1])
    with pytest.raises(InputError, match="net"):
        Hockney(HockneyParams({"shm": HockneyChannel(0, 0)})).price(placed)
    with pytest.raises(InputError, match="net"):
        LogGPH(LogGPHParams({"shm": SHM})).price(placed)
    no_default = HLogGPParams({"k20": Processor(0, 0)}, {"net": Link(0, 0, 0)})
    with pytest.raises(InputError, match="xeon") as info:
        HLogGP(no_default).price(placed)
    assert info.value.where == "hloggp.processors.xeon"
    no_link = HLogGPParams({"default": Processor(0, 0)}, {"shm": Link(0, 0, 0)})
    with pytest.raises(InputError, match="net"):
        HLogGP(no_link).price(placed)


def test_explain_states_the_law():
    placed = place(sends(2, [(0, 1, 10)]), [0, 1])
    for model in (Hockney(HOCKNEY), LogGP(NET), LogGPH(LogGPHParams({"shm": SHM, "net": NET})),
                  HLogGP(hloggp_like(LogGPHParams({"shm": SHM, "net": NET}), 1e-6))):
        assert model.price(placed, explain=True).explain["law"]


def test_loggp_end_times_accepts_plain_arrays():
    phase, src, dst = np.zeros(2, np.int64), np.array([0, 0]), np.array([1, 1])
    ones = np.ones(2)
    end = loggp_end_times(phase, src, dst, 2, np.array([1.0, 1.0]), LogGPArrays(ones, ones, ones, ones, ones * 0))
    # message 0: arrives 2, done 3; message 1 starts at 1, arrives 3, done 4
    np.testing.assert_array_equal(end, [3.0, 4.0])
