"""Schedule files with dependencies: ids and ``after`` lists read, round-trip, and bad waits are named."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from commcost.collectives import Case, Collective, algorithms, build
from commcost.errors import InputError
from commcost.io.schedule_file import dump_schedule, load_schedule, schedule_from_dict
from commcost.schedule import ScheduleBuilder, SendMode, SizeUnit


def after_sets(s) -> list[list[int]]:
    return [sorted(s.after(i).tolist()) for i in range(s.ntransmissions)]


def same_dag(a, b) -> bool:
    return (a.nprocs == b.nprocs and a.has_dependencies == b.has_dependencies and a.phase_names == b.phase_names
            and all(np.array_equal(getattr(a, f), getattr(b, f))
                    for f in ("src", "dst", "nbytes", "phase", "posted", "combine"))
            and after_sets(a) == after_sets(b))


def chain_with_forwarding():
    """0 sends to 1 and then 2 (sequence); 1 forwards to 3 what it got; 2 and 3 both wait for their receive."""
    b = ScheduleBuilder(4, "forward", SizeUnit("double", 8))
    b.phase("root", SendMode.POSTED)
    a = b.add(0, 1, 4)
    c = b.add(0, 2, 4, after=[a])
    b.phase("forward")
    b.add(1, 3, 4, after=[a])
    b.add(2, 3, 2, after=[c])
    return b.build()


DOC = {"nprocs": 4, "phases": [
    {"name": "root", "sends": [{"src": 0, "dst": 1, "size": 8, "id": "a"}, [0, 2, 8]]},
    {"name": "fwd", "sends": [{"src": 1, "dst": 3, "size": "1KiB", "after": ["a"]},
                              {"src": 0, "dst": 3, "size": 8, "id": "b", "after": ["a"]},
                              {"src": 3, "dst": 2, "size": 8, "after": ["b"]}]}]}


def test_ids_and_after_lists_make_a_dependency_schedule():
    s = schedule_from_dict(DOC)
    assert s.has_dependencies
    assert after_sets(s) == [[], [], [0], [0], [3]]
    assert s.nbytes.tolist() == [8, 8, 1024, 8, 8]


def test_dependencies_true_without_any_wait_is_still_a_dependency_schedule():
    s = schedule_from_dict({"nprocs": 2, "dependencies": True, "phases": [{"sends": [[0, 1, 1]]}, {"sends": [[1, 0, 1]]}]})
    assert s.has_dependencies and after_sets(s) == [[], []]
    assert not schedule_from_dict({"nprocs": 2, "phases": [{"sends": [[0, 1, 1]]}]}).has_dependencies


@pytest.mark.parametrize("suffix", ["json", "toml"])
def test_dependency_schedule_round_trips(tmp_path, suffix):
    s = chain_with_forwarding()
    path = tmp_path / f"s.{suffix}"
    dump_schedule(s, path)
    back = load_schedule(path)
    assert same_dag(back, s) and back.unit == s.unit


@pytest.mark.parametrize("suffix", ["json", "toml"])
def test_registry_schedules_round_trip(tmp_path, suffix):
    for algorithm in algorithms(Collective.BCAST)[:5] + algorithms(Collective.REDUCE)[:3]:
        try:
            s = build(algorithm, Case(algorithm.collective, 7, 3000, 2)).schedule
        except InputError:
            continue
        path = tmp_path / f"{algorithm.name}.{suffix}"
        dump_schedule(s, path)
        back = load_schedule(path)
        assert back.has_dependencies == s.has_dependencies
        assert np.array_equal(back.repeat, s.repeat), algorithm.key
        assert same_dag(back, s), algorithm.key


@st.composite
def dependency_schedules(draw):
    nprocs = draw(st.integers(2, 6))
    b = ScheduleBuilder(nprocs, "dag")
    sent: list[tuple[int, int]] = []
    for k in range(draw(st.integers(1, 3))):
        b.phase(f"p{k}", draw(st.sampled_from(list(SendMode))))
        for _ in range(draw(st.integers(0, 5))):
            src = draw(st.integers(0, nprocs - 1))
            dst = draw(st.integers(0, nprocs - 2))
            dst = dst if dst < src else dst + 1
            mine = [j for j, (s, d) in enumerate(sent) if s == src or d == src]
            after = draw(st.lists(st.sampled_from(mine), max_size=3)) if mine else []
            b.add(src, dst, draw(st.integers(0, 10**6)), after=after)
            sent.append((src, dst))
    return b.build()


@settings(max_examples=40, deadline=None)
@given(dependency_schedules(), st.sampled_from(["json", "toml"]))
def test_any_dependency_schedule_round_trips(tmp_path_factory, schedule, suffix):
    path = tmp_path_factory.mktemp("rt") / f"s.{suffix}"
    dump_schedule(schedule, path)
    assert same_dag(load_schedule(path), schedule)


def with_send(send, where=1) -> dict:
    doc = json.loads(json.dumps(DOC))
    doc["phases"][1]["sends"][where] = send
    return doc


@pytest.mark.parametrize("doc, message", [
    (with_send({"src": 0, "dst": 3, "size": 8, "after": ["zz"]}),
     "phases[1].sends[1].after[0]: unknown id 'zz'; expected the id of an earlier send"),
    (with_send({"src": 1, "dst": 3, "size": 8, "after": ["b"]}, 0),
     "phases[1].sends[0].after[0]: 'b' is a later send (phases[1].sends[1]); expected an earlier send"),
    (with_send({"src": 2, "dst": 3, "size": 8, "after": ["a"]}),
     "phases[1].sends[1].after[0]: 'a' (phases[0].sends[0]: src 0, dst 1) is neither received nor sent by rank 2"),
    (with_send({"src": 0, "dst": 3, "size": 8, "id": "a"}),
     "phases[1].sends[1].id: 'a' is already the id of phases[0].sends[0]; expected ids unique in the file"),
    (with_send({"src": 0, "dst": 3, "size": 8, "id": "x", "after": ["x"]}),
     "phases[1].sends[1].after[0]: 'x' is this send itself; expected an earlier send"),
    (with_send({"src": 0, "dst": 3, "size": 8, "after": "a"}),
     "phases[1].sends[1].after: expected a list of ids such as"),
    (with_send({"src": 0, "dst": 3, "size": 8, "id": 7}), "phases[1].sends[1].id: expected a non-empty string, got 7"),
    (with_send({"src": 0, "dst": 3, "size": 8, "wait": ["a"]}), "phases[1].sends[1].wait: unknown field 'wait'"),
    (with_send({"src": 0, "size": 8}), "phases[1].sends[1]: expected the fields src, dst and size; dst missing"),
    (with_send({"src": 0, "dst": 9, "size": 8, "after": ["a"]}), "phases[1].sends[1]: dst must be a rank in 0..3"),
    (DOC | {"dependencies": False}, "phases[1].sends[0].after: the file says dependencies = false"),
    (DOC | {"dependencies": "yes"}, "dependencies: expected true or false, got \"yes\""),
    ({"nprocs": 2, "dependencies": True, "phases": [{"repeat": 3, "sends": [[0, 1, 1]]}]},
     "phases[0].repeat: a schedule with dependencies runs every send once; expected repeat = 1, got 3"),
])
def test_bad_waits_name_the_field(tmp_path, doc, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        load_schedule(path)
    assert str(info.value).startswith(f"{path}:")
    assert message in str(info.value)


def test_bad_wait_in_toml_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('nprocs = 3\n[[phases]]\nsends = [{ src = 0, dst = 1, size = 4, id = "a" }, '
                    '{ src = 2, dst = 1, size = 4, after = ["a"] }]\n')
    with pytest.raises(InputError, match=r"bad.toml:phases\[0\]\.sends\[1\]\.after\[0\]: 'a' .* neither received"):
        load_schedule(path)
