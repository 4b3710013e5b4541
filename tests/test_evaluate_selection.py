"""Scoring selections against measurements: penalties by hand, and the command on real OSU outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commcost.cli.main import main
from commcost.selection.evaluate import penalties, summary

DATA = Path(__file__).resolve().parent / "data"
NODE = """name = "one node"
[[node_types]]
name = "n"
cores = 4
[[nodes]]
name = "n0"
type = "n"
[[channels]]
name = "shm"
level = "node"
transfers = ["shm", "shm"]
"""


def test_penalties_worked_by_hand():
    measured = {(4, 1): {"a": 1.0, "b": 2.0, "c": 4.0}, (4, 2): {"a": 3.0, "b": 2.0, "c": 2.2},
                (8, 1): {"a": 1.0, "b": 1.0}}
    scores = penalties(measured, {"always c": lambda p, n: "c", "smart": lambda p, n: "a" if n == 1 else "b"})
    by_point = {(s.nprocs, s.nbytes): s for s in scores}
    assert by_point[(4, 1)].picks["always c"][2] == pytest.approx(300.0)
    assert by_point[(4, 2)].picks["always c"][2] == pytest.approx(10.0)
    assert by_point[(8, 1)].picks["always c"][1] != by_point[(8, 1)].picks["always c"][1]  # not measured: nan
    assert all(s.picks["smart"][2] == 0.0 for s in scores)
    # best single: b scores 100 + 0 + 0 (mean 33%), a scores 0 + 50 + 0 (mean 17%), c was not measured everywhere
    assert {s.picks["best single algorithm"][0] for s in scores} == {"a"}
    total = summary(scores, "always c")
    assert total["points"] == 2 and total["unscored"] == 1 and total["max_pct"] == pytest.approx(300.0)
    assert total["within_10pct"] == pytest.approx(0.5) and total["within_5pct"] == 0.0


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eval")
    bcast = sorted((DATA / "osu" / "real" / "bcast").glob("*.out"))
    latency = sorted((DATA / "osu" / "real" / "latency").glob("*.out"))
    assert main(["import", "osu", *map(str, bcast), "--collective", "bcast", "--ppn", "4", "--nnodes", "1",
                 "--name-pattern", "{algorithm}_{nprocs}ranks_run{run}.out", "-o", str(tmp / "test.csv")]) == 0
    assert main(["import", "osu", *map(str, latency), "--name-pattern", "osu_latency_{channel}_run{run}.out",
                 "-o", str(tmp / "train.csv")]) == 0
    (tmp / "node.toml").write_text(NODE)
    return tmp


def test_evaluate_selection_on_real_osu_runs(capsys, tables):
    capsys.readouterr()
    argv = ["evaluate-selection", "--train", str(tables / "train.csv"), "--test", str(tables / "test.csv"),
            "--platform", str(tables / "node.toml"), "--ppn", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for name in ("model-based (hockney)", "Open MPI fixed decision", "best single algorithm"):
        assert name in out
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["points"]) == 15 and set(doc["summary"]) == {"model-based (hockney)", "Open MPI fixed decision",
                                                                 "best single algorithm"}
    for point in doc["points"]:
        model = point["picks"]["model-based (hockney)"]
        assert model["penalty_pct"] == pytest.approx(100 * (model["time_s"] / point["best_time_s"] - 1))
        assert model["penalty_pct"] >= 0
    model_sum = doc["summary"]["model-based (hockney)"]
    assert model_sum["points"] == 15 and 0 <= model_sum["within_5pct"] <= model_sum["within_10pct"] <= 1


def test_evaluate_selection_bad_input_is_one_line(capsys, tables):
    code = main(["evaluate-selection", "--train", str(tables / "train.csv"), "--test", str(tables / "train.csv"),
                 "--platform", str(tables / "node.toml"), "--ppn", "4"])
    err = capsys.readouterr().err
    assert code == 2 and "no (P, n) point with measured times of two or more bcast algorithms" in err
    assert len(err.strip().splitlines()) == 1


def test_evaluate_selection_applies_per_algorithm_fits(capsys, tables, tmp_path):
    """A fit that makes binomial (the plain model's pick on 4 ranks: 2 message times against 3 for the
    others) look 1000 times dearer keeps the model from picking it."""
    params = tmp_path / "fitted.toml"
    params.write_text("[hockney.shm]\nalpha_s = 1.7e-7\nbeta_s_per_byte = 2.4e-10\n"
                      "[algorithm_fit.bcast.binomial]\na_s = 0.0\nb = 1000.0\nmodel = \"hockney\"\n")
    argv = ["evaluate-selection", "--train", str(params), "--test", str(tables / "test.csv"),
            "--platform", str(tables / "node.toml"), "--ppn", "4", "--format", "json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--algorithm-fit"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    name = "model-based (hockney, fitted per algorithm)"
    picks = [p["picks"][name]["choice"] for p in fitted["points"]]
    assert "binomial" in [p["picks"]["model-based (hockney)"]["choice"] for p in plain["points"]]
    assert "binomial" not in picks and len(picks) == 15
