"""Helpers the calibration tests share: run ``commcost fit --model ompi_bcast_model`` and read what it wrote."""

from __future__ import annotations

import tomllib
from pathlib import Path

from commcost.cli.main import main


def fit_ompi_bcast(csv: Path, out: Path, capsys) -> tuple[str, dict]:
    """Fit paper 004's model from ``csv`` into ``out``; the printed report and the parameter file as a dict."""
    assert main(["fit", str(csv), "--model", "ompi_bcast_model", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    with open(out, "rb") as f:
        return text, tomllib.load(f)
