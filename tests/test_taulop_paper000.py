"""Paper 000's worked examples as golden tests: eq. 8-10 (SUMMA, Fig. 8), Wave2D (section 4.2), eq. 4."""

from __future__ import annotations

import pytest

from commcost.models.base import PlacedSchedule
from commcost.models.taulop import algebra
from commcost.models.taulop.model import TauLop, channel_laws
from commcost.platform import Mapping
from commcost.schedule import ScheduleBuilder, SendMode, SizeUnit

from taulop_fixtures import two_channel_params, two_node_platform

BLOCK = SizeUnit("block", 8192)


def fig8_schedule():
    """Fig. 8, iteration 80: pbc sends of p1 and p4 (shm first, as the paper's cost writes them), then pbr."""
    b = ScheduleBuilder(6, "fig8", BLOCK)
    b.phase("pbc")
    for dst, size in [(0, 134), (3, 146), (5, 12)]:
        b.send(1, dst, size)
    for dst, size in [(3, 6), (5, 110), (2, 104)]:
        b.send(4, dst, size)
    b.phase("pbr")
    b.send(1, 4, 124).send(0, 5, 97).send(3, 2, 35)
    return b.build()


@pytest.fixture
def fig8():
    platform = two_node_platform()
    return PlacedSchedule.of(fig8_schedule(), platform, Mapping.sequential(platform, 6, 3))


def text(expr, placed):
    ids = [c.id for c in placed.platform.channels]
    return algebra.to_text(expr, ids.__getitem__, placed.schedule.unit.nbytes)


def test_fig8_pbc_is_eq8(fig8):
    _, phases = TauLop(two_channel_params()).formula(fig8)
    assert algebra.parse_terms(text(phases[0], fig8)) == algebra.parse_terms(
        "2||T^0(116) + T^0(18) + 2||T^1(104) + T^1(54)")


def test_fig8_pbr_is_eq9(fig8):
    _, phases = TauLop(two_channel_params()).formula(fig8)
    assert algebra.parse_terms(text(phases[1], fig8)) == algebra.parse_terms(
        "3||T^1(35) + 2||T^1(62) + T^1(27)")


def test_fig8_total_is_eq10(fig8):
    total, _ = TauLop(two_channel_params()).formula(fig8)
    assert algebra.parse_terms(text(total, fig8)) == algebra.parse_terms(
        "3||T^1(35) + 2||T^1(166) + T^1(81) + 2||T^0(116) + T^0(18)")


def test_engine_equals_algebra_on_eq9(fig8):
    model = TauLop(two_channel_params())
    cost = model.price(fig8)
    _, phases = model.formula(fig8)
    laws = channel_laws(model.params, fig8)
    assert cost.phase_time_s[1] == pytest.approx(algebra.value(phases[1], laws), rel=1e-12)


def test_engine_differs_from_eq8_shortcut(fig8):
    """Eq. 8 aligns p1's and p4's sends by position, as if both switched to the network at once.

    In the exact engine p4 finishes its 116 shm blocks first and starts its
    network send while p1 still has 18 shm blocks to go, so p4's network
    send runs alone for a while and the phase ends earlier than the
    shortcut says. With these tables the shortcut overestimates by ~4%.
    """
    model = TauLop(two_channel_params())
    cost = model.price(fig8, explain=True)
    _, phases = model.formula(fig8)
    shortcut = algebra.value(phases[0], channel_laws(model.params, fig8))
    exact = cost.phase_time_s[0]
    assert exact < shortcut
    assert shortcut / exact == pytest.approx(1.043, abs=0.01)
    assert cost.explain["phases"][0]["formula_s"] == pytest.approx(shortcut)
    assert cost.explain["phases"][0]["engine_s"] == pytest.approx(exact)
    assert any(piece["cut"] for piece in cost.explain["timeline"])


def wave2d_rank1():
    b = ScheduleBuilder(8, "wave2d", SizeUnit("double", 8))
    b.phase("halo", SendMode.POSTED)
    for dst, size in [(2, 64), (4, 48), (3, 64), (6, 64), (0, 64), (5, 16)]:
        b.send(1, dst, size)
    platform = two_node_platform()
    mapping = Mapping.on_nodes([0, 0, 1, 0, 1, 0, 0, 1])
    return PlacedSchedule.of(b.build(), platform, mapping)


def test_wave2d_rank1_reduces_by_a2_and_a3():
    """T^1(64)||T^1(48)||T^0(64)||T^0(64)||T^0(64)||T^0(16): channels apart (A3), staircases inside (A2)."""
    placed = wave2d_rank1()
    total, _ = TauLop(two_channel_params()).formula(placed)
    assert len(total.items) == 1 and isinstance(total.items[0], algebra.Max)
    parts = sorted(text(part, placed) for part in total.items[0].parts)
    assert parts == ["2||T^1(48) + T^1(16)", "4||T^0(16) + 3||T^0(48)"]


def test_engine_equals_algebra_on_wave2d():
    placed = wave2d_rank1()
    model = TauLop(two_channel_params())
    total, _ = model.formula(placed)
    expected = algebra.value(total, channel_laws(model.params, placed))
    assert model.price(placed).time_s == pytest.approx(expected, rel=1e-12)
    assert TauLop(model.params, fast=False).price(placed).time_s == pytest.approx(expected, rel=1e-12)


def binomial16():
    b = ScheduleBuilder(16, "binomial", SizeUnit("MiB", 1 << 20))
    for i in range(4):
        b.phase(f"stage {i}")
        for r in range(2**i):
            b.send(r, r + 2**i, 1)
    platform = two_node_platform()
    return PlacedSchedule.of(b.build(), platform, Mapping.sequential(platform, 16, 16))


def test_binomial_is_eq4():
    placed = binomial16()
    model = TauLop(two_channel_params())
    total, _ = model.formula(placed)
    assert text(total, placed) == "T^0(1) + 2||T^0(1) + 4||T^0(1) + 8||T^0(1)"
    assert model.price(placed).time_s == pytest.approx(
        algebra.value(total, channel_laws(model.params, placed)), rel=1e-12)
