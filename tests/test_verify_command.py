"""`commcost verify RULES_DIR`: the collectives timed with and without the rules files, verdicts honest about
noise, bad input in one line, and a real run on the embedded Open MPI that resumes."""

from __future__ import annotations

import json
import os
import time

import pytest

from commcost.cli.main import main
from commcost.cli.verify_command import render
from commcost.workflows.verify_launch import environments
from commcost.workflows.verify_results import summary
from commcost.collectives import Collective, find
from commcost.io.han_rules import mca_params_text
from commcost.io.ompi_rules import write_ompi_rules
from commcost.selection.decision import Choice, compress

from real_mpi import needs_mpi


def _point(default_s, rules_s, same=False, predicted=None, ci=0.01):
    gain = default_s / rules_s
    noise = 2 * ci + 0.02
    verdict = "same algorithm" if same else "same" if abs(gain - 1) <= noise else "faster" if gain > 1 else "slower"
    return {"collective": "bcast", "nprocs": 4, "nnodes": 1, "nbytes": 1024, "default_runs": "fixed: binomial",
            "rules_run": "fixed: binomial" if same else "tuned rule: basic_linear", "default_s": default_s,
            "rules_s": rules_s, "measured_gain": gain, "predicted_gain": 1.0 if same else predicted,
            "same_algorithm": same, "verdict": verdict}


def test_a_side_over_launches_is_the_median_and_its_spread_is_noise():
    from commcost.workflows.verify_results import _side
    from commcost.io.measurements import Measurement

    def row(run, median, ci=0.01):
        return Measurement(benchmark="collective", collective="bcast", algorithm="rules", nprocs=2, nnodes=1,
                           ppn=2, channel="any", nbytes=4 << 20, run=run, reps=50, time_s_mean=median,
                           time_s_median=median, ci95_rel=ci, converged=True)
    side = _side("rules", [row(1, 600e-6, 0.02), row(0, 200e-6), row(2, 300e-6)])
    assert side["rules_launches_s"] == [200e-6, 600e-6, 300e-6]  # in round order
    assert side["rules_s"] == pytest.approx(300e-6) and side["rules_ci95_rel"] == 0.02
    assert side["rules_launch_spread"] == pytest.approx(2.0) and side["rules_converged"]
    assert _side("default", [row(0, 1e-6)])["default_launch_spread"] == 0.0
    assert _side("default", [])["default_s"] is None


