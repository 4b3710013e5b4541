"""Schedule files: JSON and TOML read the same, round-trip, and bad fields are named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from commcost.errors import InputError
from commcost.io.schedule_file import dump_schedule, load_schedule, schedule_from_dict
from commcost.schedule import ScheduleBuilder, SendMode, SizeUnit

EX = Path(__file__).resolve().parent.parent / "examples"


def same(a, b) -> bool:
    return (a.nprocs == b.nprocs and a.phase_names == b.phase_names and a.name == b.name and a.unit == b.unit
            and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("src", "dst", "nbytes", "phase", "posted")))


def test_fig8_example_reads_as_the_paper_states_it():
    s = load_schedule(EX / "paper000" / "summa_k80.json")
    assert s.nprocs == 6 and s.phase_names == ("pbc", "pbr") and s.unit == SizeUnit("block", 8192)
    assert s.src.tolist() == [1, 1, 1, 4, 4, 4, 1, 0, 3]
    assert (s.nbytes / 8192).tolist() == [134, 146, 12, 6, 110, 104, 124, 97, 35]
    assert not s.posted.any()


def test_json_and_toml_forms_are_the_same_schedule(tmp_path):
    s = load_schedule(EX / "paper000" / "summa_k80.json")
    dump_schedule(s, tmp_path / "s.toml")
    dump_schedule(s, tmp_path / "s.json")
    assert same(load_schedule(tmp_path / "s.toml"), s)
    assert same(load_schedule(tmp_path / "s.json"), s)


@st.composite
def schedules(draw):
    nprocs = draw(st.integers(2, 9))
    unit = draw(st.sampled_from([SizeUnit(), SizeUnit("double", 8), SizeUnit("block", 8192)]))
    b = ScheduleBuilder(nprocs, draw(st.text(min_size=1, max_size=8)), unit)
    for k in range(draw(st.integers(1, 4))):
        b.phase(f"p{k}", draw(st.sampled_from(list(SendMode))))
        for _ in range(draw(st.integers(0, 6))):
            src = draw(st.integers(0, nprocs - 1))
            dst = draw(st.integers(0, nprocs - 2))
            b.send(src, dst if dst < src else dst + 1, draw(st.integers(0, 10**6)))
        for rank in draw(st.lists(st.integers(0, nprocs - 1), max_size=2)):
            b.set_mode(rank, draw(st.sampled_from(list(SendMode))))
    return b.build()


@settings(max_examples=60, deadline=None)
@given(schedules(), st.sampled_from(["json", "toml"]))
def test_any_schedule_round_trips(tmp_path_factory, schedule, suffix):
    path = tmp_path_factory.mktemp("rt") / f"s.{suffix}"
    dump_schedule(schedule, path)
    assert same(load_schedule(path), schedule)


def test_sizes_with_byte_units_and_per_rank_modes():
    s = schedule_from_dict({"nprocs": 3, "unit": {"name": "double", "nbytes": 8}, "phases": [
        {"mode": "sequence", "rank_modes": {"2": "posted"},
         "sends": [[0, 1, 4], [2, 0, "1KiB"], [2, 1, 1]]}]})
    assert s.nbytes.tolist() == [32.0, 1024.0, 8.0]
    assert s.posted.tolist() == [False, True, True]
    assert s.phase_names == ("phase 0",)


@pytest.mark.parametrize("doc, message", [
    ({"nprocs": 2, "phases": [{"sends": [[0, 5, 10]]}]}, "phases[0].sends[0]: dst must be a rank in 0..1; got [0, 5, 10]"),
    ({"nprocs": 2, "phases": [{"sends": [[0, 1]]}]}, "phases[0].sends[0]: expected [src, dst, size], got [0, 1]"),
    ({"nprocs": 2, "phases": [{"sends": [[0, 1, 1], [1, 1, 2]]}]}, "phases[0].sends[1]: src and dst must differ"),
    ({"nprocs": 2, "phases": [{"sends": [[0, 1, -3]]}]}, "phases[0].sends[0]: the size must be a finite number >= 0"),
    ({"nprocs": 2, "phases": [{"sends": [[0, 1, "lots"]]}]}, "phases[0].sends[0]: size: expected a size such as"),
    ({"nprocs": 2, "phases": [{"sends": [[0.5, 1, 3]]}]}, "phases[0].sends[0]: src must be a rank"),
    ({"nprocs": 2, "phases": [{"mode": "eager", "sends": []}]}, "phases[0].mode: expected one of ['sequence', 'posted']"),
    ({"nprocs": 2, "phases": [{"send": []}]}, "phases[0].send: unknown field 'send'"),
    ({"nprocs": 0, "phases": []}, "nprocs: expected an integer >= 1, got 0"),
    ({"nprocs": 2, "phases": [], "unit": {"nbytes": 0}}, "unit.nbytes: expected a whole number of bytes"),
    ({"nprocs": 2, "phases": [], "unit": {"nbytes": 1.5}}, "unit.nbytes: expected a whole number of bytes"),
    ({"nprocs": 2, "phases": [{"repeat": 10 ** 30, "sends": [[0, 1, 8]]}]}, "expected an integer of at most"),
    ({"phases": []}, "expected the fields nprocs and phases"),
])
def test_bad_schedules_name_the_field(tmp_path, doc, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        load_schedule(path)
    assert str(info.value).startswith(f"{path}:")
    assert message in str(info.value)


def test_json_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "nprocs": 2,\n  "phases": [\n}\n')
    with pytest.raises(InputError, match=r"bad.json:line 4: not valid JSON"):
        load_schedule(path)


def test_unknown_extension(tmp_path):
    with pytest.raises(InputError, match="expected a .json or .toml schedule"):
        load_schedule(tmp_path / "s.yaml")
