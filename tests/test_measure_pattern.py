"""`commcost measure-pattern` (issue 14 item 6): a sparse exchange run with Isend/Irecv on a real MPI, each level
against each model, resumable; and `commcost fit --model maxrate` from ping-pongs."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.io.measurements import Measurement, MeasurementStore
from commcost.io.params_file import load_params

EX = Path(__file__).resolve().parent.parent / "examples"
MATRIX = EX / "sparse" / "poisson3d_16.mtx"
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
_beside = Path(sys.executable).parent / "mpirun"
MPIRUN = str(_beside) if _beside.is_file() else shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(not (HAVE_MPI4PY and MPIRUN), reason="needs mpi4py and mpirun")


@needs_mpi
def test_every_amg_level_measured_in_both_orders_on_two_ranks_and_resumed(capsys, tmp_path):
    out = tmp_path / "run"
    args = ["measure-pattern", "--pattern", "spmv", "--matrix", str(MATRIX), "--amg-levels", "--procs", "2",
            "--params", str(EX / "params" / "illustrative.toml"), "--model", "hockney", "--model", "maxrate",
            "--repeat", "5", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    runs = json.loads((out / "results.json").read_text())
    levels = {r["config"] for r in runs}
    assert len(levels) >= 3 and len(runs) == 2 * len(levels)
    assert {r["kernel"] for r in runs} == {"spmv-in-order", "spmv-reversed"}
    for run in runs:
        assert run["nprocs"] == 2 and run["measured_s"] > 0
        assert set(run["predicted_s"]) == {"hockney", "maxrate"} and all(v > 0 for v in run["predicted_s"].values())
    assert "mean proportional error" in printed and (out / "measured_vs_predicted.png").stat().st_size > 1000
    one = json.loads((out / "spmv_L0_reversed_shm.json").read_text())
    assert one["order"] == "reversed" and len(one["runs_s"]) == 5 and one["nprocs"] == 2
    # killed halfway: the levels already written are read back, the missing one is measured again
    (out / "spmv_L1_in-order_shm.json").unlink()
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "measured spmv level 1" in printed and printed.count("reused spmv") == 2 * len(levels) - 1


def test_bad_measure_pattern_input_is_one_line(capsys, tmp_path):
    code = main(["measure-pattern", "--pattern", "spmv", "--matrix", str(MATRIX), "--procs", "1",
                 "--params", str(EX / "params" / "illustrative.toml"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--procs" in err and "Traceback" not in err


def _pingpongs(store: MeasurementStore, channel: str, alpha: tuple[float, float], beta: tuple[float, float],
               eager_max: int) -> None:
    for m in [1, 8, 64, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 262144, 1 << 20]:
        a, b = (alpha[0], beta[0]) if m <= eager_max else (alpha[1], beta[1])
        store.append(Measurement("pingpong", 2, m, a + b * m, channel=channel))


def test_maxrate_rows_fitted_from_ping_pongs_with_their_protocol_break(tmp_path, capsys):
    """shm: eager 0.5 us + 0.2 ns/B up to 8 KiB, rendezvous 2 us + 0.1 ns/B; tcp: 5 us + 1 ns/B, then 20 us +
    0.5 ns/B past 16 KiB: the rows come back per locality and protocol, the break as eager_max_bytes; R_N is
    left unlimited and gamma falls back to paper 001's, both said."""
    csv = tmp_path / "m.csv"
    store = MeasurementStore(csv)
    _pingpongs(store, "shm", (0.5e-6, 2e-6), (0.2e-9, 0.1e-9), 8192)
    _pingpongs(store, "tcp", (5e-6, 20e-6), (1e-9, 0.5e-9), 16384)
    out = tmp_path / "maxrate.toml"
    assert main(["fit", str(csv), "--model", "maxrate", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "R_N) left unlimited: no Ring_tau rows" in printed and "8.4e-9" in printed
    params = load_params(out).for_model("maxrate")
    assert params.eager_max_bytes == 8192
    for loc in ("intra_socket", "intra_node"):
        assert params.rows[(loc, "eager")].alpha_s == pytest.approx(0.5e-6, rel=1e-3)
        assert params.rows[(loc, "rend")].rate_bytes_per_s == pytest.approx(1e10, rel=1e-3)
    assert params.rows[("inter_node", "short")].rate_bytes_per_s == pytest.approx(1e9, rel=1e-3)
    assert params.rows[("inter_node", "rend")].alpha_s == pytest.approx(20e-6, rel=1e-3)
    assert np.isinf(params.rows[("inter_node", "rend")].node_rate_bytes_per_s)


def test_maxrate_fit_without_a_network_channel_says_so(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    _pingpongs(MeasurementStore(csv), "shm", (0.5e-6, 2e-6), (0.2e-9, 0.1e-9), 8192)
    assert main(["fit", str(csv), "--model", "maxrate", "-o", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert "inter_node" in err and "m.csv" in err and "Traceback" not in err


def test_node_rate_from_ring_rows_where_it_binds(tmp_path, capsys):
    """Ring_tau rows on two nodes, tau = 2..8 (1..4 senders per node), priced by eq. 2 with R_N = 2.5 GB/s over
    R_b = 2 GB/s (binding from 2 senders a node): R_N comes back; the same rows with no limit leave it
    unlimited."""
    for limit, expect in ((2.5e9, 2.5e9), (None, None)):
        csv = tmp_path / f"m{limit}.csv"
        store = MeasurementStore(csv)
        _pingpongs(store, "shm", (0.5e-6, 2e-6), (0.2e-9, 0.1e-9), 8192)
        _pingpongs(store, "tcp", (5e-6, 20e-6), (0.5e-9, 0.5e-9), 16384)
        for m in (65536, 262144, 1 << 20):
            for tau in range(2, 9):
                a = -(-tau // 2)
                rate = a * 2e9 if limit is None else min(limit, a * 2e9)
                store.append(Measurement("ring_tau", tau, m, 20e-6 + a * m / rate, channel="tcp", tau=tau,
                                         nnodes=2, ppn=a))
        out = tmp_path / f"r{limit}.toml"
        assert main(["fit", str(csv), "--model", "maxrate", "-o", str(out)]) == 0
        printed = capsys.readouterr().out
        rn = load_params(out).for_model("maxrate").rows[("inter_node", "rend")].node_rate_bytes_per_s
        if expect is None:
            assert np.isinf(rn) and "show no node limit" in printed
        else:
            assert rn == pytest.approx(expect, rel=1e-3) and "R_N = " in printed


def test_delta_from_crossing_rows_routed_over_the_platform_network(tmp_path, capsys):
    """Crossing rows on the four-node trunk platform (two routers of two nodes), 1 and 2 pairs, priced as eq.
    2 plus delta l with delta = 2e-7 s/B and l = the pairs' bytes on the one link between the routers: delta
    comes back and contention becomes topology; without a platform the fit keeps paper 001's value and says
    why."""
    platform = Path(__file__).resolve().parent / "data" / "netns_trunk_platform.toml"
    csv = tmp_path / "m.csv"
    store = MeasurementStore(csv)
    _pingpongs(store, "shm", (0.5e-6, 2e-6), (0.2e-9, 0.1e-9), 8192)
    _pingpongs(store, "tcp", (5e-6, 20e-6), (1e-9, 0.5e-9), 16384)
    for m in (1024, 16384, 131072, 524288):
        base = (5e-6 + 1e-9 * m) if m <= 16384 else (20e-6 + 0.5e-9 * m)
        for pairs in (1, 2):
            store.append(Measurement("crossing", 4, m, base + 2e-7 * pairs * m, channel="tcp", tau=pairs,
                                     nnodes=4, ppn=1))
    out = tmp_path / "p.toml"
    assert main(["fit", str(csv), "--model", "maxrate", "--platform", str(platform), "-o", str(out)]) == 0
    assert "delta = " in capsys.readouterr().out
    params = load_params(out).for_model("maxrate")
    assert params.contention == "topology"
    assert params.contention_delta_s_per_byte == pytest.approx(2e-7, rel=1e-3)
    assert main(["fit", str(csv), "--model", "maxrate", "-o", str(tmp_path / "q.toml")]) == 0
    assert "need a platform with a [network]" in capsys.readouterr().out
    assert load_params(tmp_path / "q.toml").for_model("maxrate").contention_delta_s_per_byte == 1e-10
