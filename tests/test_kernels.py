"""SUMMA and Wave2D schedules built from a partition (paper 000 section 4, Algorithm 1, eq. 8-14)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.io.partition_file import read_partition
from commcost.io.schedule_file import load_schedule
from commcost.kernels import Partition2D, summa, summa_iteration, wave2d
from commcost.kernels.summa import iteration_of_phase
from commcost.kernels.wave2d import neighbours
from commcost.models.base import PlacedSchedule
from commcost.models.taulop import algebra
from commcost.models.taulop.model import TauLop
from commcost.platform import Mapping

from taulop_fixtures import two_channel_params, two_node_platform
from test_taulop_paper000 import text

PAPER = Path(__file__).resolve().parent.parent / "examples" / "paper000"
EQ8 = "2||T^0(116) + T^0(18) + 2||T^1(104) + T^1(54)"
EQ9 = "3||T^1(35) + 2||T^1(62) + T^1(27)"
EQ10 = "3||T^1(35) + 2||T^1(166) + T^1(81) + 2||T^0(116) + T^0(18)"


@pytest.fixture(scope="module")
def fig8():
    return read_partition(PAPER / "fig8_partition.txt")


def placed(schedule, part: Partition2D) -> PlacedSchedule:
    platform = two_node_platform()
    return PlacedSchedule.of(schedule, platform, Mapping.from_node_names(platform, list(part.hosts)))


def test_summa_iteration_80_is_the_hand_schedule(fig8):
    built, hand = summa_iteration(fig8, 80), load_schedule(PAPER / "summa_k80.json")
    for attr in ("src", "dst", "nbytes", "phase", "posted"):
        assert getattr(built, attr).tolist() == getattr(hand, attr).tolist(), attr
    assert built.unit.nbytes == hand.unit.nbytes == 32 * 32 * 8


def test_summa_iteration_80_gives_eq_8_9_10(fig8):
    p = placed(summa_iteration(fig8, 80), fig8)
    total, phases = TauLop(two_channel_params()).formula(p)
    for expr, expected in ((phases[0], EQ8), (phases[1], EQ9), (total, EQ10)):
        assert algebra.parse_terms(text(expr, p)) == algebra.parse_terms(expected)


def test_summa_runs_all_iterations_with_repeats(fig8):
    s = summa(fig8)
    spans = iteration_of_phase(s)
    assert s.nphases == 12 and int(s.repeat[::2].sum()) == 256
    assert spans[::2] == [(0, 123), (124, 133), (134, 145), (146, 151), (152, 220), (221, 255)]
    assert spans[::2] == spans[1::2] and [b - a + 1 for a, b in spans] == s.repeat.tolist()
    one = summa_iteration(fig8, 80)
    at80 = [i for i, (a, b) in enumerate(spans) if a <= 80 <= b]
    assert len(at80) == 2
    for mine, k in zip(at80, range(2)):
        sl = s.phase_slices()[mine]
        assert s.dst[sl].tolist() == one.dst[one.phase_slices()[k]].tolist()


def test_summa_total_is_the_sum_of_its_iterations():
    part = Partition2D(8, 2, ("node0", "node0", "node1"), np.array([0, 0, 5]), np.array([0, 3, 0]),
                       np.array([5, 5, 3]), np.array([3, 5, 8]))
    model = TauLop(two_channel_params())
    whole = model.price(placed(summa(part), part)).time_s
    each = sum(model.price(placed(summa_iteration(part, k), part)).time_s for k in range(8))
    assert whole == pytest.approx(each, rel=1e-12)


def test_wave2d_sends_shared_edges_posted():
    # 2 x 2 grid of 4 x 4 blocks plus nothing diagonal: rank 0 touches 1 (right) and 2 (below), not 3.
    part = Partition2D(8, 16, ("a", "a", "b", "b"), np.array([0, 4, 0, 4]), np.array([0, 0, 4, 4]),
                       np.array([4, 4, 4, 4]), np.array([4, 4, 4, 4]))
    assert neighbours(part, 0) == [(1, 4), (2, 4)]
    s = wave2d(part, steps=10)
    assert s.ntransmissions == 8 and s.repeat.tolist() == [10] and s.posted.all()
    assert set(s.nbytes.tolist()) == {4 * 16 * 8}


def test_wave2d_on_fig8_partition(fig8):
    assert neighbours(fig8, 1) == [(0, 134), (4, 124), (5, 12)]
    assert neighbours(fig8, 3) == [(0, 134), (2, 35), (5, 18)]
