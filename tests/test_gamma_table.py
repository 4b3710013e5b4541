"""Reduction times (gamma) from the tau-Lop authors' gamma.txt files: both header forms, the published values
libtaulop uses, warnings or refusal for measured noise, and errors that name the file, line and field."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.errors import InputError
from commcost.io.gamma_table import read_gamma_table
from commcost.io.params_file import load_params

PARAMS = Path(__file__).resolve().parent.parent / "examples" / "params"
METROPOLIS = PARAMS / "metropolis" / "gamma.txt"


def test_metropolis_sum_int_gives_libtaulops_default_gamma():
    """libtaulop's g^def (SUM_I) at 1 KiB, 64 KiB and 1 MiB, read off its TauLopParam::getTime."""
    seen: list[str] = []
    law = read_gamma_table(METROPOLIS, "SUM_I", "sum_int", strict=False, warnings=seen)
    assert law.times(np.array([1024, 65536, 1 << 20])) == pytest.approx([6.244e-7, 3.51621e-5, 5.41771e-4])
    assert law.times(np.array([8 << 20]))[0] == pytest.approx(2 * 2.1971249e-3)  # two chunks of its 4 MiB
    assert len(seen) == 1 and "line 5" in seen[0] and "gamma(m=64)" in seen[0]


def test_strict_refuses_naming_the_worst_line():
    with pytest.raises(InputError) as info:
        read_gamma_table(METROPOLIS, "SUM_I", strict=True)
    assert info.value.where == "line 5" and str(METROPOLIS) in str(info.value)


def test_the_other_header_form_and_a_missing_column(tmp_path):
    law = read_gamma_table(PARAMS / "lusitania" / "gamma.txt", "sum", strict=False, warnings=[])
    assert len(law.m) == 30 and law.m[0] == 1
    with pytest.raises(InputError, match="no column 'SUM_X'; expected one of max, min, sum"):
        read_gamma_table(PARAMS / "lusitania" / "gamma.txt", "SUM_X")


@pytest.mark.parametrize("text,where,what", [
    ("#m 2\n#max_ops 1\n#size A\n1 1e-9\n", None, "expected 2 rows"),
    ("#m 1\n#max_ops 2\n#size A\n1 1e-9\n", "line 3", "expected '#size' and 2 operation names"),
    ("#m 2\n#max_ops 1\n#size A\n1 1e-9\n1 2e-9\n", "line 5", "not above the previous"),
    ("#m 1\n#max_ops 1\n#size A\n1 x\n", "line 4", "expected numbers"),
    ("#m 1\n#max_ops 1\n#size A\n1 1e-9 2\n", "line 4", "expected 2 columns"),
    ("#rows 1\n#max_ops 1\n#size A\n1 1e-9\n", "line 1", "expected '#m <count>'"),
])
def test_errors_name_the_line_and_what_was_expected(tmp_path, text, where, what):
    path = tmp_path / "gamma.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=what) as info:
        read_gamma_table(path, "A")
    assert info.value.where == where


def test_a_parameter_file_names_the_column_and_the_cli_says_so_in_one_line(tmp_path, capsys):
    (tmp_path / "g.txt").write_text("#m 2\n#max_ops 1\n#size SUM_I\n4 1e-7\n64 2e-7\n")
    good = tmp_path / "p.toml"
    good.write_text('[reduction.sum_int]\nfile = "g.txt"\ncolumn = "SUM_I"\n')
    assert load_params(good).reduction("sum_int").times(np.array([34.0]))[0] == pytest.approx(1.5e-7)
    bad = tmp_path / "q.toml"
    bad.write_text('[hockney.net]\nalpha_s = 1e-6\nbeta_s_per_byte = 1e-9\n\n'
                   '[reduction.sum_int]\nfile = "g.txt"\ncolum = "SUM_I"\n')
    with pytest.raises(InputError) as info:
        load_params(bad)
    assert "unknown key 'colum'" in str(info.value) and "reduction.sum_int" in str(info.value)
    code = main(["predict", "--collective", "reduce", "--algorithm", "ompi.binomial", "--procs", "4",
                 "--nbytes", "1KiB", "--params", str(bad), "--platform",
                 str(PARAMS.parent / "cluster" / "platform.toml"), "--model", "hockney"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "colum" in err and "Traceback" not in err


def test_repaired_file_inlines_gamma_non_decreasing(tmp_path, capsys):
    out = tmp_path / "fixed.toml"
    assert main(["params", "repair", str(PARAMS / "metropolis.toml"), "-o", str(out)]) == 0
    assert "[reduction.sum_int]: 2 of 30 cells moved" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        law = load_params(out, strict=True).reduction("sum_int")
    assert np.all(np.diff(law.time_s) >= 0) and law.beyond_m == "chunks"
