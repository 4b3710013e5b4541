"""``commcost measure-pattern``: run a sparse kernel's irregular exchange for real, compare with predictions.

Issue 14 item 6, paper 001 section 5. For each level of the pattern
(``--amg-levels``: every level of the matrix's classical AMG hierarchy) and
each receive order (``--order in-order|reversed``: Irecvs posted by
ascending source, or the reverse, paper 001's two queues),
``python -m commcost.launch.pattern_worker`` runs the exchange under mpirun
(Isend/Irecv, as the application would) and times ``--repeat`` runs, the
slowest rank's time of each; the median is the measured cost. One launch
times every level and order not yet measured (a launch costs seconds, a
level milliseconds: 10 AMG levels and orders on 2 ranks, 34 s in ten
launches, take 6 s in one). Every level's result is written as it is
taken (``OUT/<pattern>_L<k>_<order>_<network>.json``) and reused when the command runs again, so a run killed
halfway loses nothing.

The same level is priced under each model of ``--params``: on a one-node
platform whose channel is ``--network`` (every rank on this machine), or on
``--platform`` with ``--ppn`` ranks per node when ``--launcher`` spreads the
ranks over several nodes (the two-node harness in tests/). Under
``maxrate`` the queue search follows the order: none for in-order receives
(each arrival matches the queue's head), the file's ``queue_search`` for
reversed ones. Prints measured and predicted times with the proportional
error mu per level, then mean mu per order and model (paper 000 Table 2
form, as ``measure-kernel``); writes ``results.json`` and a PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from commcost.cli.options import (add_format_option, add_strict_option, add_unit_option, progress_stream,
                                  seconds_budget)
from commcost.cli.registry import command
from commcost.errors import InputError


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


def _placement(args: argparse.Namespace):
    """The platform and mapping predictions use: ``--platform`` and ``--ppn``, or this machine's one node."""
    import numpy as np

    from commcost.cli.measure_kernel_command import local_platform
    from commcost.io.platform_file import load_platform
    from commcost.platform import Mapping

    if args.platform is None:
        platform = local_platform(args.network, args.procs)
        return platform, Mapping.on_nodes(np.zeros(args.procs, dtype=np.int64))
    platform, spec = load_platform(args.platform)
    if args.ppn is None or args.ppn < 1:
        raise InputError("with --platform, expected --ppn N >= 1 (ranks per node of the launch)", where="--ppn")
    try:
        return platform, Mapping.sequential(platform, args.procs, args.ppn)
    except InputError as exc:
        raise exc.located(source=str(args.platform), where="--ppn") from None


def _worker_line(args: argparse.Namespace, mpirun: str | None,
                 jobs: list[tuple[int, str, Path]]) -> tuple[list[str], dict[str, str]]:
    """The launch line of one worker run that times every ``(level, order, result file)`` of ``jobs``."""
    env = dict(os.environ)
    program = [sys.executable, "-m", "commcost.launch.pattern_worker", "--pattern", args.pattern,
               "--matrix", str(args.matrix.resolve()), "--partition", args.partition,
               "--value-bytes", str(args.value_bytes), "--repeat", str(args.repeat)]
    for level, order, result in jobs:
        program += ["--job", str(level), order, str(result.resolve())]
    if args.amg_levels:
        program.append("--amg-levels")
    if args.launcher:
        if args.network == "tcp":
            env["OMPI_MCA_btl"] = "tcp,self"
        return [*shlex.split(args.launcher), *program], env
    from commcost.launch.mpi_launch import local_mpirun_line

    return [*local_mpirun_line(mpirun, args.procs, args.network), *program], env


def predict(schedule, platform, mapping, params, models: list[str], order: str) -> dict[str, float]:
    """Each model's price of one level (maxrate: queue search none for in-order receives)."""
    from commcost.models import MODELS, PlacedSchedule

    placed = PlacedSchedule.of(schedule, platform, mapping)
    out = {}
    for name in models:
        chosen = params.for_model(name)
        if name == "maxrate" and order == "in-order":
            chosen = replace(chosen, queue_search="none")
        try:
            out[name] = MODELS[name](chosen).total_time_s(placed)
        except InputError as exc:
            print(f"commcost: not predicted under {name}: {exc}", file=sys.stderr)
    return out


@command("measure-pattern", "run a sparse kernel's irregular exchange with MPI and compare with predictions "
                            "(paper 001)", _configure)
def _measure_pattern(args: argparse.Namespace) -> int:
    from commcost.launch.mpi_launch import find_mpirun
    from commcost.cli.measure_kernel_command import MAX_LOCAL_RANKS, params_and_models, report_runs
    from commcost.launch.mpi_launch import run_rank_program
    from commcost.kernels.sparse import pattern_levels, read_matrix
    from commcost.report.kernel_validation import KernelRun

    if args.procs < 2:
        raise InputError(f"expected --procs >= 2, got {args.procs}", where="--procs")
    if args.launcher is None and args.procs > MAX_LOCAL_RANKS:
        raise InputError(f"runs on this machine take at most {MAX_LOCAL_RANKS} ranks (a cluster's: --launcher), "
                         f"got {args.procs}", where="--procs")
    if args.repeat < 1:
        raise InputError(f"expected --repeat >= 1, got {args.repeat}", where="--repeat")
    if args.value_bytes < 1:
        raise InputError(f"expected --value-bytes >= 1, got {args.value_bytes}", where="--value-bytes")
    if args.ppn is not None and args.platform is None:
        raise InputError("places ranks on --platform's nodes; expected --platform with it", where="--ppn")
    params, models = params_and_models(args)
    levels = pattern_levels(read_matrix(args.matrix), args.pattern, args.procs, args.partition, args.amg_levels,
                            args.value_bytes)
    platform, mapping = _placement(args)
    mpirun = None if args.launcher else find_mpirun(args.mpirun)
    args.out.mkdir(parents=True, exist_ok=True)
    with progress_stream(args):  # with --format json the lines go to standard error
        jobs = []  # (level, order, result file) of every run, in the order of the report
        for level in levels:
            if level.schedule.ntransmissions == 0:
                print(f"  level {level.index}: no messages on {args.procs} ranks; skipped", flush=True)
                continue
            for order in args.order or ["in-order", "reversed"]:
                jobs.append((level, order, args.out / f"{args.pattern}_L{level.index}_{order}_{args.network}.json"))
        todo = [(level.index, order, result) for level, order, result in jobs if not result.exists()]
        if todo:  # one launch times every level not yet measured; each is written as it is done
            line, env = _worker_line(args, mpirun, todo)
            run_rank_program(line, todo[-1][2], args.timeout * len(todo),
                             f"the MPI run of level{'s' if len(todo) > 1 else ''} "
                             f"{', '.join(sorted({str(level) for level, _, _ in todo}, key=int))}", env,
                             where="--launcher" if args.launcher else "mpirun")
        measured_now = {result for _, _, result in todo}
        runs = []
        for level, order, result in jobs:
            measured = json.loads(result.read_text())
            run = KernelRun(f"{args.pattern}-{order}", args.network, f"level {level.index}", args.procs, level.rows,
                            measured["time_s"], predict(level.schedule, platform, mapping, params, models, order))
            runs.append(run)
            how = "measured" if result in measured_now else "reused"
            print(f"  {how} {args.pattern} level {level.index} ({level.rows} rows, "
                  f"{level.schedule.ntransmissions} messages), receives {order}: {len(measured['runs_s'])} runs",
                  flush=True)
    if not runs:
        raise InputError(f"no level of the pattern sends a message on {args.procs} ranks", where="--procs")
    return report_runs(args, runs)
