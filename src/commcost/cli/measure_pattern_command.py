"""``commcost measure-pattern``: run a sparse kernel's irregular exchange for real, compare with predictions.

What it runs, prices and writes: :mod:`commcost.workflows.measure_pattern`; this module reads the options and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commcost.cli.measure_kernel_command import report_runs
from commcost.cli.options import (add_format_option, add_strict_option, add_unit_option, progress_stream,
                                  seconds_budget)
from commcost.cli.registry import command
from commcost.workflows.measure_pattern import MeasurePatternOptions, measure_pattern
from commcost.workflows.options import from_namespace


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pattern", required=True, choices=("spmv", "spgemm"))
    p.add_argument("--matrix", required=True, type=Path, help="Matrix Market file (.mtx)")
    p.add_argument("--amg-levels", action="store_true", help="every level of the matrix's classical AMG hierarchy")
    p.add_argument("--procs", required=True, type=int, help="ranks P of the run (2-4 on a laptop)")
    p.add_argument("--partition", default="contiguous", choices=("contiguous", "metis"))
    p.add_argument("--value-bytes", type=int, default=8)
    p.add_argument("--order", action="append", choices=("in-order", "reversed"),
                   help="receive order(s) to run (default both)")
    p.add_argument("--repeat", type=int, default=50, help="timed runs per level and order (default 50)")
    p.add_argument("--params", required=True, type=Path, help="model parameters (.toml)")
    add_strict_option(p)
    p.add_argument("--model", action="append", help="model to predict with (repeatable; default: all in --params)")
    p.add_argument("--network", default="shm", choices=("shm", "tcp"),
                   help="transport: shm (Open MPI's default on one node) or tcp (btl tcp,self)")
    p.add_argument("--platform", type=Path, help="platform the launcher's ranks run on (default: this machine)")
    p.add_argument("--ppn", type=int, help="with --platform: ranks per node, filled in order")
    p.add_argument("--launcher", help="launch line for the P ranks instead of the embedded mpirun, e.g. the "
                                      "two-node harness' mpirun line")
    p.add_argument("--out", type=Path, default=Path("pattern-measurements"), help="output folder")
    p.add_argument("--png", type=Path, help="plot file (default OUT/measured_vs_predicted.png)")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--timeout", type=seconds_budget, default=300.0, help="seconds per level and order measured (default 300)")
    add_format_option(p, "the measured and predicted times of every run (results.json)")
    add_unit_option(p)


@command("measure-pattern", "run a sparse kernel's irregular exchange with MPI and compare with predictions "
                            "(paper 001)", _configure)
def _measure_pattern(args: argparse.Namespace) -> int:
    with progress_stream(args):  # with --format json the lines go to standard error
        runs = measure_pattern(from_namespace(MeasurePatternOptions, args), progress=sys.stdout)
    return report_runs(args, runs)
