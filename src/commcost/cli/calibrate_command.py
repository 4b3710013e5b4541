"""``commcost calibrate``: measure the local machine's MPI, then fit Hockney, tau-Lop and paper 004's model.

The command line of :func:`commcost.workflows.calibrate.calibrate` (its
docstring says what is run, how the budget is shared, resumed and fitted):
the options become a :class:`~commcost.workflows.calibrate.CalibrateOptions`,
and what it did is printed here: the dry run's plan with its launch lines,
or the fits' summary (``OUT/params.toml``), the runs skipped or failed on
standard error; with ``--format json`` the same document as JSON.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commcost.calibration.plan import BENCHMARKS, DEFAULT_BENCHMARKS
from commcost.cli.options import (add_format_option, add_unit_option, print_json, progress_stream, seconds_budget,
                                  wants_json)
from commcost.cli.registry import command
from commcost.workflows.calibrate import CalibrateOptions, CalibrateResult, calibrate
from commcost.workflows.calibrate_plan import FIT_S
from commcost.workflows.options import from_namespace


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--procs", type=int, default=2, help="ranks to start (the ping-pong uses ranks 0 and 1)")
    p.add_argument("--out", required=True, type=Path, help="output folder: measurements.csv, params.toml")
    p.add_argument("--budget", type=seconds_budget, default=120.0, help="seconds for all measurements (default 120)")
    p.add_argument("--launcher", help="launch command instead of mpirun, e.g. 'mpirun -np 2 --host a,b' "
                                      "or 'srun -N 2 --ntasks-per-node 1' (the tcp run adds OMPI_MCA_btl)")
    p.add_argument("--channel-launcher", action="append", default=[], metavar="CHANNEL=LINE",
                   help="launch command for one channel's runs, overriding --launcher (repeatable): e.g. "
                        "shm='mpirun -np 2 --host a:2' tcp='mpirun -np 2 --host a,b' puts the shm ranks on one "
                        "node and the tcp ranks on two (docs/two-nodes.md)")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--benchmarks", default=",".join(DEFAULT_BENCHMARKS),
                   help=f"comma-separated among {', '.join(BENCHMARKS)} or all (default: "
                        f"{','.join(DEFAULT_BENCHMARKS)})")
    p.add_argument("--sizes", help="ping-pong and Ring_tau message sizes, comma-separated (8, 4KiB, 1MiB; "
                                    "default: powers of 4 from 1 B to 4 MiB, fewer if the budget is small)")
    p.add_argument("--rounds", type=int, default=1,
                   help="launch every run this many times, round after round, and fit all rounds' rows: one "
                        "launch's placement (cores, caches) then weighs 1/N (default 1)")
    p.add_argument("--fresh", action="store_true", help="measure every point again (the earlier "
                                                          "measurements.csv is kept under a dated name)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no line per point")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (runs, sizes, points, each run's share of the budget) and the exact "
                        "launch lines, then stop: nothing is run or written")
    add_format_option(p, "the files written, the fits' quality (meta), unmeasured channels; or the dry run's plan")
    add_unit_option(p)


@command("calibrate", "measure this machine's MPI (ping-pong, Ring_tau, ... on shm and tcp) and fit models",
         _configure)
def _calibrate(args: argparse.Namespace) -> int:
    with progress_stream(args):  # with --format json the lines go to standard error
        result = calibrate(from_namespace(CalibrateOptions, args), progress=sys.stdout)
        code = _print_dry_run(result) if result.dry_run else _print_summary(result)
    if wants_json(args):
        print_json({"exit_code": code, **result.document})
    return code


def _print_dry_run(result: CalibrateResult) -> int:
    """``--dry-run``: the plan, run by run, with the exact command and the Open MPI settings it passes in the
    environment, and each run's share of the budget if every run before used all of its."""
    doc = result.document
    print(f"dry run: {result.runs} runs, {doc['points_to_measure']} points to measure ({doc['already_measured']} "
          f"already in {result.measurements}), sizes {', '.join(map(str, result.sizes))} B; budget "
          f"{result.budget_s:g} s ({FIT_S:g} s kept for the fits)")
    for run in result.plan:
        if not run.points:
            print(f"  run {run.index}: {run.name}: every point already measured")
            continue
        print(f"  run {run.index}: {run.name}: {run.points} points, about {run.seconds:.1f} s")
        print(f"    {(run.environment + ' ') if run.environment else ''}{run.command}")
    return 0


