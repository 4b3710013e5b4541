"""``commcost import osu|imb FILES... -o measurements.csv`` (or ``import coltune FOLDER``): benchmark outputs
into the measurements store.

Every file is read and checked before anything is written, so a bad file
leaves the store as it was (one line on stderr, exit 2). Rows skipped on
purpose (an OSU row whose validation failed) are told on stderr as notes. Points already in
the store (same key) are skipped, so importing the same files twice adds
nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commcost.cli.options import add_format_option, channel_name, print_json, wants_json
from commcost.cli.registry import command


def _common(p: argparse.ArgumentParser, with_nprocs: bool) -> None:
    p.add_argument("files", nargs="+", type=Path, metavar="FILES", help="benchmark output files")
    p.add_argument("-o", "--output", required=True, type=Path, help="measurements CSV to append to")
    p.add_argument("--collective", help="collective the files measure (checked against the file)")
    p.add_argument("--algorithm", help="algorithm the MPI used (e.g. an Open MPI id such as 7, or a name)")
    if with_nprocs:
        p.add_argument("--nprocs", type=int, help="number of ranks (default 2 for point-to-point tests)")
        p.add_argument("--datatype", metavar="MPI_TYPE",
                       help="import only this '# Datatype:' table, e.g. MPI_INT (needed for outputs of -T all)")
    p.add_argument("--ppn", type=int, help="ranks per node")
    p.add_argument("--nnodes", type=int, help="nodes (default: ceil(nprocs / ppn) when --ppn is given)")
    p.add_argument("--channel", help="channel measured, e.g. shm or net (default for 2 ranks: from the nodes)")
    p.add_argument("--mpi", help="MPI library and version, e.g. 'Open MPI 5.0.3'")
    p.add_argument("--host", help="machine or cluster name")
    p.add_argument("--run", type=int, help="run index, when the same points were measured in several runs")
    p.add_argument("--name-pattern", metavar="PATTERN",
                   help="take fields from file names, e.g. '{algorithm}_{nprocs}ranks_run{run}.out'; fields: "
                        "{algorithm} {collective} {channel} {mpi} {host} {nprocs} {ppn} {nnodes} {run}; * = anything")
    add_format_option(p)


def _configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="import_format", metavar="FORMAT", required=True, parser_class=type(p))
    _common(sub.add_parser("osu", help="OSU micro-benchmark outputs (osu_latency, osu_bw, osu_bcast, ...)"), True)
    _common(sub.add_parser("imb", help="IMB-MPI1 outputs (PingPong, Bcast, Allreduce, ...)"), False)
    c = sub.add_parser("coltune", help="an ompi-collectives-tuning output folder: OSU sweeps per forced "
                                       "coll/tuned algorithm (<collective>/<alg>_<P>ranks_run<k>.out)")
    c.add_argument("folder", type=Path, help="the folder (or its output/ sub-folder)")
    c.add_argument("-o", "--output", required=True, type=Path, help="measurements CSV to append to")
    c.add_argument("--ppn", type=int, help="ranks per node (default: from the job scripts' --map-by ppr:N:node)")
    c.add_argument("--ompi-version", default="5.0", help="Open MPI version whose algorithm ids the runs used "
                                                         "(default 5.0)")
    c.add_argument("--collectives", help="comma list of the collectives to import (default all)")
    c.add_argument("--mpi", help="MPI library and version, e.g. 'Open MPI 5.0.3'")
    c.add_argument("--host", help="machine or cluster name")
    add_format_option(c)


@command("import", "append OSU or IMB-MPI1 benchmark outputs to a measurements CSV", _configure)
def _import(args: argparse.Namespace) -> int:
    from commcost.io.imb_import import read_imb
    from commcost.io.measurements import MeasurementStore
    from commcost.io.osu_import import RunContext, compile_name_pattern, read_osu

    if args.import_format == "coltune":
        return _import_coltune(args)
    if args.channel is not None:
        channel_name(args.channel)
    context = RunContext(collective=args.collective, algorithm=args.algorithm,
                         nprocs=getattr(args, "nprocs", None), ppn=args.ppn, nnodes=args.nnodes,
                         channel=args.channel, mpi=args.mpi, host=args.host, run=args.run)
    if args.name_pattern:
        compile_name_pattern(args.name_pattern)  # a bad pattern is reported before any file
    rows = []
    notes: list[str] = []
    for path in args.files:
        if args.import_format == "osu":
            rows.extend(read_osu(path, context, args.name_pattern, args.datatype, notes))
        else:
            rows.extend(read_imb(path, context, args.name_pattern))
    for note in notes:
        print(f"commcost: note: {note}", file=sys.stderr)
    store = MeasurementStore(args.output)
    written, skipped = store.extend(rows)
    if wants_json(args):
        print_json(_result(args, rows, written, skipped, notes, files=[str(f) for f in args.files]))
        return 0
    print(f"{written} points from {len(args.files)} file(s) appended to {args.output}"
          + (f"; {skipped} already there, skipped" if skipped else ""))
    return 0


def _import_coltune(args: argparse.Namespace) -> int:
    from commcost.io.coltune_import import read_coltune
    from commcost.io.measurements import MeasurementStore

    notes: list[str] = []
    chosen = [c.strip() for c in args.collectives.split(",") if c.strip()] if args.collectives else None
    rows = read_coltune(args.folder, args.ppn, args.ompi_version, args.host or "", args.mpi or "", chosen, notes)
    for note in notes:
        print(f"commcost: note: {note}", file=sys.stderr)
    written, skipped = MeasurementStore(args.output).extend(rows)
    runs = {(r.collective, r.algorithm, r.nprocs, r.run) for r in rows}
    if wants_json(args):
        print_json(_result(args, rows, written, skipped, notes, folder=str(args.folder), runs=len(runs)))
        return 0
    print(f"{written} points from {len(runs)} runs ({', '.join(sorted({r.collective for r in rows}))}) appended to "
          f"{args.output}" + (f"; {skipped} already there, skipped" if skipped else ""))
    return 0


def _result(args: argparse.Namespace, rows, written: int, skipped: int, notes: list[str], **extra) -> dict:
    """What ``import --format json`` prints: the CSV, points appended and already there, what they measure."""
    return {"output": str(args.output), "format": args.import_format, **extra, "points": len(rows),
            "appended": written, "already_there": skipped,
            "collectives": sorted({r.collective for r in rows}), "notes": notes}
