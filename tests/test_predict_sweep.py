"""``commcost predict`` sweeps printed as OSU prints a benchmark (issue 16 item 4): one row per (P, size),
one column per algorithm; CSV and JSON of the same numbers; each point equal to predicting it alone."""

from __future__ import annotations

import csv
import io
import json

import pytest
from test_cli_collectives import BASE, run


def single(capsys, algorithm: str, procs: int, nbytes: int, model: str = "taulop") -> float:
    argv = [a if a != "taulop" else model for a in BASE]
    code, out, _ = run(capsys, *argv, "--algorithm", algorithm, "--procs", str(procs), "--nbytes", str(nbytes),
                       "--format", "json")
    assert code == 0
    return json.loads(out)["time_s"]


def test_osu_style_table_has_a_row_per_point_and_equals_single_predictions(capsys):
    code, out, err = run(capsys, *BASE, "--algorithm", "binomial", "--procs", "8,64", "-m", "1:4K")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("# commcost predict: bcast under taulop") and "times in us" in lines[1]
    assert lines[2].split()[:4] == ["#", "P", "Size", "ompi.binomial(6)"]
    rows = [line.split() for line in lines[3:]]
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(p, n) for p in (8, 64) for n in sizes]
    for p, n, us in ((8, 1, rows[0][2]), (64, 4096, rows[-1][2]), (64, 256, rows[13 + 8][2])):
        assert float(us) == pytest.approx(single(capsys, "binomial", p, n) * 1e6, abs=0.005)


def test_csv_and_json_carry_the_same_numbers_and_the_unit(capsys):
    argv = [*BASE, "--all-algorithms", "--procs", "2..16", "--nbytes", "1K,64K"]
    code, out, _ = run(capsys, *argv, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["procs"] == [2, 4, 8, 16] and doc["nbytes"] == [1024, 65536]
    points = {(p["procs"], p["nbytes"]): p for p in doc["points"]}
    assert len(points) == 8
    two_proc = [a["algorithm"] for a in doc["algorithms"] if "two_proc" in a["algorithm"]]
    code, out, _ = run(capsys, *argv, "--format", "csv", "--unit", "ms")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and set(rows[0]) == {"procs", "nbytes", "algorithm", "id", "time_ms"}
    for row in rows:
        t = points[(int(row["procs"]), int(row["nbytes"]))]["times_s"][row["algorithm"]]
        assert float(row["time_ms"]) == pytest.approx(t * 1e3, rel=1e-5)
    for point in doc["points"]:
        finite = {k: t for k, t in point["times_s"].items() if t is not None}
        assert point["best"] == min(finite, key=finite.get)
        for key in two_proc:  # Open MPI runs two_proc on 2 ranks only: null elsewhere, no CSV row
            assert (point["times_s"][key] is None) == (point["procs"] != 2)
    assert len(rows) == sum(t is not None for p in doc["points"] for t in p["times_s"].values())


def test_paper004_sweep_uses_its_closed_forms(capsys):
    argv = [a if a != "taulop" else "ompi_bcast_model" for a in BASE]
    code, out, _ = run(capsys, *argv, "--algorithm", "6", "--procs", "64", "--nbytes", "1K..4K", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["model"] == "ompi_bcast_model"
    got = [p["times_s"]["ompi.binomial"] for p in doc["points"]]
    assert got == pytest.approx([single(capsys, "6", 64, n, "ompi_bcast_model") for n in (1024, 2048, 4096)])


@pytest.mark.parametrize("argv, expected", [
    (["--algorithm", "6", "--procs", "4..2", "--nbytes", "1K"], "--procs: expected LO..HI with LO <= HI"),
    (["--algorithm", "6", "--procs", "4", "--nbytes", "1KB..4K"], "--nbytes: '1KB' is ambiguous"),
    (["--algorithm", "6", "--procs", "0,4", "--nbytes", "1K"], "--procs: expected values >= 1"),
    (["--algorithm", "6", "--procs", "4", "--nbytes", "1K", "--root", "9"], "--root"),
    (["--algorithm", "6", "--procs", "4,8", "--nbytes", "1K", "--param", "nosuch=3"], "--param"),
    (["--algorithm", "6", "--procs", "2..100000", "--nbytes", "1"], "the platform has 2048"),
])
def test_bad_sweeps_are_one_line_exit_2(capsys, argv, expected):
    code, _, err = run(capsys, *BASE, *argv)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1
