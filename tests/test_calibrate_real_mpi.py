"""`commcost calibrate` on a real MPI (issue 4 items 1 and 6: ping-pong on shm and tcp, kill and resume).

The real runs need mpi4py and an mpirun (next to this Python or on PATH);
they are skipped otherwise. The size plan and the error messages are
checked everywhere.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from commcost.cli.calibrate_command import ALL_SIZES, CHANNELS, plan_sizes
from commcost.cli.main import main
from commcost.io.measurements import read_measurements

SRC = Path(__file__).resolve().parent.parent / "src"
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
_beside = Path(sys.executable).parent / "mpirun"
MPIRUN = str(_beside) if _beside.is_file() else shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(not (HAVE_MPI4PY and MPIRUN), reason="needs mpi4py and mpirun")


def _calibrate(out: Path, budget: float, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "commcost", "calibrate", "--procs", "2", "--out", str(out),
                             "--budget", str(budget)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def test_size_plan_is_powers_of_4_up_to_4mib_and_shrinks_with_the_budget():
    assert plan_sizes(1000.0) == [4 ** k for k in range(12)]
    small = plan_sizes(1.0)
    assert 4 <= len(small) < len(ALL_SIZES)
    assert small[0] == 1 and small[-1] == 4 * 2 ** 20 and set(small) <= set(ALL_SIZES)


@pytest.mark.skipif(HAVE_MPI4PY, reason="mpi4py is installed")
def test_without_mpi4py_calibrate_says_so_in_one_line(tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "mpi4py" in err and "\n" not in err


@pytest.mark.skipif(not HAVE_MPI4PY, reason="needs mpi4py")
def test_a_missing_mpirun_is_one_line_error(tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "run"), "--mpirun", str(tmp_path / "no-mpirun")]) == 2
    err = capsys.readouterr().err.strip()
    assert "mpirun" in err and "\n" not in err


@needs_mpi
def test_a_real_calibration_measures_shm_and_tcp_and_fits_hockney(tmp_path):
    out = tmp_path / "run"
    start = time.monotonic()
    proc = _calibrate(out, 60)
    stdout, stderr = proc.communicate(timeout=180)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, stderr
    assert elapsed < 60 + 30, f"took {elapsed:.0f} s for a 60 s budget"
    rows = read_measurements(out / "measurements.csv")
    assert {m.channel for m in rows} == set(CHANNELS)
    assert all(m.benchmark == "pingpong" and m.nprocs == 2 and m.time_s_mean > 0 and m.mpi for m in rows)
    assert len({m.key for m in rows}) == len(rows)
    for channel in CHANNELS:
        sizes = [m.nbytes for m in rows if m.channel == channel]
        assert sizes == plan_sizes(60 / 2 - 3.0), channel
    with open(out / "params.toml", "rb") as f:
        params = tomllib.load(f)
    shm, tcp = params["hockney"]["shm"], params["hockney"]["tcp"]
    assert tcp["alpha_s"] > shm["alpha_s"] > 0
    assert params["meta"]["budget_s"] == 60 and params["meta"]["points"] == len(rows)
    assert params["meta"]["mpi"] and params["meta"]["machine"]
    assert "[24/24]" in stdout or f"[{len(rows)}/{len(rows)}]" in stdout


@needs_mpi
def test_a_killed_calibration_resumes_to_the_full_set_without_duplicates(tmp_path):
    out = tmp_path / "run"
    csv = out / "measurements.csv"
    budget = 20
    expected = {(c, n) for c in CHANNELS for n in plan_sizes(budget / 2 - 3.0)}
    proc = _calibrate(out, budget, start_new_session=True)  # its own group: mpirun and ranks die with it
    rows_at_kill = 0
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            rows_at_kill = csv.read_bytes().count(b"\n") - 1 if csv.exists() else 0
            if rows_at_kill >= 3:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the calibration ended before it could be killed"
    partial = read_measurements(csv)
    assert 3 <= len(partial) < len(expected)

    again = _calibrate(out, budget)
    stdout, stderr = again.communicate(timeout=180)
    assert again.returncode == 0, stderr
    rows = read_measurements(csv)
    keys = [m.key for m in rows]
    assert len(keys) == len(set(keys)), "duplicate points"
    assert {(m.channel, m.nbytes) for m in rows} == expected
    assert [m.key for m in rows[:len(partial)]] == [m.key for m in partial]  # kept, not re-measured
    assert (out / "params.toml").exists()
