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
from commcost.workflows.import_measurements import (ColtuneOptions, ImportOptions, import_benchmarks,
                                                    import_coltune_folder)
from commcost.workflows.options import from_namespace


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
    if args.import_format == "coltune":
        return _import_coltune(args)
    if args.channel is not None:
        channel_name(args.channel)
    result = import_benchmarks(from_namespace(ImportOptions, args), _note)
    if wants_json(args):
        print_json(result)
        return 0
    print(f"{result['appended']} points from {len(args.files)} file(s) appended to {args.output}"
          + (f"; {result['already_there']} already there, skipped" if result["already_there"] else ""))
    return 0


def _import_coltune(args: argparse.Namespace) -> int:
    result = import_coltune_folder(from_namespace(ColtuneOptions, args), _note)
    if wants_json(args):
        print_json(result)
        return 0
    print(f"{result['appended']} points from {result['runs']} runs ({', '.join(result['collectives'])}) appended to "
          f"{args.output}" + (f"; {result['already_there']} already there, skipped" if result["already_there"] else ""))
    return 0


def _note(note: str) -> None:
    """A note on rows skipped on purpose, on standard error."""
    print(f"commcost: note: {note}", file=sys.stderr)
