"""The command line, called as ``main(argv)``: the bundled examples, JSON output, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from commcost import __version__
from commcost.cli.main import main
from commcost.models import MODELS
from commcost.models.taulop import algebra

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
DATA = Path(__file__).parent / "data"
FIG8 = ["--schedule", str(EX / "paper000" / "summa_k80.json"),
        "--platform", str(EX / "paper000" / "platform.toml"),
        "--params", str(EX / "params" / "illustrative.toml")]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_python_dash_m_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "commcost", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and __version__ in done.stdout


def test_models_lists_every_registered_model_with_a_description(capsys):
    code, out, _ = run(capsys, "models")
    assert code == 0
    lines = out.strip().splitlines()
    assert sorted(line.split()[0] for line in lines) == sorted([*MODELS, "ompi_bcast_model"])  # paper 004's too
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


def test_fig8_example_explained_in_json_is_eq10(capsys):
    code, out, _ = run(capsys, "predict", *FIG8, "--model", "taulop", "--explain", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert algebra.parse_terms(doc["formula"]) == algebra.parse_terms(
        "3||T^1(35) + 2||T^1(166) + T^1(81) + 2||T^0(116) + T^0(18)")
    assert doc["model"] == "taulop" and doc["time_s"] > 0
    assert [p["name"] for p in doc["phases"]] == ["pbc", "pbr"]
    assert doc["time_s"] == pytest.approx(sum(p["time_s"] for p in doc["phases"]))
    assert doc["phases"][1]["time_s"] == pytest.approx(doc["phases"][1]["formula_s"])  # eq. 9 is exact
    assert "\\parallel" in doc["formula_latex"]


def test_fig8_text_report_shows_algebra_and_engine(capsys):
    code, out, _ = run(capsys, "predict", *FIG8, "--model", "taulop", "--explain")
    assert code == 0
    assert "2||T^0(116) + T^0(18) + 2||T^1(166) + T^1(81) + 3||T^1(35)" in out
    assert "by the paper's algebra" in out and "by the exact engine" in out


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_model_prices_the_fig8_example(capsys, model):
    code, out, _ = run(capsys, "predict", *FIG8, "--model", model, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["model"] == model and doc["time_s"] > 0 and len(doc["phases"]) == 2


def test_wave2d_example_with_a_mapping_file(capsys):
    code, out, _ = run(capsys, "predict", "--schedule", str(EX / "paper000" / "wave2d_rank1.json"),
                       "--platform", str(EX / "paper000" / "platform.toml"),
                       "--params", str(EX / "params" / "illustrative.toml"), "--model", "taulop",
                       "--mapping", f"file:{EX / 'paper000' / 'wave2d_ranks.txt'}", "--explain",
                       "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["formula"] == "max{4||T^0(16) + 3||T^0(48), 2||T^1(48) + T^1(16)}"
    assert doc["time_s"] == pytest.approx(doc["formula_s"])


def test_binomial_example_is_eq4(capsys):
    code, out, _ = run(capsys, "predict", "--schedule", str(EX / "paper000" / "binomial16.json"),
                       "--platform", str(EX / "paper000" / "platform.toml"),
                       "--params", str(EX / "params" / "illustrative.toml"), "--model", "taulop",
                       "--mapping", "sequential:16", "--explain", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["formula"] == "T^0(1) + 2||T^0(1) + 4||T^0(1) + 8||T^0(1)"
    assert doc["time_s"] == pytest.approx(doc["formula_s"])


def one_line_error(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


def test_bad_schedule_is_one_line_naming_file_and_field(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"nprocs": 2, "phases": [{"sends": [[0, 5, 10]]}]}))
    err = one_line_error(capsys, "predict", "--schedule", str(bad), *FIG8[2:], "--model", "taulop")
    assert "bad.json" in err and "dst" in err


def test_bad_taulop_table_is_one_line_naming_file_and_line(capsys, tmp_path):
    params = tmp_path / "params.toml"
    params.write_text(f'[taulop.shm]\nfile = "{DATA / "taulop_bad_row.tsv"}"\n[taulop.ib]\nfile = "{EX / "params" / "ib.tsv"}"\n')
    err = one_line_error(capsys, "predict", *FIG8[:4], "--params", str(params), "--model", "taulop", "--strict")
    assert "taulop_bad_row.tsv:line 6:" in err
    code, out, err = run(capsys, "predict", *FIG8[:4], "--params", str(params), "--model", "taulop")
    assert code == 0 and "Traceback" not in err  # loaded as measured, with one warning naming the line
    assert err.strip().splitlines() == [line for line in err.strip().splitlines() if line.startswith("commcost: warning:")]
    assert "taulop_bad_row.tsv: 1 cell breaks" in err and "worst at line 6" in err


def test_missing_model_section_names_the_file(capsys, tmp_path):
    params = tmp_path / "params.toml"
    params.write_text('[meta]\nmachine = "x"\n')
    err = one_line_error(capsys, "predict", *FIG8[:4], "--params", str(params), "--model", "hockney")
    assert "params.toml" in err and "[hockney]" in err


def test_missing_file_is_one_line(capsys):
    err = one_line_error(capsys, "predict", "--schedule", "nowhere.json", *FIG8[2:], "--model", "taulop")
    assert "nowhere.json" in err


def test_unknown_model_is_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["predict", *FIG8, "--model", "nosuch"])
    assert info.value.code == 2
