"""``commcost measure-kernel``: run a kernel's communication for real, compare with predictions (paper 000 sec. 5).

What it runs, prices and writes: :mod:`commcost.workflows.measure`; this module reads the options and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commcost.cli.options import (add_format_option, add_strict_option, add_unit_option, print_json, progress_stream,
    seconds_budget, wants_json)
from commcost.cli.registry import command
from commcost.workflows.measure import NETWORKS, MeasureKernelOptions, measure_kernel, write_results
from commcost.workflows.options import from_namespace


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", choices=("summa", "wave2d"))
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--partition", type=Path, nargs="+", help="2D distribution file(s), one configuration each")
    what.add_argument("--procs", help="P or A..B: configurations of P ranks with speeds 1..P (this machine)")
    p.add_argument("--n", type=int, default=32, help="with --procs: matrix side N in blocks (default 32)")
    p.add_argument("--kb", type=int, default=32, help="with --procs: block side b (default 32)")
    p.add_argument("--steps", type=int, default=20, help="Wave2D time steps T (default 20)")
    p.add_argument("--params", required=True, type=Path, help="model parameters (.toml), e.g. from calibrate")
    add_strict_option(p)
    p.add_argument("--model", action="append", help="model to predict with (repeatable; default: all in --params)")
    p.add_argument("--network", action="append", choices=NETWORKS, help="transport(s) to run on (default shm)")
    p.add_argument("--out", type=Path, default=Path("kernel-measurements"), help="output folder")
    p.add_argument("--png", type=Path, help="plot file (default OUT/measured_vs_predicted.png)")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--timeout", type=seconds_budget, default=300.0, help="seconds per MPI run (default 300)")
    add_format_option(p, "the measured and predicted times of every run (results.json)")
    add_unit_option(p)


@command("measure-kernel", "run SUMMA or Wave2D's communication with MPI and compare with predictions (paper 000)",
         _configure)
def _measure_kernel(args: argparse.Namespace) -> int:
    with progress_stream(args):  # with --format json the lines go to standard error
        runs = measure_kernel(from_namespace(MeasureKernelOptions, args), progress=sys.stdout)
    return report_runs(args, runs)


def report_runs(args: argparse.Namespace, runs) -> int:
    """Print the measured-vs-predicted table, write ``OUT/results.json`` and the PNG (``--png``)."""
    from commcost.report.kernel_validation import render_validation

    doc = write_results(runs, args.out, args.png)
    if wants_json(args):
        print_json(doc)
        return 0
    print(render_validation(runs, args.unit))
    print(f"wrote {doc['results_file']} and {doc['png']}")
    return 0
