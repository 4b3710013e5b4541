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


def synthetic_points(platform, collectives=None, procs=(8, 16, 32, 64), sizes=(64, 4096, 65536, 1 << 20)):
    """Every Open MPI algorithm with an id of ``collectives`` (default bcast and allreduce) at each P of
    ``procs`` and size of ``sizes``, placed 16 ranks a node: the labels (collective, algorithm, P, n) and
    the placed schedules, for fits to rows priced from known parameters."""
    from commcost.collectives import Case, Collective, algorithms, build
    from commcost.models import PlacedSchedule
    from commcost.platform import Mapping

    points, placed = [], []
    for collective in collectives or (Collective.BCAST, Collective.ALLREDUCE):
        for algorithm in [a for a in algorithms(collective) if a.library == "ompi" and a.id is not None]:
            for nprocs in procs:
                for nbytes in sizes:
                    schedule = build(algorithm, Case(collective, nprocs, nbytes), algorithm.resolve_params()).schedule
                    placed.append(PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, nprocs, 16)))
                    points.append((collective.value, algorithm.name, nprocs, nbytes))
    return points, placed
