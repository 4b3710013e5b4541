"""tune's confidence warnings on what its calibration measured (issue 12 item 6), from a measurements.csv that
already holds every point tune's calibration plans, so calibrate reuses them and launches no MPI run: points
that mostly did not converge, and single transmissions measured far slower than concurrent ones (a disturbed
machine, calibration/disturbed.py). tune warns and writes its files; with --strict it exits 2, one line, and
writes no rules."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from commcost.workflows.calibrate_plan import ALL_SIZES
from commcost.io.measurements import Measurement, MeasurementStore

def _mpi_missing() -> bool:
    from commcost.launch.mpi_launch import find_mpirun
    from commcost.errors import InputError

    try:
        find_mpirun(None)
    except InputError:
        return True
    return importlib.util.find_spec("mpi4py") is None


pytestmark = pytest.mark.skipif(_mpi_missing(), reason="calibrate needs mpi4py and an mpirun, even to reuse every point")
LAW = {"shm": (1e-6, 1e-10), "tcp": (1e-5, 1e-9)}  # Hockney alpha (s), beta (s/B) of the synthetic machine


def _calibration(folder: Path, *, converged: bool = True, disturbed: bool = False) -> None:
    """Every ping-pong and Ring_tau point (2 ranks, every size calibrate may plan) on shm and tcp: one
    transmission alpha + beta m, two concurrent ones 1.3x that; ``disturbed``: shm's single transmissions at
    64 KiB and up measured 5x (as on the VM whose host slowed them, calibration/disturbed.py's numbers)."""
    folder.mkdir(parents=True, exist_ok=True)
    store = MeasurementStore(folder / "measurements.csv")
    for channel, (alpha, beta) in LAW.items():
        for m in ALL_SIZES:
            one = alpha + beta * m
            slow = 5.0 if disturbed and channel == "shm" and m >= 65536 else 1.0
            for benchmark, tau, t in (("pingpong", None, one * slow), ("ring_tau", 1, one * slow),
                                      ("ring_tau", 2, 1.3 * one)):
                store.append(Measurement(benchmark, 2, m, t, nnodes=1, ppn=2, channel=channel, tau=tau, reps=100,
                                         time_s_median=t, time_s_min=t * 0.9, time_s_max=t * 1.2,
                                         time_s_std=t * 0.05, ci95_rel=0.01 if converged else 0.2,
                                         converged=converged, mpi="test MPI", host="test"))


def _tune(folder: Path, *extra: str) -> list[str]:
    return ["tune", "--procs", "2", "--out", str(folder), "--budget", "60", "--no-verify", "--quiet",
            "--select-procs", "2..8", "--sizes", "1..64KiB", "--ppn", "2", *extra]


@pytest.mark.parametrize("case", ["not converged", "disturbed"])
def test_tune_warns_and_strict_refuses_to_write_rules(tmp_path, capsys, case):
    from commcost.cli.main import main

    kind = {"converged": case != "not converged", "disturbed": case == "disturbed"}
    strict = tmp_path / "strict"
    _calibration(strict, **kind)
    assert main(_tune(strict, "--strict")) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "no rules written (--strict)" in lines[0] and "Traceback" not in captured.err
    assert "reusing" in captured.out  # nothing was launched: every point came from the file
    if case == "disturbed":
        assert "meta.disturbed" in lines[0] and "shm pingpong" in lines[0] and "calibrate again" in lines[0]
    else:
        assert "converged" in lines[0]
    assert not (strict / "ompi-rules.conf").exists() and not (strict / "mca-params.conf").exists()

    loose = tmp_path / "loose"
    _calibration(loose, **kind)
    assert main(_tune(loose)) == 0
    out = capsys.readouterr().out
    assert "warning:" in out and (loose / "ompi-rules.conf").is_file() and (loose / "mca-params.conf").is_file()
    if case == "disturbed":
        assert "single-transmission cell(s) measured over 2.5x" in out


def test_an_undisturbed_calibration_gives_no_such_warning(tmp_path, capsys):
    from commcost.cli.main import main

    _calibration(tmp_path / "run")
    assert main(_tune(tmp_path / "run", "--strict")) == 0
    assert "warning:" not in capsys.readouterr().out
