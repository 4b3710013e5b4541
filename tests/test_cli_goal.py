"""``commcost export-goal``: collectives and schedule files as GOAL text, bad input as one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commcost.cli.main import main
from commcost.collectives import Case, Collective, build, find
from commcost.io.goal_file import parse_goal, per_rank_waits, read_goal
from commcost.io.schedule_file import dump_schedule, load_schedule
from commcost.schedule import ScheduleBuilder

EX = Path(__file__).resolve().parent.parent / "examples"
BCAST = ["export-goal", "--collective", "bcast", "--algorithm", "binomial", "--procs", "16", "--nbytes", "1KiB"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def after_sets(s) -> list[list[int]]:
    return [sorted(s.after(i).tolist()) for i in range(s.ntransmissions)]


def same_dag(a, b) -> bool:
    return (a.src.tolist() == b.src.tolist() and a.dst.tolist() == b.dst.tolist()
            and a.nbytes.tolist() == b.nbytes.tolist() and after_sets(a) == after_sets(b))


def test_collective_goes_to_standard_output(capsys):
    code, out, err = run(capsys, *BCAST, "--root", "3")
    assert code == 0 and not err
    assert "num_ranks 16" in out and "rank 15 {" in out
    want = build(find(Collective.BCAST, "binomial"), Case(Collective.BCAST, 16, 1024, 3)).schedule
    assert same_dag(parse_goal(out), per_rank_waits(want))


def test_collective_with_a_parameter_to_a_file(capsys, tmp_path):
    out_path = tmp_path / "knomial.goal"
    code, out, _ = run(capsys, "export-goal", "--collective", "bcast", "--algorithm", "7", "--procs", "9",
                       "--nbytes", "10KiB", "--param", "segsize=4KiB", "--param", "radix=3", "-o", str(out_path))
    assert code == 0 and out.startswith(f"wrote {out_path}: ")
    want = build(find(Collective.BCAST, "knomial"), Case(Collective.BCAST, 9, 10240, 0),
                 {"segsize": 4096, "radix": 3}).schedule
    assert same_dag(read_goal(out_path), per_rank_waits(want))


def test_reduction_calc_on_request(capsys):
    argv = ["export-goal", "--collective", "reduce", "--algorithm", "binomial", "--procs", "4", "--nbytes", "100"]
    _, plain, _ = run(capsys, *argv)
    code, out, _ = run(capsys, *argv, "--reduce-time-per-byte", "2")
    assert code == 0 and "calc" not in plain and ": calc 200" in out
    assert parse_goal(out).combine.all()


def test_dependency_schedule_file(capsys, tmp_path):
    b = ScheduleBuilder(3, "relay")
    a = b.add(0, 1, 64)
    b.add(1, 2, 64, after=[a])
    path = tmp_path / "relay.toml"
    dump_schedule(b.build(), path)
    code, out, _ = run(capsys, "export-goal", "--schedule", str(path))
    assert code == 0 and "s1 requires r0" in out
    assert same_dag(parse_goal(out), load_schedule(path))


def test_phased_schedule_file(capsys):
    code, out, _ = run(capsys, "export-goal", "--schedule", str(EX / "paper000" / "summa_k80.json"))
    assert code == 0 and "phased schedule" in out
    assert same_dag(parse_goal(out), per_rank_waits(load_schedule(EX / "paper000" / "summa_k80.json")))


def one_line_error(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


@pytest.mark.parametrize("extra, message", [
    (["--root", "16"], "--root: the root must be a rank in 0..15, got 16"),
    (["--param", "segsize=lots"], "--param: segsize: expected an integer or a size"),
    (["--param", "fanout=2"], "--param fanout: ompi.binomial has no parameter 'fanout'"),
    (["--reduce-time-per-byte", "-1"], "--reduce-time-per-byte: expected a finite time per byte >= 0"),
])
def test_bad_options_are_one_line(capsys, extra, message):
    assert message in one_line_error(capsys, *BCAST, *extra)


def test_bad_algorithm_and_missing_options_are_one_line(capsys):
    assert "--algorithm: no bcast algorithm 'nosuch'" in one_line_error(
        capsys, "export-goal", "--collective", "bcast", "--algorithm", "nosuch", "--procs", "4", "--nbytes", "1")
    assert "--collective needs --nbytes" in one_line_error(
        capsys, "export-goal", "--collective", "bcast", "--algorithm", "binomial", "--procs", "4")
    assert "--collective needs --algorithm" in one_line_error(
        capsys, "export-goal", "--collective", "bcast", "--procs", "4", "--nbytes", "1")
    assert "--procs: allgather ompi.two_proc does not run on 4 ranks" in one_line_error(
        capsys, "export-goal", "--collective", "allgather", "--algorithm", "two_proc", "--procs", "4", "--nbytes", "8")
    assert "--procs goes with --collective" in one_line_error(
        capsys, "export-goal", "--schedule", str(EX / "paper000" / "summa_k80.json"), "--procs", "4")


def test_bad_schedule_file_is_one_line_naming_file_and_field(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"nprocs": 3, "phases": [{"sends": [
        {"src": 0, "dst": 1, "size": 8, "id": "a"}, {"src": 2, "dst": 1, "size": 8, "after": ["a"]}]}]}))
    err = one_line_error(capsys, "export-goal", "--schedule", str(bad))
    assert f"{bad}:phases[0].sends[1].after[0]: 'a'" in err and "neither received nor sent by rank 2" in err


def test_fractional_sizes_are_one_line_naming_the_file(capsys, tmp_path):
    path = tmp_path / "half.json"
    path.write_text(json.dumps({"nprocs": 2, "phases": [{"sends": [[0, 1, 1.5]]}]}))  # a unit is whole bytes
    err = one_line_error(capsys, "export-goal", "--schedule", str(path))
    assert f"{path}:transmission 0:" in err and "GOAL sizes are whole bytes" in err


def test_unwritable_output_is_one_line(capsys, tmp_path):
    err = one_line_error(capsys, *BCAST, "-o", str(tmp_path / "no" / "such" / "dir.goal"))
    assert "dir.goal" in err


def test_neither_schedule_nor_collective_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["export-goal", "--procs", "4"])
    assert info.value.code == 2
