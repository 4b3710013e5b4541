"""``commcost fit``: measurements CSV -> parameter file with provenance, read back by the models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.io.measurements import Measurement, MeasurementStore
from commcost.io.params_file import load_params

SIZES = [1, 64, 1024, 4096, 16384, 65536, 262144, 1 << 20]
TRUTH = {"shm": (0.5e-6, 2.0e-10), "tcp": (20e-6, 8.0e-9)}


def write_pingpong(path, seed=0):
    rng = np.random.default_rng(seed)
    store = MeasurementStore(path)
    for channel, (alpha, beta) in TRUTH.items():
        for m in SIZES:
            for run in range(5):
                t = (alpha + beta * m) * (1 + 0.03 * rng.standard_normal())
                store.append(Measurement("pingpong", 2, m, float(t), channel=channel, run=run,
                                         mpi="Open MPI 5.0.11", host="test"))
    return path


def write_ring_tau(path, seed=1):
    rng = np.random.default_rng(seed)
    store = MeasurementStore(path)
    for m in SIZES:
        for tau in (1, 2, 3, 4):
            L = (0.2e-6 + 1e-10 * m) * (1 + 0.4 * (tau - 1))
            for run in range(4):
                t = (0.3e-6 + 2 * L) * (1 + 0.02 * rng.standard_normal())
                store.append(Measurement("ring_tau", tau, m, float(t), channel="shm", tau=tau, run=run))
    return path


def test_fit_hockney_writes_a_parameter_file_the_model_reads(tmp_path, capsys):
    csv = write_pingpong(tmp_path / "m.csv")
    out = tmp_path / "params.toml"
    assert main(["fit", str(csv), "--model", "hockney", "-o", str(out)]) == 0
    report = capsys.readouterr().out
    assert "shm" in report and "tcp" in report and "mu mean" in report
    params = load_params(out)
    assert params.meta["model"] == "hockney" and params.meta["points"] == 2 * len(SIZES) * 5
    assert params.meta["mpi"] == ["Open MPI 5.0.11"]
    fitted = params.for_model("hockney")
    for channel, (alpha, beta) in TRUTH.items():
        entry = fitted.channels[channel] if hasattr(fitted, "channels") else fitted[channel]
        assert entry.alpha_s == pytest.approx(alpha, rel=0.1)
        assert entry.beta_s_per_byte == pytest.approx(beta, rel=0.05)


def test_fit_taulop_from_ring_tau_rows(tmp_path, capsys):
    csv = write_ring_tau(tmp_path / "m.csv")
    out = tmp_path / "params.toml"
    assert main(["fit", str(csv), "--model", "taulop", "-o", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["channels"]["shm"]["transfers"] == 2
    table = load_params(out).for_model("taulop").tables["shm"]
    assert table.violations() == []
    assert table.L_s[-1, 0] == pytest.approx(0.2e-6 + 1e-10 * SIZES[-1], rel=0.05)


@pytest.mark.parametrize("argv, message", [
    (["--model", "taulop"], "no measurements to fit taulop from"),
    (["--model", "hockney", "--transfers", "shm=0"], "expected CHANNEL=K"),
])
def test_fit_errors_are_one_line(tmp_path, capsys, argv, message):
    csv = write_pingpong(tmp_path / "m.csv")
    code = main(["fit", str(csv), "-o", str(tmp_path / "p.toml"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
