"""Computation inside collectives: gamma(m) of a reduction, queued on the receiver, under every model."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.params_file import load_params
from commcost.models import MODELS, PlacedSchedule
from commcost.models.reduction import ReductionLaw, with_reductions
from commcost.platform import Mapping
from commcost.schedule import ScheduleBuilder, SendMode
from test_schedule_repeat import EX, cluster

GAMMA = ReductionLaw("sum_double", np.array([0.0, 1000.0]), np.array([1e-6, 3e-6]))


def test_gamma_interpolates_and_continues_in_whole_chunks_or_along_the_slope():
    """Past the last size M: gamma(q M + r) = q gamma(M) + gamma(r) (paper 000's rule, libtaulop's), or the last
    segment's slope with beyond_m = "slope"."""
    assert GAMMA.times(np.array([0.0, 500.0, 1000.0, 2000.0, 2500.0])) == pytest.approx(
        [1e-6, 2e-6, 3e-6, 6e-6, 8e-6])
    slope = ReductionLaw.from_dict("sum_double", {"m": [0.0, 1000.0], "time_s": [1e-6, 3e-6], "beyond_m": "slope"})
    assert slope.times(np.array([2000.0])) == pytest.approx([5e-6])
    with pytest.raises(InputError, match="chunks"):
        ReductionLaw.from_dict("x", {"m": [0.0, 1000.0], "time_s": [1e-6, 3e-6], "beyond_m": "linear"})


def test_a_receiver_reduces_one_message_at_a_time_in_order_of_arrival():
    # three messages reach rank 0 in one phase at 1, 2 and 10 us; each costs 2 us to reduce
    end = np.array([1e-6, 2e-6, 10e-6, 4e-6])
    phase = np.zeros(4, np.int64)
    dst = np.array([0, 0, 0, 1])
    combine = np.array([True, True, True, False])
    law = ReductionLaw("op", np.array([0.0]), np.array([2e-6]))
    out = with_reductions(end, phase, dst, np.full(4, 8.0), combine, 2, law)
    assert out == pytest.approx([3e-6, 5e-6, 12e-6, 4e-6])


@pytest.mark.parametrize("name", ["binomial", "linear"])
def test_every_model_adds_reductions_to_a_reduce(name):
    platform = cluster(2, 4)
    schedule = build(find(Collective.REDUCE, name), Case(Collective.REDUCE, 8, 4000)).schedule
    assert schedule.combine.any()
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 8, 4))
    params = load_params(EX / "params" / "illustrative.toml")
    for model_name, cls in MODELS.items():
        plain = cls(params.for_model(model_name)).price(placed).time_s
        reduced = cls(params.for_model(model_name)).with_reduction(GAMMA).price(placed).time_s
        # at least the root's last reduction is added; at most every reduction one after another
        assert plain + GAMMA.times(np.array([4000.0]))[0] * 0.999 <= reduced, model_name
        assert reduced <= plain + schedule.combine.sum() * GAMMA.times(np.array([4000.0]))[0] * 1.001 + 1e-12
    taulop = MODELS["taulop"](params.for_model("taulop")).with_reduction(GAMMA)
    factors = np.array([0.5, 2.0])
    swept = taulop.price_scaled(placed, factors)
    for f, t in zip(factors, swept):
        scaled = PlacedSchedule(schedule.scaled(f), platform, placed.mapping, placed.channel, placed.domain)
        assert t == pytest.approx(taulop.total_time_s(scaled), rel=1e-12)


def test_a_bcast_has_no_reduction_to_pay():
    platform = cluster(2, 4)
    schedule = build(find(Collective.BCAST, "binomial"), Case(Collective.BCAST, 8, 4000)).schedule
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 8, 4))
    params = load_params(EX / "params" / "illustrative.toml")
    model = MODELS["hockney"](params.for_model("hockney"))
    assert model.price(placed).time_s == model.with_reduction(GAMMA).price(placed).time_s


def test_reduction_tables_in_a_parameter_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[hockney.shm]\nalpha_s = 1e-6\nbeta_s_per_byte = 1e-10\n'
                    '[reduction.sum_double]\nm = [0, 1024]\ntime_s = [1e-7, 5e-7]\n')
    law = load_params(path).reduction()
    assert law.op == "sum_double" and law.times(np.array([512.0]))[0] == pytest.approx(3e-7)
    path.write_text('[reduction.sum_double]\nm = [1024, 0]\ntime_s = [1e-7, 5e-7]\n')
    with pytest.raises(InputError) as err:
        load_params(path)
    assert "reduction.sum_double.m" in str(err.value) and "increasing" in str(err.value)


def test_builder_schedules_carry_combine_flags():
    b = ScheduleBuilder(2).phase(mode=SendMode.POSTED)
    b.send(0, 1, 10)
    assert not b.build().combine.any()


def test_schedule_files_keep_combine_flags(tmp_path):
    from commcost.io.schedule_file import dump_schedule, load_schedule

    schedule = build(find(Collective.ALLREDUCE, "recursive_doubling"), Case(Collective.ALLREDUCE, 6, 100)).schedule
    assert schedule.combine.any()
    for suffix in (".json", ".toml"):
        path = tmp_path / f"s{suffix}"
        dump_schedule(schedule, path)
        assert np.array_equal(load_schedule(path).combine, schedule.combine)
    bad = tmp_path / "bad.json"
    bad.write_text('{"nprocs": 2, "phases": [{"combine": [true, false], "sends": [[0, 1, 5]]}]}')
    with pytest.raises(InputError) as err:
        load_schedule(bad)
    assert "phases[0].combine" in str(err.value)
