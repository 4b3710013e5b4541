"""``commcost tune``: calibrate -> fit -> select -> write rules files, in one command, with a short report.

The steps are :func:`commcost.workflows.tune.tune`'s (its module says what
each one does); this module parses the options, runs the calibrate and
verify commands tune starts, and writes the HTML report.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path

from commcost.cli.options import (add_format_option, add_html_option, add_unit_option, progress_stream,
    seconds_budget, write_html)
from commcost.cli.registry import command, run_command
from commcost.collectives.barrier import SKEW_CHOICES
from commcost.workflows.options import from_namespace
from commcost.workflows.tune import TuneOptions, TuneResult, tune
from commcost.workflows.tune_options import CONVERGED_FLOOR, MU_BOUND


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--procs", type=int, default=2, help="ranks to calibrate with (default 2)")
    p.add_argument("--out", type=Path, default=Path("run"), help="output folder (default run/)")
    p.add_argument("--budget", type=seconds_budget, default=180.0, help="seconds for the whole command (default 180)")
    p.add_argument("--launcher", help="launch command for a cluster, e.g. 'srun -N 2 --ntasks-per-node 1'")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--collectives", default="bcast", help="comma list of collectives to tune (default bcast)")
    p.add_argument("--ppn", type=int, default=os.cpu_count() or 1,
                   help="ranks per node of the machine the rules are for (default: this machine's cores)")
    p.add_argument("--select-procs", default="2..1024", help="communicator sizes of the rules (default 2..1024)")
    p.add_argument("--sizes", default="1..4MiB", help="message sizes of the rules (default 1..4MiB)")
    p.add_argument("--segsizes", default="0,8KiB,32KiB,128KiB", help="segment sizes to try (decision variable)")
    p.add_argument("--han-segsizes", default="16KiB,256KiB",
                   help="coll/han segment sizes to try besides its 64KiB (one per collective is deployed, as "
                        "coll_han_<coll>_segsize; '' keeps 64KiB)")
    p.add_argument("--han-modules", choices=("all", "adapt", "default"), default="default",
                   help="also try han's other components per level for bcast, reduce and allreduce "
                        "(coll_han_<coll>_up_module/low_module): adapt between the nodes, all = adapt and sm "
                        "inside them; default: libnbc and tuned only (coll/sm measured about 0.5x where priced "
                        "0.9x to 1x on a two-node harness with 2 ranks per core)")
    p.add_argument("--calibration-rounds", type=int, default=1,
                   help="calibrate --rounds: launch every calibration run this many times (default 1)")
    p.add_argument("--mpich-base", type=Path, metavar="FILE",
                   help="complete MPICH selection file to merge MPICH's picks into (writes OUT/mpich-coll.json)")
    p.add_argument("--channel-launcher", action="append", default=[], metavar="CHANNEL=LINE",
                   help="launch command for one channel's calibration runs (repeatable), as in calibrate: "
                        "shm='mpirun -np 2 --host a:2' tcp='mpirun -np 2 --host a,b'")
    p.add_argument("--nodes", type=int,
                   help="inside a Slurm allocation: build the launch lines with srun (shm runs on one node, the "
                        "network runs across two with ranks alternating, the check on NODES x --ppn ranks)")
    p.add_argument("--verify-launcher", help="launch command of the with/without-rules timing (default: "
                                             "--launcher, else the network channel's line, else the embedded mpirun)")
    p.add_argument("--verify-procs", help="rank counts of the measured check, comma-separated (default: --procs)")
    p.add_argument("--no-verify", action="store_true", help="write the rules without timing them against the default")
    p.add_argument("--fresh", action="store_true", help="measure again what OUT/measurements.csv already holds")
    p.add_argument("--min-gain", type=_fraction, default=0.10,
                   help="keep Open MPI's default where the best pick is predicted less than this much faster "
                        "(default 10%%; 0 writes every pick)")
    add_format_option(p, "OUT/report.json (converged share, margins, regions, measured gains) at the end")
    add_unit_option(p)
    add_html_option(p)
    p.add_argument("--strict", action="store_true",
                   help=f"write no rules (exit 2) when under {CONVERGED_FLOOR:.0%}% of the measured points converged "
                        f"or the fit's mean proportional error exceeds {MU_BOUND}")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="print calibrate's plan and launch lines, then stop")
    p.add_argument("--from-measurements", type=Path, metavar="CSV",
                   help="skip calibrating: fit Hockney to the measured forced collective algorithms of CSV (OSU "
                        "sweeps, commcost import coltune) and go straight to select and the files; needs "
                        "--platform; no measured check unless --verify-launcher")
    p.add_argument("--platform", type=Path, help="--from-measurements: the platform the measurements ran on (.toml)")
    p.add_argument("--barrier-skew", choices=SKEW_CHOICES,
                   help="--from-measurements: fit each rank's time from when the barrier before the timed call let "
                        "it go (commcost fit --barrier-skew)")


def _fraction(text: str) -> float:
    """``10%`` or ``0.1`` as 0.1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 10% or 0.1, got {text!r}") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"expected a share from 0% up, got {text!r}")
    return value


@command("tune", "calibrate this MPI, select the best algorithms by model and write rules files for it",
         _configure)
def _tune(args: argparse.Namespace) -> int:
    if args.format != "json" or args.dry_run:  # a dry run's JSON is calibrate's plan, printed by calibrate
        return _tune_and_page(args)
    with progress_stream(args):  # progress and the text report to stderr, the JSON alone on stdout
        code = _tune_and_page(args)
    report = args.out / "report.json"
    if report.exists():
        print(report.read_text(), end="")
    return code


def _run_step(argv: list[str]) -> int:
    """One of the commands tune runs (calibrate, verify), as ``commcost ARGV`` would."""
    for name in ("calibrate", "verify"):  # the commands this one runs, registered
        importlib.import_module(f"commcost.cli.{name}_command")
    return run_command(argv)


def _tune_and_page(args: argparse.Namespace) -> int:
    """The workflow, then ``--html`` once it has written its report."""
    result = tune(from_namespace(TuneOptions, args), _run_step)
    if result.report is not None:
        _html(args, result)
    return result.code


def _html(args: argparse.Namespace, result: TuneResult) -> None:
    """``--html``: the report as one page (:func:`commcost.report.tune_page.tune_page`)."""
    if not args.html:
        return
    report, params, measurements, conf = result.report, result.params, result.measurements, result.conf
    from commcost.io.han_rules import env_lines
    from commcost.io.measurements import fit_times, measurement_columns, read_measurements
    from commcost.report.fit_figures import hockney_residuals
    from commcost.report.provenance import run_provenance
    from commcost.report.tune_page import tune_page

    inputs = {"parameters": result.params_path, "platform": result.platform_path,
              "measurements": measurements if measurements is not None else args.from_measurements}
    deploy = {"files": [str(p) for p in result.written], "mca_params": conf, "env": env_lines(conf) if conf else []}
    hockney = getattr(params.sections.get("hockney"), "channels", None)
    residuals = []
    if measurements is not None and measurements.is_file() and hockney:
        residuals = hockney_residuals(fit_times(measurement_columns(read_measurements(measurements))), hockney)
    page = tune_page(report, result.views, params, provenance=run_provenance(getattr(args, "argv", None), inputs),
                     residuals=residuals, warnings=result.warnings, deploy=deploy)
    write_html(args, page)
