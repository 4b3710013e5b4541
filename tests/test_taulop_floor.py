"""Floors of tau-Lop dependency prices (models/taulop/floor.py) and the branch and bound that uses them.

The linear table of tests/taulop_fixtures: T(m, tau) = o + m 1e-12 + (lat + m s) k(tau), k(tau) = 1 +
share (tau - 1), so by hand the least fixed cost is T(0, 1) = o + lat and the least time per byte is
1e-12 + s (both at tau = 1); a lone transmission or a chain of them costs exactly its floor.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build, find
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import PlacedSchedule
from commcost.models.taulop.floor import law_domain_floor, law_floor
from commcost.models.taulop.model import TauLop
from commcost.models.taulop.params import TauLopChannel, TauLopParams
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
from commcost.schedule.schedule import ScheduleBuilder, SendMode
from commcost.selection.select import candidates, schedule_pricer, select
from taulop_fixtures import SIZES, linear_table

ROOT = Path(__file__).resolve().parent.parent
LAT, S, SHARE, O = 1e-6, 1e-9, 0.5, 1e-6
MODEL = TauLop(TauLopParams({"net": linear_table(LAT, S, SHARE, O)}))


def one_domain(nranks: int) -> tuple[Platform, Mapping]:
    kind = NodeType("one", 1)
    platform = Platform("net", (kind,), tuple(Node(f"n{i}", kind) for i in range(nranks)),
                        (Channel("net", 0, "world", ("net",)),))
    return platform, Mapping.sequential(platform, nranks, 1)


def cluster(nnodes: int, ppn: int, scope: ContentionScope = ContentionScope.NODE) -> Platform:
    kind = NodeType("n", ppn)
    return Platform("c", (kind,), tuple(Node(f"n{i}", kind) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm"), scope), Channel("ib", 1, "world", ("ib",), scope)))


def test_the_floor_of_a_linear_table_is_its_lone_transmission_by_hand():
    law = MODEL.params.law("net", ("net",))
    fixed, per_byte = law_floor(law)
    assert fixed == pytest.approx(O + LAT, rel=1e-12)
    assert per_byte == pytest.approx(1e-12 + S, rel=1e-9)


def test_a_chain_of_lone_transmissions_costs_exactly_its_floor():
    """0 -> 1 -> 2 -> 3, each waiting for the reception before: concurrency 1 throughout, so the engine's
    price is the floor, 3 (o + lat + m (1e-12 + s)), at every factor."""
    b = ScheduleBuilder(4)
    b.phase("chain", SendMode.SEQUENCE)
    first = b.add(0, 1, 1000.0)
    second = b.add(1, 2, 1000.0, after=[first])
    b.add(2, 3, 1000.0, after=[second])
    platform, mapping = one_domain(4)
    placed = PlacedSchedule.of(b.build(), platform, mapping)
    factors = np.array([1.0, 10.0])
    by_hand = 3 * (O + LAT + 1000.0 * factors * (1e-12 + S))
    np.testing.assert_allclose(MODEL.floor_scaled(placed, factors), by_hand, rtol=1e-12)
    np.testing.assert_allclose(MODEL.price_scaled(placed, factors), by_hand, rtol=1e-9)


def test_a_domain_carries_at_most_tau_transmissions_at_their_shared_pace_by_hand():
    """L(m, tau) = L(m, 1) (1 + (tau - 1) / 2) up to tau_max = 8: tau transmissions together move a byte in
    (1e-12 + s (1 + (tau - 1) / 2)) / tau seconds at best, least at tau = 8; past it, rows o + tau S with
    S = L(m, 8) / 8, a byte in 4.5 s / 8 at best, which is less."""
    law = MODEL.params.law("net", ("net",))
    assert law_domain_floor(law) == pytest.approx(4.5 * S / 8, rel=1e-9)
    by_tau = [(1e-12 + S * (1 + SHARE * (t - 1))) / t for t in range(1, 9)]
    assert law_domain_floor(law) < min(by_tau)


def test_concurrent_sends_cost_more_than_their_floor():
    """Three posted sends of m bytes in one domain end at 3||T(m) > T(m); then a zero-byte message waits
    for the first: the longest path is T(m) + T(0), the domain's load 3 m at its best pace (4.5 s / 8 a
    byte: more), the price 3||T(m) + T(0, 1)."""
    b = ScheduleBuilder(4)
    b.phase("root posts", SendMode.POSTED)
    for dst in (1, 2, 3):
        b.add(0, dst, 8192.0, after=())
    b.add(1, 2, 0.0, after=[0])
    platform, mapping = one_domain(4)
    placed = PlacedSchedule.of(b.build(), platform, mapping)
    lone = O + LAT + 8192.0 * (1e-12 + S)
    carried = 3 * 8192.0 * 4.5 * S / 8
    assert carried > lone + O + LAT
    assert MODEL.floor_scaled(placed, np.array([1.0]))[0] == pytest.approx(carried, rel=1e-9)
    assert MODEL.price_scaled(placed, np.array([1.0]))[0] > 1.5 * lone


def test_a_table_flat_before_its_first_size_or_with_falling_saturation_has_no_per_byte_floor():
    """Sizes from 64 B: a piece of fewer bytes costs nothing beyond T(0); and an S(m) that falls somewhere
    makes o + tau S unbounded below per byte past tau_max: the per-byte floor is 0, the fixed one stays."""
    m = SIZES[1:]
    L = np.stack([(1e-6 + m * 1e-9) * t for t in (1, 2)], axis=1)
    flat_start = TauLopParams({"net": TauLopChannel(m, 1e-6 + 0 * m, L)}).law("net", ("net",))
    assert law_floor(flat_start) == (pytest.approx(2e-6 + 64e-9), 0.0)
    L = np.stack([(1e-6 + SIZES * 1e-9) * t for t in (1, 2)], axis=1)
    L[3, 1] = 0.5e-6  # L(8 KiB, tau_max) / tau_max falls below L(0, tau_max) / tau_max
    falling = TauLopParams({"net": TauLopChannel(SIZES, 1e-6 + 0 * SIZES, L)}).law("net", ("net",))
    assert law_floor(falling)[1] == 0.0


@pytest.mark.parametrize("scope", [ContentionScope.NODE, ContentionScope.CHANNEL])
@pytest.mark.parametrize("collective", list(Collective))
def test_the_floor_never_exceeds_the_price(collective, scope):
    """Every registry entry with dependencies, P = 5 and 40 on nodes of 8 (sequential and round-robin),
    three sizes and two factors, under the illustrative tables."""
    models = [TauLop(load_params(ROOT / "examples" / "params" / "illustrative.toml").for_model("taulop"))]
    platform = cluster(5, 8, scope)
    checked = 0
    for algorithm in algorithms(collective):
        for nprocs in (5, 40):
            if not algorithm.supports(nprocs):
                continue
            for mapping in (Mapping.sequential(platform, nprocs, 8), Mapping.round_robin(platform, nprocs)):
                for nbytes in (1, 3000, 1 << 20):
                    schedule = build(algorithm, Case(collective, nprocs, nbytes)).schedule
                    if not schedule.has_dependencies or schedule.ntransmissions == 0:
                        continue
                    placed = PlacedSchedule.of(schedule, platform, mapping)
                    for model in models:
                        factors = np.array([1.0, 7.0])
                        floor, price = model.floor_scaled(placed, factors), model.price_scaled(placed, factors)
                        assert np.all(floor <= price * (1 + 1e-12)), (algorithm.key, nprocs, nbytes, floor, price)
                        loads = model.loads_s(placed)[1].max()  # domains and receivers, at the size built
                        assert loads <= price[0] * (1 + 1e-12), (algorithm.key, nprocs, nbytes, loads, price)
                        checked += 1
    assert checked > 0


@pytest.mark.parametrize("machine", ["metropolis", "lusitania", "ciemat"])
def test_the_floor_holds_on_the_published_non_monotone_tables(machine):
    """The published tables break the model's constraints in many cells (issue 17: L(m, tau) not
    increasing everywhere); the floor clips at zero and stays below the engine's price for rings, trees and
    pipelines on the machines' own platforms (receiver-node contention)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = TauLop(load_params(ROOT / "examples" / "params" / f"{machine}.toml").for_model("taulop"))
    platform, _ = load_platform(ROOT / "examples" / machine / "platform.toml")
    ppn = min(8, platform.nodes[0].type.cores)
    for name in ("scatter_allgather_ring", "binomial", "pipeline", "split_binary_tree"):
        algorithm = find(Collective.BCAST, name)
        for nprocs in (2 * ppn, 3 * ppn):
            mapping = Mapping.sequential(platform, nprocs, ppn)
            for nbytes in (100, 5000, 300_000):
                placed = PlacedSchedule.of(build(algorithm, Case(Collective.BCAST, nprocs, nbytes)).schedule,
                                           platform, mapping)
                one = np.array([1.0])
                floor, price = model.floor_scaled(placed, one)[0], model.price_scaled(placed, one)[0]
                assert 0 < floor <= price * (1 + 1e-12), (name, nprocs, nbytes)
                assert model.loads_s(placed)[1].max() <= price * (1 + 1e-12), (name, nprocs, nbytes)


