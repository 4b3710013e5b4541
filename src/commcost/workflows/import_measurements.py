"""``commcost import``'s work: benchmark outputs (OSU, IMB-MPI1, an ompi-collectives-tuning folder) into the
measurements store.

Every file is read and checked before anything is written, so a bad file
leaves the store as it was. Rows skipped on purpose (an OSU row whose
validation failed) are told as notes. Points already in the store (same key)
are skipped, so importing the same files twice adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

Notify = Callable[[str], None]


@dataclass
class ImportOptions:
    """What ``commcost import osu|imb`` reads and where it appends (its options, by their argparse names)."""

    import_format: str = "osu"  # osu or imb
    files: list[Path] = field(default_factory=list)
    output: Path | None = None  # the measurements CSV to append to
    collective: str | None = None
    algorithm: str | None = None
    nprocs: int | None = None
    datatype: str | None = None  # OSU: only this '# Datatype:' table
    ppn: int | None = None
    nnodes: int | None = None
    channel: str | None = None
    mpi: str | None = None
    host: str | None = None
    run: int | None = None
    name_pattern: str | None = None  # fields taken from file names


@dataclass
class ColtuneOptions:
    """What ``commcost import coltune`` reads and where it appends (its options, by their argparse names)."""

    folder: Path | None = None  # the ompi-collectives-tuning output folder (or its output/ sub-folder)
    output: Path | None = None  # the measurements CSV to append to
    ppn: int | None = None
    ompi_version: str = "5.0"
    collectives: str | None = None  # comma list (default all)
    mpi: str | None = None
    host: str | None = None


def import_benchmarks(options: ImportOptions, notify: Notify | None = None) -> dict:
    """Read every OSU or IMB-MPI1 output of ``options.files``, tell each note to ``notify``, then append the
    rows to ``options.output``; the document ``import --format json`` prints."""
    from commcost.io.imb_import import read_imb
    from commcost.io.measurements import MeasurementStore
    from commcost.io.osu_import import RunContext, compile_name_pattern, read_osu
    from commcost.workflows.options import from_namespace

    context = from_namespace(RunContext, options)  # the fields both name: what the files do not say
    if options.name_pattern:
        compile_name_pattern(options.name_pattern)  # a bad pattern is reported before any file
    rows = []
    notes: list[str] = []
    for path in options.files:
        if options.import_format == "osu":
            rows.extend(read_osu(path, context, options.name_pattern, options.datatype, notes))
        else:
            rows.extend(read_imb(path, context, options.name_pattern))
    _tell(notes, notify)
    written, skipped = MeasurementStore(options.output).extend(rows)
    return _result(options.output, options.import_format, rows, written, skipped, notes,
                   files=[str(f) for f in options.files])


def import_coltune_folder(options: ColtuneOptions, notify: Notify | None = None) -> dict:
    """Read an ompi-collectives-tuning folder's OSU sweeps per forced algorithm, tell each note to ``notify``,
    then append the rows to ``options.output``; the document ``import coltune --format json`` prints."""
    from commcost.io.coltune_import import read_coltune
    from commcost.io.measurements import MeasurementStore

    notes: list[str] = []
    chosen = [c.strip() for c in options.collectives.split(",") if c.strip()] if options.collectives else None
    rows = read_coltune(options.folder, options.ppn, options.ompi_version, options.host or "", options.mpi or "",
                        chosen, notes)
    _tell(notes, notify)
    written, skipped = MeasurementStore(options.output).extend(rows)
    runs = {(r.collective, r.algorithm, r.nprocs, r.run) for r in rows}
    return _result(options.output, "coltune", rows, written, skipped, notes, folder=str(options.folder),
                   runs=len(runs))


def _tell(notes: list[str], notify: Notify | None) -> None:
    for note in notes if notify is not None else []:
        notify(note)


def _result(output: Path, kind: str, rows, written: int, skipped: int, notes: list[str], **extra) -> dict:
    """What ``import --format json`` prints: the CSV, points appended and already there, what they measure."""
    return {"output": str(output), "format": kind, **extra, "points": len(rows),
            "appended": written, "already_there": skipped,
            "collectives": sorted({r.collective for r in rows}), "notes": notes}