def test_a_verdict_needs_the_gain_beyond_the_cis_and_the_launches_apart():
    from commcost.workflows.verify_results import verdict

    def entry(default, rules, ci=0.01):
        d, r = sorted(default)[len(default) // 2], sorted(rules)[len(rules) // 2]
        return {"measured_gain": d / r, "default_ci95_rel": ci, "rules_ci95_rel": ci,
                "default_launches_s": default, "rules_launches_s": rules}
    assert verdict(entry([2.0], [1.0])) == "faster" and verdict(entry([1.0], [2.0])) == "slower"
    assert verdict(entry([1.0], [1.03])) == "same"  # within 2 CIs + 2%
    assert verdict(entry([2.0, 2.1, 1.9], [1.0, 1.1, 1.2])) == "faster"  # every launch apart
    assert verdict(entry([2.0, 1.0, 1.9], [1.0, 1.1, 1.2])) == "same"  # one default launch as fast as the rules
    assert verdict(entry([0.45, 0.54, 0.50], [1.04, 0.48, 0.76])) == "same"  # the adapt case on two nodes
    assert verdict(entry([2.67, 2.76, 2.70], [4.31, 6.09, 5.0])) == "slower"
    assert verdict({"measured_gain": None}) == "not measured"


def test_summary_counts_changed_points_and_takes_noise_from_unchanged_ones():
    points = [_point(2.0, 1.0, predicted=1.5), _point(1.0, 1.25, predicted=1.2), _point(1.0, 1.01, predicted=1.1),
              _point(1.1, 1.0, same=True), _point(1.0, 1.05, same=True)]
    totals = summary(points)
    assert totals["changed"] == 3 and totals["faster"] == 1 and totals["same"] == 1
    assert totals["slower"] == ["bcast 1024 B"]
    assert totals["measured_gain_geomean"] == pytest.approx((2.0 * 0.8 / 1.01) ** (1 / 3))
    assert totals["predicted_gain_geomean"] == pytest.approx((1.5 * 1.2 * 1.1) ** (1 / 3))
    assert totals["noise"] == pytest.approx(0.1)  # the larger of 1.1x and 1/1.05x
    text = render(points, totals, "conf")
    assert "measured gain 1.17x" in text and "predicted 1.26x" in text and "1 slower (bcast 1024 B)" in text
    assert "noise (same algorithm both ways): up to 10%" in text
    nothing = summary([_point(1.0, 1.0, same=True)])
    assert "nothing to gain here" in render([_point(1.0, 1.0, same=True)], nothing, "conf")


def test_default_side_drops_the_callers_collective_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1")
    monkeypatch.setenv("OMPI_MCA_mca_base_param_files", "/elsewhere.conf")
    monkeypatch.setenv("OMPI_MCA_btl", "self,tcp")
    envs = environments(tmp_path / "mca-params.conf")
    assert "OMPI_MCA_coll_tuned_use_dynamic_rules" not in envs["default"]
    assert "OMPI_MCA_mca_base_param_files" not in envs["default"] and envs["default"]["OMPI_MCA_btl"] == "self,tcp"
    assert envs["rules"]["OMPI_MCA_mca_base_param_files"] == str((tmp_path / "mca-params.conf").resolve())
    assert "OMPI_MCA_coll_tuned_use_dynamic_rules" not in envs["rules"]
    # with the site-wide file: the default side reads only it (not ~/.openmpi/mca-params.conf), the rules ours first
    site = tmp_path / "site.conf"
    envs = environments(tmp_path / "mca-params.conf", site)
    assert envs["default"]["OMPI_MCA_mca_base_param_files"] == str(site)
    assert envs["rules"]["OMPI_MCA_mca_base_param_files"] == f"{(tmp_path / 'mca-params.conf').resolve()},{site}"


def _rules_dir(folder):
    """bcast: basic_linear for P 2..4 at every size up to 1 MiB (Open MPI's default differs at P = 4)."""
    linear = find(Collective.BCAST, "basic_linear")
    grid = [[Choice(linear, linear.resolve_params())] * 2] * 2
    selection = compress(Collective.BCAST, "ompi", [2, 4], [1, 1 << 20], grid, "test")
    write_ompi_rules([selection], folder / "ompi-rules.conf", "classic", ["test"])
    (folder / "mca-params.conf").write_text(mca_params_text(folder / "ompi-rules.conf", None, ["test"]))
    return folder


def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["verify", str(tmp_path)]) == 2
    assert "no mca-params.conf here" in capsys.readouterr().err
    (tmp_path / "mca-params.conf").write_text("btl = self\n")
    assert main(["verify", str(tmp_path)]) == 2
    assert "turns on no rules file" in capsys.readouterr().err
    _rules_dir(tmp_path)
    assert main(["verify", str(tmp_path), "--collectives", "barrier"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--collectives" in err and "\n" not in err
    # verify starts real ranks: no more than a calibration would (10^7 ranks was a fork bomb)
    assert main(["verify", str(tmp_path), "--procs", "2,10000000"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--procs: expected values <= 4,096, got 10,000,000" in err and "\n" not in err
    (tmp_path / "params.toml").write_text("[meta]\nprocs = 100000\n")
    assert main(["verify", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "params.toml" in err and "procs = 100,000" in err and "\n" not in err


@needs_mpi
def test_verify_times_both_sides_and_resumes(tmp_path, capsys):
    folder = _rules_dir(tmp_path)
    assert main(["verify", str(folder), "--procs", "2,3", "--sizes", "1KiB", "--budget", "24", "--quiet",
                 "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    report = json.loads((folder / "verify.json").read_text())
    assert [(p["nprocs"], p["nbytes"]) for p in report["points"]] == [(2, 1024), (3, 1024)]
    for p in report["points"]:
        assert p["default_s"] > 0 and p["rules_s"] > 0 and p["rules_run"] == "tuned rule: basic_linear"
        assert p["default_runs"].startswith("fixed: ")
    assert "gain" in out and "predicted" in out
    # a second run reuses what verify.csv holds; rules newer than it start over
    assert main(["verify", str(folder), "--procs", "2,3", "--sizes", "1KiB", "--budget", "24", "--quiet", "--html",
                 str(tmp_path / "verify.html"), "--rounds", "1"]) == 0
    assert "reusing the points" in capsys.readouterr().out
    page = (tmp_path / "verify.html").read_text()  # the reused points on one page, the rules files' digests on top
    assert "Measured gains" in page and "ompi-rules.conf" in page and "sha256" in page
    assert page.count("data:image/png;base64,") == 1 and "tuned rule: basic_linear" in page
    later = time.time() + 5
    os.utime(folder / "ompi-rules.conf", (later, later))
    assert main(["verify", str(folder), "--procs", "2", "--sizes", "1KiB", "--budget", "24", "--quiet",
                 "--rounds", "1"]) == 0
    assert "measuring afresh (the rules changed" in capsys.readouterr().out


@needs_mpi
def test_verify_alternates_launches_and_counts_their_spread_as_noise(tmp_path, capsys):
    """--rounds 2: default, rules, default, rules, each launch's rows numbered by its round; a side's time is
    the median of its launches' medians, and its spread is reported."""
    from commcost.io.measurements import read_measurements

    folder = _rules_dir(tmp_path)
    assert main(["verify", str(folder), "--procs", "2", "--sizes", "1KiB", "--budget", "30", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    rows = [r for r in read_measurements(folder / "verify.csv")]
    assert sorted((r.algorithm, r.run) for r in rows) == [("default", 0), ("default", 1), ("rules", 0),
                                                          ("rules", 1)]
    assert [line for line in out.splitlines() if "round " in line][:2]  # each launch's line says its round
    point = json.loads((folder / "verify.json").read_text())["points"][0]
    for side in ("default", "rules"):
        launches = point[f"{side}_launches_s"]
        assert len(launches) == 2 and point[f"{side}_s"] == pytest.approx(sum(launches) / 2)
        assert point[f"{side}_launch_spread"] == pytest.approx(max(launches) / min(launches) - 1)
    assert point["launch_spread"] == max(point["default_launch_spread"], point["rules_launch_spread"])
    assert "launch-to-launch spread" in out


def test_open_mpi_reads_the_rules_side_parameter_files(tmp_path):
    """ompi_info, under the rules side's environment, takes coll_tuned_use_dynamic_rules from our file (a
    list joined with ':' instead of ',' would be one missing file, and the default would pass for the rules)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from commcost.workflows.verify_launch import system_param_file

    ompi_info = Path(sys.executable).parent / "ompi_info"
    if not ompi_info.is_file():
        ompi_info = shutil.which("ompi_info")
        if not ompi_info:
            pytest.skip("no ompi_info")
    folder = _rules_dir(tmp_path)
    envs = environments(folder / "mca-params.conf", system_param_file(str(ompi_info)))

    def source(env):
        out = subprocess.run([str(ompi_info), "--param", "coll", "tuned", "--level", "9", "--parsable"], env=env,
                             capture_output=True, text=True, timeout=60).stdout
        return [line for line in out.splitlines() if "coll_tuned_use_dynamic_rules:source" in line][0]

    assert f"file ({(folder / 'mca-params.conf').resolve()}" in source(envs["rules"])
    assert source(envs["default"]).endswith(":default")


@needs_mpi
def test_the_worker_refuses_ranks_without_the_parameter_file(tmp_path):
    """A launch line that does not pass the parameter file to every rank would time the default as 'rules':
    the worker stops with one line naming the ranks."""
    import subprocess
    import sys

    from real_mpi import ENV, MPIRUN

    cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none", *(["--allow-run-as-root"] if os.geteuid() == 0
                                                                        else []),
           sys.executable, "-m", "commcost.launch.mpi_worker", "--out", str(tmp_path / "v.csv"), "--channel", "any",
           "--sizes", "8", "--calls", "bcast", "--algorithm", "rules", "--expect-env", "COMMCOST_NOT_SET=x"]
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "ranks 0, 1 of 2 did not get COMMCOST_NOT_SET=x" in proc.stderr