def test_branch_and_bound_picks_what_pricing_everything_picks():
    """select over Open MPI's bcasts (the ring included) at P = 8..256 on nodes of 32, 1 B .. 1 MiB:
    with the floors pruning, the picks and the times of every pick are those of pricing every candidate,
    and the ring is pruned at the largest P (its P - 1 steps' fixed costs alone exceed the best)."""
    model = TauLop(load_params(ROOT / "examples" / "params" / "illustrative.toml").for_model("taulop"))
    platform = cluster(9, 32)
    choices = [c for c in candidates(Collective.BCAST, "ompi") if c.algorithm.id is not None]
    price = schedule_pricer(model, platform, lambda p: Mapping.sequential(platform, p, 32))
    procs, sizes = [8, 64, 256], [1 << k for k in range(0, 21, 2)]
    pruned = select(Collective.BCAST, "ompi", choices, procs, sizes, price)
    full = select(Collective.BCAST, "ompi", choices, procs, sizes, price, prune=False)
    np.testing.assert_array_equal(pruned.best_index, full.best_index)
    np.testing.assert_allclose(pruned.best_time_s, full.best_time_s, rtol=1e-12)
    finite = np.isfinite(pruned.time_s)
    np.testing.assert_allclose(pruned.time_s[finite], full.time_s[finite], rtol=1e-12)
    ring = [i for i, c in enumerate(choices) if c.algorithm.name == "scatter_allgather_ring"][0]
    assert np.isinf(pruned.time_s[ring, -1]).sum() >= len(sizes) // 2
