"""Helpers the calibration tests share: run ``commcost fit --model ompi_bcast_model`` and read what it wrote;
keep a sweep's rows up to a size."""

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


def rows_up_to(csv: Path, out: Path, max_nbytes: int) -> Path:
    """The rows of measurements file ``csv`` of at most ``max_nbytes`` bytes, written to ``out``. The tests
    of ``tune --from-measurements`` on the Peak sweeps select up to 64 KiB: fitting them without the
    segmented pipelines of 512 KiB-1 MiB takes about half the time (74 s -> 41 s of CPU), and what they
    check (the workflow, its files and strategies) is the same."""
    from commcost.io.measurements import MeasurementStore, read_measurements

    MeasurementStore(out).extend([m for m in read_measurements(csv) if m.nbytes <= max_nbytes])
    return out
