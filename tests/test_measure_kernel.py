"""`commcost measure-kernel`: Algorithm 1 timing on a real MPI, mu and the Table 2 form (paper 000 sec. 5)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from commcost.cli.main import main
from commcost.report.kernel_validation import KernelRun, mean_mu, render_validation

EX = Path(__file__).resolve().parent.parent / "examples"
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
_beside = Path(sys.executable).parent / "mpirun"
MPIRUN = str(_beside) if _beside.is_file() else shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(not (HAVE_MPI4PY and MPIRUN), reason="needs mpi4py and mpirun")


def test_mu_and_table2_form():
    runs = [KernelRun("summa", "shm", "a", 2, 8, 1.0, {"hockney": 2.0, "taulop": 1.0}),
            KernelRun("summa", "shm", "b", 3, 8, 4.0, {"hockney": 1.0, "taulop": 5.0})]
    assert runs[1].mu() == {"hockney": 4.0, "taulop": 1.25}
    assert mean_mu(runs) == {("summa", "shm", "hockney"): 3.0, ("summa", "shm", "taulop"): 1.125}
    text = render_validation(runs)
    assert "paper 000 Table 2 form" in text and "3.000" in text and "1.125" in text


def test_bad_procs_is_one_line(capsys, tmp_path):
    code = main(["measure-kernel", "summa", "--procs", "1..9", "--params", str(EX / "params" / "illustrative.toml"),
                 "--out", str(tmp_path)])
    assert code == 2 and "--procs: expected P or A..B with 2 <= A <= B" in capsys.readouterr().err


@needs_mpi
def test_measured_summa_on_two_ranks(capsys, tmp_path):
    code = main(["measure-kernel", "summa", "--procs", "2", "--n", "8", "--kb", "8",
                 "--params", str(EX / "params" / "illustrative.toml"), "--model", "hockney", "--model", "hloggp",
                 "--out", str(tmp_path), "--timeout", "120"])
    out = capsys.readouterr().out
    assert code == 0, out
    (row,) = json.loads((tmp_path / "results.json").read_text())
    assert row["nprocs"] == 2 and row["measured_s"] > 0
    assert set(row["mu"]) == {"hockney", "hloggp", "hloggp-paper000"} and min(row["mu"].values()) >= 1.0
    worker = json.loads((tmp_path / "summa_shm_partition_p2_n8.json").read_text())
    assert len(worker["iterations_s"]) == 8
    assert (tmp_path / "measured_vs_predicted.png").stat().st_size > 1000
