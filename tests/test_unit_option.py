"""One time unit per table (issue 16 item 2): every command that prints times in a table takes ``--unit
us|ms|s`` and prints every time cell of its tables in it (JSON stays in seconds)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commcost.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
FUZZ = ROOT / "tests" / "data" / "fuzz"
TIMED_TABLES = ["predict", "evaluate-selection", "verify", "map", "calibrate", "tune", "rules diff",
                "measure-kernel", "measure-pattern", "arrange"]
TIME = re.compile(r"\d (ns|us|ms|s)\b")


def _subparser(path: str):
    parser = build_parser()
    for word in path.split():
        action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = action.choices[word]
    return parser


@pytest.mark.parametrize("path", TIMED_TABLES)
def test_every_command_with_a_time_table_takes_unit(path):
    unit = next((a for a in _subparser(path)._actions if "--unit" in a.option_strings), None)
    assert unit is not None, f"commcost {path} prints times but has no --unit"
    assert list(unit.choices) == ["us", "ms", "s"]


def _units(text: str) -> set[str]:
    wall_clock = r"priced in [\d.]+ s|rounds, [\d.]+ ms"  # how long map's and arrange's searches ran
    return set(TIME.findall(re.sub(wall_clock, "", text)))


@pytest.mark.parametrize("unit", ["us", "ms", "s"])
@pytest.mark.parametrize("argv", [
    ["predict", "--collective", "bcast", "--all-algorithms", "--procs", "8", "--nbytes", "64KiB", "--platform",
     str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"), "--model", "taulop"],
    ["predict", "--schedule", str(EX / "paper000" / "binomial16.json"), "--platform",
     str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"), "--model",
     "taulop", "--explain"],
    ["evaluate-selection", "--train", str(FUZZ / "sweeps.csv"), "--from-collectives", "--test",
     str(FUZZ / "sweeps.csv"), "--platform", str(EX / "peak" / "platform.toml"), "--ppn", "42"],
    ["map", "--collective", "bcast", "--algorithm", "binomial", "--procs", "8", "--nbytes", "1KiB", "--platform",
     str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"), "--model",
     "hockney", "--time-limit", "0.05"],
    ["arrange", "mpdata", "--platform", str(EX / "grid5000" / "platform.toml"), "--bandwidths",
     str(EX / "grid5000" / "bandwidths.toml"), "--params", str(EX / "grid5000" / "params.toml")],
], ids=["predict-collective", "predict-explain", "evaluate-selection", "map", "arrange"])
def test_every_time_cell_is_in_the_unit_asked_for(argv, unit, capsys):
    assert main([*argv, "--unit", unit]) == 0
    out = capsys.readouterr().out
    assert _units(out) == {unit}, out


def test_the_measuring_commands_tables_print_in_the_unit():
    from commcost.workflows.calibrate_progress import format_point as _format_point
    from commcost.cli.verify_command import render
    from commcost.io.measurements import Measurement
    from commcost.report.kernel_validation import KernelRun, render_validation

    run = KernelRun("summa", "shm", "P=2 N=32", 2, 32, 2.5e-4, {"hockney": 2.0e-4, "taulop": 2.6e-4})
    assert _units(render_validation([run], "ms")) == {"ms"}
    point = {"collective": "bcast", "nprocs": 4, "nnodes": 1, "nbytes": 1024, "default_runs": "binomial",
             "rules_run": "knomial", "default_s": 3.0e-5, "rules_s": 2.0e-5, "measured_gain": 1.5,
             "predicted_gain": 1.4, "verdict": "faster"}
    totals = {"measured": 1, "measured_gain_geomean": 1.5, "predicted_gain_geomean": 1.4, "faster": 1, "same": 0,
              "slower": [], "points": 1, "noise": None}
    assert _units(render([point], totals, Path("x.conf"), "s")) == {"s"}
    m = Measurement(benchmark="pingpong", channel="shm", nprocs=2, nbytes=1024, time_s_mean=1.5e-6, reps=100)
    assert _units(_format_point(m, "us")) == {"us"}
