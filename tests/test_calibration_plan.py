"""Calibration without MPI: the benchmark plan, the launch lines, paper 004's fits and the fit command's new models."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from commcost.calibration.plan import (
    BCAST_SIZES, OMPI_BCAST_ALGORITHMS, SEGSIZE, Run, parse_benchmarks, plan_runs, row_ident, run_points,
)
from commcost.launch.mpi_launch import launch_line
from commcost.cli.main import main
from commcost.closedform.ompi_bcast_calibration import calibrate_paper004, gamma_and_q
from commcost.closedform.ompi_bcast_fit import experiment_coefficients
from commcost.closedform.ompi_bcast_params import Paper004Params
from commcost.errors import InputError
from commcost.io.measurements import Measurement, MeasurementStore, fit_times, measurement_columns
from fit_helpers import fit_ompi_bcast


def test_crossing_points_are_every_pair_count_at_every_size():
    from commcost.calibration.plan import run_points

    points = run_points("crossing", "tcp", 6, [8, 1024])
    assert [(p.benchmark, p.nprocs, p.nbytes, p.tau) for p in points] == [
        ("crossing", 6, 8, 1), ("crossing", 6, 8, 2), ("crossing", 6, 8, 3),
        ("crossing", 6, 1024, 1), ("crossing", 6, 1024, 2), ("crossing", 6, 1024, 3)]


def test_benchmark_names_parse_with_aliases_and_all():
    assert parse_benchmarks("pingpong,ringtau") == ("pingpong", "ringtau")
    assert parse_benchmarks("ring_tau, hvpp") == ("ringtau", "hvpp")
    assert parse_benchmarks("all") == ("pingpong", "ringtau", "nbft", "bcast", "hvpp", "crossing", "reduction",
                                       "allreduce",
                                       "reduce", "allgather", "alltoall", "scatter", "gather")
    assert parse_benchmarks("pingpong,collectives") == ("pingpong", "allreduce", "reduce", "allgather", "alltoall",
                                                        "scatter", "gather")
    assert parse_benchmarks("reduce_local,alltoall") == ("reduction", "alltoall")
    with pytest.raises(ValueError, match="unknown benchmark 'bogus'"):
        parse_benchmarks("pingpong,bogus")


def test_runs_one_per_channel_then_one_per_forced_bcast_algorithm():
    assert plan_runs(("pingpong", "ringtau"), ("shm", "tcp")) == [Run(("pingpong", "ringtau"), "shm"),
                                                                 Run(("pingpong", "ringtau"), "tcp")]
    runs = plan_runs(("pingpong", "bcast"), ("shm", "tcp"))
    assert [r.algorithm_id for r in runs] == [None, None, *range(1, 10)]
    assert [r.algorithm for r in runs[2:]] == list(OMPI_BCAST_ALGORITHMS.values())


def test_points_follow_the_papers():
    ring = run_points("ringtau", "shm", 4, [8])
    assert [(p.tau, p.nprocs) for p in ring] == [(1, 2), (2, 2), (3, 3), (4, 4)]  # paper 000 5.2
    nbft = run_points("nbft", "tcp", 3, [])
    assert {p.nprocs for p in nbft} == {2, 3}  # P = 2..P_max, paper 004 eq. 14
    bcast = run_points("bcast", "shm", 2, [], algorithm="binomial")
    assert [p.nbytes for p in bcast] == list(BCAST_SIZES) and all(p.segsize == SEGSIZE for p in bcast)
    assert all(b % SEGSIZE == 0 for b in BCAST_SIZES)  # m a multiple of m_s (paper 004 section 4)
    hv = run_points("hvpp", "shm", 2, [])
    assert {p.algorithm for p in hv} == {"in_order", "reversed"}
    row = Measurement("ring_tau", 3, 8, 1e-6, channel="shm", tau=3)
    assert row_ident(row) == ring[2].ident()


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"launcher": None, "procs": 2, **kw})


def test_a_bcast_run_forces_its_algorithm_with_mca_settings():
    line, _ = launch_line(_args(), "/x/mpirun", Run(("bcast",), "shm", 6))
    text = " ".join(line)
    assert "--mca coll_tuned_use_dynamic_rules 1" in text
    assert "--mca coll_tuned_bcast_algorithm 6" in text
    assert f"--mca coll_tuned_bcast_algorithm_segmentsize {SEGSIZE}" in text
    assert "--mca coll_tuned_bcast_algorithm_chain_fanout 4" in text and "btl" not in text
    tcp, _ = launch_line(_args(), "/x/mpirun", Run(("pingpong",), "tcp"))
    assert "--mca btl tcp,self" in " ".join(tcp)
    own, env = launch_line(_args(launcher="srun -n 2"), None, Run(("bcast",), "tcp", 3))
    assert own == ["srun", "-n", "2"]
    assert env["OMPI_MCA_coll_tuned_bcast_algorithm"] == "3" and env["OMPI_MCA_btl"] == "tcp,self"


@pytest.mark.parametrize("argv, message", [
    (["--benchmarks", "pingpong,bogus"], "--benchmarks: unknown benchmark 'bogus'"),
    (["--sizes", "1,x"], "--sizes: expected sizes in bytes"),
])
def test_calibrate_bad_options_are_one_line(tmp_path, capsys, argv, message):
    code = main(["calibrate", "--out", str(tmp_path / "o"), "--mpirun", "/bin/true", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err


# ---------------------------------------------------------------- paper 004 from measurement rows


def _rows_paper004(theta, gamma1=(1.0, 1.3), q=4.0):
    """NBFT rows giving gamma^1 and Q, and bcast + gather rows computed from the model with ``theta``."""
    rows = []
    t0 = 2e-6
    for p, g in zip((2, 3), gamma1):
        rows.append(Measurement("nbft", p, SEGSIZE, t0 * q * g, channel="tcp"))
        rows.append(Measurement("nbft", p, SEGSIZE, t0, channel="shm"))
    truth = Paper004Params(o0_s=theta[0], o1_s=theta[1], L0_s=theta[2], L1_s=theta[3], gamma1=gamma1, Q=q,
                           gamma0=(1.0, 1.0))
    for algorithm in ("binomial", "basic_linear"):
        for channel, ppn in (("shm", 4), ("tcp", 1)):
            for m in BCAST_SIZES:
                t = float(experiment_coefficients(algorithm, 4, m, SEGSIZE, ppn, truth) @ truth.theta)
                rows.append(Measurement("bcast_gather", 4, m, t, collective="bcast", algorithm=algorithm,
                                        channel=channel, segsize=SEGSIZE, nnodes=1, ppn=4))
    return rows


def test_gamma_and_q_from_nbft_rows_follow_eq_14_and_15():
    values, report = gamma_and_q(measurement_columns(_rows_paper004((0, 1e-6, 1e-6, 1e-6))))
    assert values["gamma1"] == pytest.approx((1.0, 1.3))
    assert values["gamma0"] == pytest.approx((1.0, 1.0))
    assert values["Q"] == pytest.approx(4.0)
    assert "eq. 15" in report["Q"] and "eq. 14" in report["gamma1"]


def test_per_algorithm_fit_reproduces_model_times():
    theta = (1e-6, 4e-6, 2e-6, 6e-6)
    params, fits, report = calibrate_paper004(measurement_columns(_rows_paper004(theta)))
    assert {f.algorithm for f in fits} == {"binomial", "basic_linear"}
    for f in fits:
        assert f.mu.max() < 1.01, f.algorithm
    assert set(dict(params.algorithms)) == {"binomial", "basic_linear"}
    assert report["algorithms"]["binomial"]["mu_mean"] < 1.01


def test_per_algorithm_parameters_round_trip_and_are_checked():
    p = Paper004Params(o0_s=0, o1_s=1e-6, L0_s=1e-6, L1_s=1e-6, gamma1=(1.0,), Q=2.0,
                       algorithms={"binomial": (0.0, 2e-6, 3e-6, 4e-6)})
    again = Paper004Params.from_dict(p.to_dict())
    assert again == p
    assert again.for_algorithm("binomial").theta == pytest.approx((0.0, 2e-6, 3e-6, 4e-6))
    assert again.for_algorithm("chain") is again
    with pytest.raises(InputError, match="algorithms.knomial"):
        Paper004Params.from_dict({**p.to_dict(), "algorithms": {"knomial": {"o0_s": 1.0}}})


def test_fit_ompi_bcast_writes_per_algorithm_tables(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    MeasurementStore(csv).extend(_rows_paper004((1e-6, 4e-6, 2e-6, 6e-6)))
    text, doc = fit_ompi_bcast(csv, tmp_path / "p.toml", capsys)
    assert "binomial" in text and "Q = 4.0" in text and "mu mean 1.00" in text
    assert set(doc["ompi_bcast_model"]["algorithms"]) == {"binomial", "basic_linear"}
    assert doc["meta"]["quality"]["binomial"]["mu_max"] < 1.01


def test_fit_ompi_bcast_without_experiments_is_one_line(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    MeasurementStore(csv).append(Measurement("pingpong", 2, 8, 1e-6, channel="shm"))
    assert main(["fit", str(csv), "--model", "ompi_bcast_model", "-o", str(tmp_path / "p.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no broadcast experiments" in err and str(csv) in err and "\n" not in err


def test_fit_loggp_keeps_what_a_pingpong_identifies(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    store = MeasurementStore(csv)
    for m in (1, 64, 1024, 16384, 262144):
        store.append(Measurement("pingpong", 2, m, 2e-6 + 1e-10 * (m - 1), channel="shm"))
        store.append(Measurement("hvpp", 2, m, 1.0, channel="shm", tau=4, algorithm="reversed"))  # not p2p
    out = tmp_path / "p.toml"
    assert main(["fit", str(csv), "--model", "loggp", "-o", str(out)]) == 0
    assert "o, L and g need" in capsys.readouterr().out
    with open(out, "rb") as f:
        meta = tomllib.load(f)["meta"]
    assert meta["loggp"]["shm"]["G_s_per_byte"] == pytest.approx(1e-10, rel=1e-3)
    assert meta["loggp"]["shm"]["two_o_plus_L_s"] == pytest.approx(2e-6, rel=1e-3)
    assert meta["points"] == 5


def test_fit_times_prefers_the_median():
    rows = [Measurement("pingpong", 2, 8, 5e-3, time_s_median=1e-6), Measurement("pingpong", 2, 16, 2e-6)]
    cols = fit_times(measurement_columns(rows))
    assert cols["time_s_mean"].tolist() == [1e-6, 2e-6]
    assert fit_times(measurement_columns(rows), "mean")["time_s_mean"].tolist() == [5e-3, 2e-6]
    assert np.all(measurement_columns(rows)["time_s_mean"] == [5e-3, 2e-6])


def test_a_small_budget_goes_to_the_leading_runs():
    from commcost.workflows.calibrate_plan import MIN_RUN_S, STARTUP_S, share as _share

    runs = plan_runs(("pingpong", "bcast"), ("shm", "tcp"))
    points = {r: r.points(2, [1, 64]) for r in runs}
    plenty = _share(runs, points, set(), 1000.0)
    assert plenty == pytest.approx((1000.0 - STARTUP_S * len(runs)) * 2 / (2 * 2 + 9 * len(BCAST_SIZES)))
    tight = _share(runs, points, set(), 2 * (STARTUP_S + MIN_RUN_S))  # room for two runs only
    assert tight == pytest.approx(MIN_RUN_S)
    done = {p.ident() for p in points[runs[0]]}
    assert _share(runs[1:], points, done, 100.0) > 0


def test_taulop_in_calibrate_leaves_out_sizes_a_stopped_run_did_not_finish():
    from commcost.calibration.from_measurements import fit_channels

    rows = [Measurement("ring_tau", 2, m, (1e-6 + 1e-10 * m) * tau, channel="shm", tau=tau)
            for m in (1, 1024, 65536) for tau in (1, 2)]
    cols = measurement_columns(rows[:-1])  # 64 KiB lacks tau = 2
    with pytest.raises(InputError, match="no measurement at m = 65536, tau = 2"):
        fit_channels(cols, "taulop")
    (fit,) = fit_channels(cols, "taulop", complete_only=True)
    assert fit.report["sizes_dropped"] == [65536.0] and fit.npoints == 4


def test_taulop_tables_ending_at_different_sizes_are_written_so_predict_reads_them(tmp_path, capsys):
    """A calibration whose budget stopped tcp's largest size (here: tau = 2 at 64 KiB) fits shm's table to
    64 KiB and tcp's to 1 KiB. A tcp transfer sums both tables, and whole chunks of the last size (the
    default past a table) are no sum rule for tables of different ends: the section says
    beyond_m = "slope", and predict prices a tcp transmission from the written file (it refused it before)."""
    from commcost.calibration.from_measurements import fit_channels, model_section
    from commcost.io.params_file import write_params

    rows = [Measurement("ring_tau", 2, m, (k * 1e-6 + 1e-10 * m) * tau, channel=c, tau=tau)
            for c, k in (("shm", 1), ("tcp", 20)) for m in (1, 1024, 65536) for tau in (1, 2)]
    fits = fit_channels(measurement_columns(rows[:-1]), "taulop", complete_only=True)
    section = model_section("taulop", fits)
    assert section["beyond_m"] == "slope" and section["tcp"]["m"][-1] == 1024 and section["shm"]["m"][-1] == 65536
    assert "beyond_m" not in model_section("taulop", fit_channels(measurement_columns(rows[:6]), "taulop"))
    params = tmp_path / "p.toml"
    write_params(params, {"taulop": section}, {})
    platform = Path(__file__).resolve().parent.parent / "examples" / "two-nodes" / "platform.toml"
    assert main(["predict", "--collective", "allgather", "--algorithm", "ring", "--procs", "4", "--nbytes", "65536",
                 "--platform", str(platform), "--params", str(params), "--model", "taulop", "--mapping",
                 "round-robin:2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_s"] > 0


def test_fit_hockney_reports_eager_and_rendezvous_segments(tmp_path, capsys):
    """A protocol switch (a jump in latency and slope above 16 KiB) shows as two segments in the report."""
    csv = tmp_path / "m.csv"
    store = MeasurementStore(csv)
    for k in range(12):
        m = 4 ** k
        t = 1e-6 + 1e-10 * m if m <= 16384 else 8e-6 + 2e-10 * m
        store.append(Measurement("pingpong", 2, m, t, channel="shm"))
    out = tmp_path / "p.toml"
    assert main(["fit", str(csv), "--model", "hockney", "-o", str(out), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["channels"]["shm"]["segments"]
    assert report["breaks"] == [[16384.0, 65536.0]]
    assert [s["params"]["alpha_s"] for s in report["segments"]] == pytest.approx([1e-6, 8e-6], rel=1e-3)


def test_a_launch_that_dies_at_start_up_is_launched_once_more(monkeypatch):
    """Open MPI's PMIx listener thread sometimes fails to start (exit 213 within a second): calibrate and
    verify launch such a run once more; a run that failed after working a while, a clean exit, a run stopped
    at its budget (124) or a retry the budget has no room for is not repeated."""
    import commcost.launch.mpi_launch as launch
    monkeypatch.setattr(launch.time, "sleep", lambda s: None)
    for codes, room, expected, calls in (([213, 0], True, 0, 2), ([213, 213], True, 213, 2), ([0], True, 0, 1),
                                         ([124], True, 124, 1), ([213, 0], False, 213, 1)):
        seen = []

        def once():
            seen.append(1)
            return codes[len(seen) - 1]

        assert launch.launch_retrying(once, lambda: room) == expected and len(seen) == calls
    monkeypatch.setattr(launch, "RETRY_WITHIN_S", -1.0)  # every failure now came "late": no retry
    seen = []
    assert launch.launch_retrying(lambda: seen.append(1) or 213) == 213 and len(seen) == 1


def test_a_start_up_slower_than_allowed_comes_out_of_the_measuring_time():
    """Issue 38: a worker's deadline counts from when MPI is up, so on a busy machine a slow start-up
    pushed the last point past the parent's hard stop. With the launch time and the start-up allowed, the
    excess is taken off the measuring time; a fast start-up keeps it whole; clocks apart are not believed."""
    from commcost.launch.mpi_launch import worker_args
    from commcost.launch.mpi_worker import measuring_seconds

    assert measuring_seconds(10.0, None, 3.0, 1000.0) == 10.0  # no launch time: as before
    assert measuring_seconds(10.0, 998.0, 3.0, 1000.0) == 10.0  # 2 s start-up, 3 allowed
    assert measuring_seconds(10.0, 993.0, 3.0, 1000.0) == 6.0  # 7 s: 4 s beyond the allowance
    assert measuring_seconds(10.0, 985.0, 3.0, 1000.0) == -2.0  # nothing left: no point starts
    assert measuring_seconds(10.0, 1005.0, 3.0, 1000.0) == 10.0  # launched "later" than now: another clock
    assert measuring_seconds(10.0, 1000.0 - 7200.0, 3.0, 1000.0) == 10.0
    args = worker_args(Path("m.csv"), "shm", "", [1, 8], 5.0, 0, 3.0)
    assert args[args.index("--startup-s") + 1] == "3" and float(args[args.index("--launched-at") + 1]) > 0
    assert "--launched-at" not in worker_args(Path("m.csv"), "shm", "", [1, 8], 5.0)  # a dry run's line