def _print_summary(result: CalibrateResult) -> int:
    """What was measured and fitted, a line per fit; the runs skipped or failed on standard error; the exit
    code (2 where a run failed or a channel was left unmeasured)."""
    from commcost.calibration.disturbed import disturbed_warning

    sections, quality, notes = result.fits.sections, result.fits.quality, result.fits.notes
    print(f"measured {result.points} of {result.planned} points ({result.converged} converged) in "
          f"{result.elapsed_s:.1f} s; {', '.join(sorted(sections)) or 'nothing'} fitted -> "
          f"{result.out / 'params.toml'}")
    _print_fits(result.fits.fits, sections, quality)
    for name, note in notes.items():
        if isinstance(note, str):
            print(f"  {name}: not fitted: {note}")
    if "network_note" in result.meta:
        print(f"  note: {result.meta['network_note']}")
    if result.disturbed:
        print(f"  warning: {disturbed_warning(result.disturbed)}", flush=True)
    for name in result.skipped:
        print(f"  run {name}: {'' if 'stopped' in name else 'not started, '}the budget was spent", file=sys.stderr)
    if result.failed:
        print(f"commcost: some MPI runs failed: {', '.join(result.failed)}", file=sys.stderr)
    elif result.unmeasured:
        print(f"commcost: the budget ({result.budget_s:g} s) left the {' and '.join(result.unmeasured)} channel "
              "unmeasured; give a larger --budget", file=sys.stderr)
    return result.exit_code


def _print_fits(fits: dict, sections: dict, quality: dict) -> None:
    """A line per fit: Hockney and tau-Lop per channel, reduction tables, per-algorithm fits, queue search."""
    for f in fits.get("hockney", []):
        values = ", ".join(f"{k} = {v:.4g}" for k, v in f.params.items() if isinstance(v, float))
        segs = f.report.get("segments", {}).get("segments", [])
        split = f"  {len(segs)} segments, break {f.report['segments']['breaks']}" if len(segs) > 1 else ""
        print(f"  hockney {f.channel:<4} {f.npoints:>3} points  mu mean {f.report.get('mu_mean', float('nan')):.3f}"
              f"  {values}{split}")
    for f in fits.get("taulop", []):
        print(f"  taulop  {f.channel:<4} {f.npoints:>3} points  mu mean {f.report['mu_mean']:.3f}")
    for op, table in sections.get("reduction", {}).items():
        moved = len(quality["reduction"][op].get("isotonic_changed", []))
        print(f"  reduction {op:<11} gamma(m) at {len(table['m'])} sizes, up to {table['time_s'][-1]:.3g} s at "
              f"{table['m'][-1]} B" + (f"  ({moved} points made non-decreasing)" if moved else ""))
    for coll, fitted in sections.get("algorithm_fit", {}).items():
        for name, fit in fitted.items():
            q = quality["algorithm_fit"][coll][name]
            print(f"  {coll:<9} {name:<22} a = {fit['a_s']:.3g} s, b = {fit['b']:.3g}  mu mean {q['mu_mean']:.3f}"
                  f" (unscaled {fit['model']} {q['unscaled_mu_mean']:.3f})")
    for channel, q in quality.get("queue_search", {}).items():
        lo, hi = q["gamma_ci95"]
        print(f"  queue search (paper 001 eq. 3) {channel:<4} gamma = {q['gamma_s']:.3g} s "
              f"(95% CI {lo:.3g} .. {hi:.3g}; paper 001: {q['paper001_gamma_s']:.2g} s)")
