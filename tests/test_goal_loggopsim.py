"""GOAL files run in the real LogGOPSim: txt2bin accepts them, and a barrier-free schedule prices the same.

Skipped unless LogGOPSim's ``txt2bin`` and ``LogGOPSim`` are found, in
``$LOGGOPSIM_DIR`` or on the PATH (build them from
https://github.com/spcl/LogGOPSim, src/LogGOPSim: ``make``; needs re2c,
gengetopt and graphviz's cgraph).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from commcost.cli.main import main
from commcost.collectives import Case, Collective, algorithms, build, find
from commcost.collectives.registry import Unsupported
from commcost.io.goal_file import write_goal
from commcost.schedule import ScheduleBuilder

EX = Path(__file__).resolve().parent.parent / "examples"


def _tool(name: str) -> str | None:
    folder = os.environ.get("LOGGOPSIM_DIR")
    if folder and (Path(folder) / name).is_file():
        return str(Path(folder) / name)
    return shutil.which(name)


TXT2BIN, LOGGOPSIM = _tool("txt2bin"), _tool("LogGOPSim")
pytestmark = pytest.mark.skipif(not (TXT2BIN and LOGGOPSIM), reason="needs LogGOPSim's txt2bin and LogGOPSim")

# LogGOPSim's defaults in ns (L=2500, o=1500, g=1000, G=6), O = G and every message eager
FLAGS = ["-L", "2500", "-o", "1500", "-g", "1000", "-G", "6", "-O", "6", "-S", "2147483647", "-b"]


def simulate(goal: Path) -> int:
    """LogGOPSim's largest finishing time (its time unit) for a GOAL text file."""
    binary = goal.with_suffix(".bin")
    subprocess.run([TXT2BIN, "-i", str(goal), "-o", str(binary)], check=True, capture_output=True, timeout=60)
    done = subprocess.run([LOGGOPSIM, "-f", str(binary), *FLAGS], check=True, capture_output=True, text=True,
                          timeout=60)
    match = re.search(r"Maximum finishing time at host \d+: (\d+)", done.stdout)
    assert match, done.stdout
    return int(match.group(1))


def test_every_registry_schedule_runs_in_loggopsim(tmp_path):
    for algorithm in algorithms():
        try:
            s = build(algorithm, Case(algorithm.collective, 7, 3000, 3)).schedule
        except Unsupported:
            continue
        goal = tmp_path / f"{algorithm.collective.value}_{algorithm.name}.goal"
        write_goal(s, goal, reduce_time_per_byte=0.5)
        assert simulate(goal) > 0, algorithm.key


def test_dependency_schedule_with_a_reduction_runs(tmp_path):
    b = ScheduleBuilder(4, "tree")
    a = b.add(3, 1, 4096)
    c = b.add(2, 0, 4096)
    d = b.add(1, 0, 4096, after=[a])
    b.add(0, 1, 8, after=[c, d])
    goal = tmp_path / "tree.goal"
    write_goal(b.build(), goal)
    # 3 -> 1 -> 0 is the longest path: two messages of 4 KiB and one of 8 bytes, each 2o + L + (m-1)G
    assert simulate(goal) == 2 * (2 * 1500 + 2500 + 4095 * 6) + (2 * 1500 + 2500 + 7 * 6)


def test_a_single_phase_prices_as_commcost_loggp(tmp_path, capsys):
    """One phase, no barrier to drop: with O = G and o >= g LogGOPSim's sender gap max(o, g) + (m-1)G is
    commcost's max(g, o + (m-1)G), and the two agree to the nanosecond."""
    params = tmp_path / "loggp.toml"
    params.write_text("[loggp]\nL_s = 2.5e-6\no_s = 1.5e-6\ng_s = 1.0e-6\nG_s_per_byte = 6e-9\n")
    assert main(["predict", "--collective", "bcast", "--algorithm", "basic_linear", "--procs", "16", "--ppn", "1",
                 "--nbytes", "1KiB", "--platform", str(EX / "cluster" / "platform.toml"), "--params", str(params),
                 "--model", "loggp", "--format", "json"]) == 0
    time_s = json.loads(capsys.readouterr().out)["time_s"]
    goal = tmp_path / "linear.goal"
    write_goal(build(find(Collective.BCAST, "basic_linear"), Case(Collective.BCAST, 16, 1024)).schedule, goal)
    assert simulate(goal) == round(time_s * 1e9)
