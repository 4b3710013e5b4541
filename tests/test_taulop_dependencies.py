"""tau-Lop on dependency schedules (models/taulop/dependency_engine.py), against times worked by hand.

One network channel, one contention domain, and a linear table
(tests/taulop_fixtures.linear_table): o(m) = o + m * 1e-12 and
L(m, tau) = (lat + m s) k(tau), k(tau) = 1 + share (tau - 1). So a piece of
d bytes at concurrency tau lasts d v(tau), v(tau) = 1e-12 + s k(tau), and a
transmission ends F(tau) = o + lat k(tau) after its last byte moved, tau the
concurrency it ended in. The expected times below are written from these
formulas, not by the engine.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.models import PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.models.taulop.params import TauLopChannel, TauLopParams
from commcost.platform import Channel, Mapping, Node, NodeType, Platform
from commcost.schedule.schedule import ScheduleBuilder, SendMode
from taulop_fixtures import linear_table

LAT, S, SHARE, O = 1e-6, 1e-9, 0.5, 1e-6


def k(tau: int) -> float:
    return 1 + SHARE * (tau - 1)


def v(tau: int) -> float:
    return 1e-12 + S * k(tau)


def fixed(tau: int) -> float:
    return O + LAT * k(tau)


def one_domain(nranks: int) -> tuple[Platform, Mapping]:
    """Every rank on a node of its own, joined by one network channel with one contention domain."""
    kind = NodeType("one", 1)
    platform = Platform("net", (kind,), tuple(Node(f"n{i}", kind) for i in range(nranks)),
                        (Channel("net", 0, "world", ("net",)),))
    return platform, Mapping.sequential(platform, nranks, 1)


MODEL = TauLop(TauLopParams({"net": linear_table(LAT, S, SHARE, O)}))


def ends(builder: ScheduleBuilder, nranks: int) -> np.ndarray:
    platform, mapping = one_domain(nranks)
    return MODEL.end_times(PlacedSchedule.of(builder.build(), platform, mapping))


def test_equal_transmissions_started_together_cost_the_paper_s_tau_parallel_t():
    """Paper 000 eq. 5: three posted sends of m bytes, nothing to wait for: each ends at 3||T(m)."""
    b = ScheduleBuilder(4)
    b.phase("root posts", SendMode.POSTED)
    for dst in (1, 2, 3):
        b.add(0, dst, 4096, after=())
    b.add(1, 2, 0, after=[0])  # forces a dependency schedule; a zero-byte message after the first one
    got = ends(b, 4)
    t3 = O + 4096 * 1e-12 + (LAT + 4096 * S) * k(3)
    assert got[:3] == pytest.approx([t3] * 3, rel=1e-12)
    assert got[3] == pytest.approx(t3 + fixed(1), rel=1e-12)  # a zero-byte message costs T(0, 1)


def test_a_transmission_that_joins_a_running_one_shares_the_channel_from_then_on():
    """0 -> 1 (1,000 B) and 2 -> 3 (65,536 B) start together; rank 1 forwards 1,000 B to 0 once it has
    received them, joining 2 -> 3 in the middle of its piece."""
    m0, m1, m2 = 1000, 65536, 1000
    b = ScheduleBuilder(4)
    b.phase("first", SendMode.POSTED)
    first = b.add(0, 1, m0, after=())
    b.add(2, 3, m1, after=())
    b.phase("forward", SendMode.POSTED)
    b.add(1, 0, m2, after=[first])
    got = ends(b, 4)
    t1 = m0 * v(2)  # both move m0 bytes at tau = 2
    e0 = t1 + fixed(2)  # 0 -> 1 ends; rank 1 forwards now
    moved = m0 + (e0 - t1) / v(1)  # 2 -> 3 alone meanwhile
    t3 = e0 + m2 * v(2)  # the forward's bytes, at tau = 2
    e2 = t3 + fixed(2)
    e1 = t3 + (m1 - moved - m2) * v(1) + fixed(1)
    assert got == pytest.approx([e0, e1, e2], rel=1e-9)


def test_a_chain_of_receptions_adds_up():
    """0 -> 1 -> 2 -> 3, each waiting for its reception: three lone transmissions in a row."""
    b = ScheduleBuilder(4)
    b.phase("chain", SendMode.SEQUENCE)
    prev = b.add(0, 1, 2048, after=())
    prev = b.add(1, 2, 2048, after=[prev])
    b.add(2, 3, 2048, after=[prev])
    alone = O + 2048 * 1e-12 + (LAT + 2048 * S)
    assert ends(b, 4) == pytest.approx([alone, 2 * alone, 3 * alone], rel=1e-12)


def test_starts_spread_by_epsilon_cost_the_lockstep_price():
    """A step whose transmissions start a hair apart costs what it costs when they start together: the
    fixed cost is paid once per transmission, not again at every join and every end (which priced staggered
    rings up to 16x their lockstep price). Measured tables have L(0, tau) nearly flat in tau (the latency is
    not shared); with such a table the price is continuous in the start times."""
    sizes = np.array([0, 64, 1024, 8192, 65536, 1 << 20], dtype=float)
    L = np.stack([LAT + sizes * S * k(t) for t in range(1, 9)], axis=1)
    model = TauLop(TauLopParams({"net": TauLopChannel(sizes, O + sizes * 1e-12, L)}))
    platform, mapping = one_domain(9)

    def last_end(spread: float) -> float:
        b = ScheduleBuilder(9)
        b.phase("warm", SendMode.POSTED)
        # rank r's ring send waits for a message of spread * r bytes from rank r + 4: starts a hair apart
        warm = [b.add(r + 4, r, spread * r, after=()) for r in range(4)]
        b.phase("ring", SendMode.POSTED)
        for r in range(4):
            b.add(r, (r + 1) % 4, 4096, after=[warm[r]])
        return float(model.end_times(PlacedSchedule.of(b.build(), platform, mapping))[4:].max())

    together = last_end(0.0)
    for spread in (1.0, 10.0):
        assert last_end(spread) == pytest.approx(together, rel=5e-3)


@pytest.mark.parametrize("nprocs", [8, 33, 64, 100])
def test_a_ring_bcast_on_sequential_ranks_is_its_lockstep_price(nprocs):
    """Open MPI's scatter_allgather_ring on 32-rank nodes: the ring steps, released as each rank's
    receptions arrive, cost no more than steps in lockstep after a barrier (a fixed cost recharged at every
    join and end priced them far above it)."""
    kind = NodeType("n32", 32)
    platform = Platform("c", (kind,), tuple(Node(f"n{i}", kind) for i in range(4)),
                        (Channel("shm", 0, "node", ("shm", "shm")), Channel("ib", 1, "world", ("ib",))))
    params = TauLopParams({"shm": linear_table(2e-7, 2e-10, 0.5, 3e-7), "ib": linear_table(1.5e-6, 3e-10, 0.9, 1e-6)})
    model = TauLop(params)
    mapping = Mapping.sequential(platform, nprocs, 32)
    s = build(find(Collective.BCAST, "scatter_allgather_ring"), Case(Collective.BCAST, nprocs, 1024 * nprocs)).schedule
    exact = model.total_time_s(PlacedSchedule.of(s, platform, mapping))
    barrier = model.total_time_s(PlacedSchedule.of(s.without_dependencies(), platform, mapping))
    assert 0.5 * barrier < exact <= barrier * (1 + 1e-9)


def test_a_size_sweep_on_several_cores_gives_the_serial_numbers(monkeypatch):
    """Large sweeps run their factors in threads (the compiled loop releases the GIL): same numbers."""
    from commcost.io.params_file import load_params
    from commcost.models.taulop import dependency_sweep as dependency_engine
    from test_schedule_repeat import EX, cluster

    platform = cluster(4, 4)
    model = TauLop(load_params(EX / "params" / "illustrative.toml").for_model("taulop"), fold=False)
    schedule = build(find(Collective.BCAST, "scatter_allgather_ring"), Case(Collective.BCAST, 16, 16)).schedule
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 16, 4))
    factors = np.array([1.0, 3.0, 64.0, 4096.0, 65536.0])
    serial = model.price_scaled(placed, factors)
    monkeypatch.setattr(dependency_engine, "PARALLEL_FROM", 1)
    monkeypatch.setattr(dependency_engine.os, "cpu_count", lambda: 4)
    assert np.array_equal(model.price_scaled(placed, factors), serial)
    for f, t in zip(factors, serial):
        assert t == pytest.approx(model.total_time_s(PlacedSchedule.of(schedule.scaled(f), platform,
                                                                       placed.mapping)), rel=1e-12)
