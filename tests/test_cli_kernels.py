"""`commcost partition` and `commcost predict --kernel` (paper 000 sections 2 and 4)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.closedform import hloggp_kernels
from commcost.io.params_file import load_params
from commcost.io.partition_file import read_partition
from commcost.io.platform_file import load_platform
from commcost.kernels import summa_iteration, wave2d
from commcost.models import PlacedSchedule
from commcost.models.taulop import algebra
from commcost.platform import Mapping

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
PAPER = EX / "paper000"
FERMI = EX / "fermi"
PRICE = ["--platform", str(PAPER / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml")]
EQ10 = "3||T^1(35) + 2||T^1(166) + T^1(81) + 2||T^0(116) + T^0(18)"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_partition_command_writes_fig8(capsys, tmp_path):
    code, out, _ = run(capsys, "partition", "--layout", str(PAPER / "fig8_layout.txt"),
                       "--speeds", str(PAPER / "fig8_speeds.txt"), "--n", "256",
                       "-o", str(tmp_path / "p.txt"), "--png", str(tmp_path / "p.png"))
    assert code == 0 and "3 columns of widths 124 97 35" in out
    assert (tmp_path / "p.txt").read_text() == (PAPER / "fig8_partition.txt").read_text()
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_partition_command_places_a_table1_row(capsys, tmp_path):
    code, out, _ = run(capsys, "partition", "--layout", str(FERMI / "table1.txt"), "--row", "M16",
                       "--platform", str(FERMI / "platform.toml"), "--speeds", str(FERMI / "speeds.txt"),
                       "--n", "128", "-o", str(tmp_path / "m16.txt"))
    assert code == 0 and out.startswith("P = 47, N = 128")
    part = read_partition(tmp_path / "m16.txt")
    assert len(set(part.hosts)) == 16


def test_predict_summa_iteration_80_explains_eq10(capsys):
    code, out, _ = run(capsys, "predict", "--kernel", "summa", "--partition", str(PAPER / "fig8_partition.txt"),
                       *PRICE, "--model", "taulop", "--iteration", "80", "--explain")
    assert code == 0
    formula = out.split("eq. 5-7):\n", 1)[1].splitlines()[0].strip()
    assert algebra.parse_terms(formula) == algebra.parse_terms(EQ10)


def test_predict_summa_whole_run_json(capsys):
    code, out, _ = run(capsys, "predict", "--kernel", "summa", "--partition", str(PAPER / "fig8_partition.txt"),
                       *PRICE, "--model", "hloggp", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["iterations"] == 256
    assert [m["model"] for m in doc["models"]] == ["hloggp", "hloggp-paper000"]
    for m in doc["models"]:
        assert m["time_s"] == pytest.approx(sum(r["iteration_s"] * r["repeat"] for r in m["runs"]))


def test_predict_wave2d_steps(capsys):
    code, out, _ = run(capsys, "predict", "--kernel", "wave2d", "--steps", "10",
                       "--partition", str(PAPER / "fig8_partition.txt"), *PRICE, "--model", "taulop")
    assert code == 0 and "Wave2D N=256 P=6 T=10: 10 iterations" in out


@pytest.mark.parametrize("argv, message", [
    (["--kernel", "summa"], "--partition: --kernel needs --partition FILE"),
    (["--kernel", "summa", "--partition", str(PAPER / "fig8_partition.txt"), "--iteration", "300"],
     "--iteration: expected an iteration in 0..255"),
    (["--kernel", "summa", "--partition", str(PAPER / "fig8_layout.txt")], "fig8_layout.txt"),
])
def test_predict_kernel_errors_are_one_line(capsys, argv, message):
    code, _, err = run(capsys, "predict", *argv, *PRICE, "--model", "taulop")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_hloggp_paper_rule_is_max_of_sender_sums():
    """Paper 000 section 4: per sender the sum of its p2p costs, the phase the largest sum."""
    part = read_partition(PAPER / "fig8_partition.txt")
    platform, _ = load_platform(PAPER / "platform.toml")
    mapping = Mapping.from_node_names(platform, list(part.hosts))
    params = load_params(EX / "params" / "illustrative.toml").for_model("hloggp")
    for schedule in (summa_iteration(part, 80), wave2d(part, 3)):
        placed = PlacedSchedule.of(schedule, platform, mapping)
        p2p = hloggp_kernels.p2p_times_s(placed, params)
        cost = hloggp_kernels.price(placed, params)
        for k, sl in enumerate(schedule.phase_slices()):
            sums = np.bincount(schedule.src[sl], weights=p2p[sl], minlength=schedule.nprocs)
            assert cost.phase_time_s[k] == pytest.approx(sums.max(), rel=1e-12)
        assert cost.time_s == pytest.approx(cost.phase_time_s @ schedule.repeat)


def test_predict_summa_m16_under_taulop_and_hloggp(capsys, tmp_path):
    """Issue 6: Table 1 layout M16 (47 processes), N = 256, priced under tau-Lop and HLogGP (timing: bench/)."""
    part = tmp_path / "m16.txt"
    assert run(capsys, "partition", "--layout", str(FERMI / "table1.txt"), "--row", "M16", "--platform",
               str(FERMI / "platform.toml"), "--speeds", str(FERMI / "speeds.txt"), "--n", "256",
               "-o", str(part))[0] == 0
    totals = {}
    for model in ("taulop", "hloggp"):
        code, out, _ = run(capsys, "predict", "--kernel", "summa", "--partition", str(part),
                           "--platform", str(FERMI / "platform.toml"),
                           "--params", str(EX / "params" / "illustrative.toml"), "--model", model,
                           "--mapping", f"layout:{FERMI / 'table1.txt'}:M16", "--format", "json")
        assert code == 0
        doc = json.loads(out)
        assert doc["iterations"] == 256
        totals.update({m["model"]: m["time_s"] for m in doc["models"]})
    assert set(totals) == {"taulop", "hloggp", "hloggp-paper000"} and all(t > 0 for t in totals.values())
