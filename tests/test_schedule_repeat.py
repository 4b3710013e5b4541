"""Repeated phases: stored once, priced and counted as often as they run, read and written in files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.params_file import load_params
from commcost.io.schedule_file import load_schedule, schedule_from_dict, schedule_to_dict
from commcost.models import MODELS, PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
from commcost.schedule import ScheduleBuilder, SendMode
from taulop_fixtures import two_channel_params

from test_collectives_priced import EX

PARAMS = load_params(EX / "params" / "illustrative.toml")


def cluster(nnodes: int, ppn: int) -> Platform:
    kind = NodeType("n", ppn)
    return Platform("c", (kind,), tuple(Node(f"n{i}", kind) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                     Channel("ib", 1, "world", ("ib",), ContentionScope.NODE)))


def assert_priced_alike(compact, steps, platform: Platform, mapping: Mapping) -> None:
    """Under every model, a compact (repeated) schedule and its step-by-step build give the same time,
    per-rank times and channel counts, bytes and times."""
    for name in MODELS:
        model = MODELS[name](PARAMS.for_model(name)) if name != "taulop" else TauLop(two_channel_params())
        a = model.price(PlacedSchedule.of(compact, platform, mapping))
        b = model.price(PlacedSchedule.of(steps, platform, mapping))
        assert a.time_s == pytest.approx(b.time_s, rel=1e-12), name
        assert model.total_time_s(PlacedSchedule.of(compact, platform, mapping)) == pytest.approx(a.time_s, 1e-12)
        assert np.allclose(a.rank_time_s, b.rank_time_s, rtol=1e-12), name
        assert a.channel_count == b.channel_count and a.channel_nbytes == b.channel_nbytes, name
        for ch in a.channel_time_s:
            assert a.channel_time_s[ch] == pytest.approx(b.channel_time_s[ch], rel=1e-12), (name, ch)


def ring_schedules(nprocs: int, nbytes: float) -> tuple:
    """A ring of P - 1 equal steps (each rank sends nbytes to its right neighbour), as one phase run
    P - 1 times and as P - 1 phases one by one (phased schedules, as schedule files and kernels write)."""
    r = np.arange(nprocs)
    compact, steps = ScheduleBuilder(nprocs, "ring"), ScheduleBuilder(nprocs, "ring")
    compact.phase("steps", SendMode.POSTED, repeat=nprocs - 1)
    for a in r.tolist():
        compact.send(a, (a + 1) % nprocs, nbytes)
    for k in range(nprocs - 1):
        steps.phase(f"step {k}", SendMode.POSTED)
        for a in r.tolist():
            steps.send(a, (a + 1) % nprocs, nbytes)
    return compact.build(), steps.build()


@pytest.mark.parametrize("nprocs", [2, 5, 8, 13, 32])
def test_a_compact_ring_prices_and_counts_like_its_steps_one_by_one(nprocs):
    """A phase run P - 1 times is priced and counted like its P - 1 steps one by one."""
    compact, steps = ring_schedules(nprocs, 96)
    assert compact.repeat.max() == nprocs - 1 and np.all(steps.repeat == 1)
    assert compact.ntransmissions < steps.ntransmissions or nprocs == 2
    assert compact.transmissions_run == steps.transmissions_run
    assert compact.phases_run == steps.phases_run
    platform = cluster(4, 4)
    mapping = Mapping.round_robin(platform, nprocs)
    assert_priced_alike(compact, steps, platform, mapping)
    taulop = TauLop(two_channel_params())
    f_compact = taulop.price(PlacedSchedule.of(compact, platform, mapping), explain=True).explain
    f_steps = taulop.price(PlacedSchedule.of(steps, platform, mapping), explain=True).explain
    assert f_compact["formula"] == f_steps["formula"]


def test_price_scaled_counts_repeats():
    platform = cluster(4, 4)
    schedule = ring_schedules(16, 1)[0]
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 16, 4))
    model = TauLop(two_channel_params())
    factors = np.array([1.0, 3.0, 4096.0])
    swept = model.price_scaled(placed, factors)
    for f, t in zip(factors, swept):
        scaled = PlacedSchedule.of(schedule.scaled(f), platform, placed.mapping)
        assert t == pytest.approx(model.total_time_s(scaled), rel=1e-12)


def test_schedule_files_keep_repeats(tmp_path):
    b = ScheduleBuilder(3, "rep")
    b.phase("a", SendMode.POSTED, repeat=4).send(0, 1, 10).send(1, 2, 10)
    b.phase("b").send(2, 0, 5)
    schedule = b.build()
    assert schedule.repeat.tolist() == [4, 1] and schedule.transmissions_run == 9
    data = schedule_to_dict(schedule)
    assert data["phases"][0]["repeat"] == 4 and "repeat" not in data["phases"][1]
    back = schedule_from_dict(data)
    assert back.repeat.tolist() == [4, 1]
    for suffix in (".json", ".toml"):
        from commcost.io.schedule_file import dump_schedule
        path = tmp_path / f"rep{suffix}"
        dump_schedule(schedule, path)
        assert load_schedule(path).repeat.tolist() == [4, 1]


def test_a_bad_repeat_names_the_phase(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"nprocs": 2, "phases": [{"sends": [[0, 1, 5]]}, {"repeat": 0, "sends": []}]}))
    with pytest.raises(InputError) as err:
        load_schedule(path)
    assert "phases[1].repeat" in str(err.value) and "expected an integer >= 1" in str(err.value)
