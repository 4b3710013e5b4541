"""Run a sparse kernel's irregular exchange for real and price it under each model (``commcost measure-pattern``).

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
reversed ones.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from commcost.errors import InputError


@dataclass
class MeasurePatternOptions:
    """What ``commcost measure-pattern`` runs and prices (its options, by their argparse names)."""

    pattern: str = "spmv"
    matrix: Path | None = None
    amg_levels: bool = False
    procs: int = 2
    partition: str = "contiguous"
    value_bytes: int = 8
    order: list[str] | None = None
    repeat: int = 50
    params: Path | None = None
    strict: bool = False
    model: list[str] | None = None
    network: str = "shm"
    platform: Path | None = None
    ppn: int | None = None
    launcher: str | None = None
    out: Path = field(default_factory=lambda: Path("pattern-measurements"))
    png: Path | None = None
    mpirun: str | None = None
    timeout: float = 300.0


def _placement(options: MeasurePatternOptions):
    """The platform and mapping predictions use: ``--platform`` and ``--ppn``, or this machine's one node."""
    import numpy as np

    from commcost.io.platform_file import load_platform
    from commcost.platform import Mapping
    from commcost.workflows.measure import local_platform

    if options.platform is None:
        platform = local_platform(options.network, options.procs)
        return platform, Mapping.on_nodes(np.zeros(options.procs, dtype=np.int64))
    platform, spec = load_platform(options.platform)
    if options.ppn is None or options.ppn < 1:
        raise InputError("with --platform, expected --ppn N >= 1 (ranks per node of the launch)", where="--ppn")
    try:
        return platform, Mapping.sequential(platform, options.procs, options.ppn)
    except InputError as exc:
        raise exc.located(source=str(options.platform), where="--ppn") from None


def _worker_line(options: MeasurePatternOptions, mpirun: str | None,
                 jobs: list[tuple[int, str, Path]]) -> tuple[list[str], dict[str, str]]:
    """The launch line of one worker run that times every ``(level, order, result file)`` of ``jobs``."""
    env = dict(os.environ)
    program = [sys.executable, "-m", "commcost.launch.pattern_worker", "--pattern", options.pattern,
               "--matrix", str(options.matrix.resolve()), "--partition", options.partition,
               "--value-bytes", str(options.value_bytes), "--repeat", str(options.repeat)]
    for level, order, result in jobs:
        program += ["--job", str(level), order, str(result.resolve())]
    if options.amg_levels:
        program.append("--amg-levels")
    if options.launcher:
        if options.network == "tcp":
            env["OMPI_MCA_btl"] = "tcp,self"
        return [*shlex.split(options.launcher), *program], env
    from commcost.launch.mpi_launch import local_mpirun_line

    return [*local_mpirun_line(mpirun, options.procs, options.network), *program], env


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


def _check(options: MeasurePatternOptions) -> None:
    """The options' errors that need no file read, in the order the command reports them."""
    from commcost.workflows.measure import MAX_LOCAL_RANKS

    if options.procs < 2:
        raise InputError(f"expected --procs >= 2, got {options.procs}", where="--procs")
    if options.launcher is None and options.procs > MAX_LOCAL_RANKS:
        raise InputError(f"runs on this machine take at most {MAX_LOCAL_RANKS} ranks (a cluster's: --launcher), "
                         f"got {options.procs}", where="--procs")
    if options.repeat < 1:
        raise InputError(f"expected --repeat >= 1, got {options.repeat}", where="--repeat")
    if options.value_bytes < 1:
        raise InputError(f"expected --value-bytes >= 1, got {options.value_bytes}", where="--value-bytes")
    if options.ppn is not None and options.platform is None:
        raise InputError("places ranks on --platform's nodes; expected --platform with it", where="--ppn")


def measure_pattern(options: MeasurePatternOptions, progress: TextIO | None = None) -> list:
    """Every level and receive order measured (or reused) and priced under every model: one
    :class:`~commcost.report.kernel_validation.KernelRun` each, a line per level on ``progress``."""
    from commcost.kernels.sparse import pattern_levels, read_matrix
    from commcost.launch.mpi_launch import find_mpirun, run_rank_program
    from commcost.report.kernel_validation import KernelRun
    from commcost.workflows.measure import params_and_models

    def say(line: str) -> None:
        if progress is not None:
            print(line, file=progress, flush=True)

    _check(options)
    params, models = params_and_models(options.params, options.model, options.strict)
    levels = pattern_levels(read_matrix(options.matrix), options.pattern, options.procs, options.partition,
                            options.amg_levels, options.value_bytes)
    platform, mapping = _placement(options)
    mpirun = None if options.launcher else find_mpirun(options.mpirun)
    options.out.mkdir(parents=True, exist_ok=True)
    jobs = []  # (level, order, result file) of every run, in the order of the report
    for level in levels:
        if level.schedule.ntransmissions == 0:
            say(f"  level {level.index}: no messages on {options.procs} ranks; skipped")
            continue
        for order in options.order or ["in-order", "reversed"]:
            jobs.append((level, order,
                         options.out / f"{options.pattern}_L{level.index}_{order}_{options.network}.json"))
    todo = [(level.index, order, result) for level, order, result in jobs if not result.exists()]
    if todo:  # one launch times every level not yet measured; each is written as it is done
        line, env = _worker_line(options, mpirun, todo)
        run_rank_program(line, todo[-1][2], options.timeout * len(todo),
                         f"the MPI run of level{'s' if len(todo) > 1 else ''} "
                         f"{', '.join(sorted({str(level) for level, _, _ in todo}, key=int))}", env,
                         where="--launcher" if options.launcher else "mpirun")
    measured_now = {result for _, _, result in todo}
    runs = []
    for level, order, result in jobs:
        measured = json.loads(result.read_text())
        run = KernelRun(f"{options.pattern}-{order}", options.network, f"level {level.index}", options.procs,
                        level.rows, measured["time_s"],
                        predict(level.schedule, platform, mapping, params, models, order))
        runs.append(run)
        how = "measured" if result in measured_now else "reused"
        say(f"  {how} {options.pattern} level {level.index} ({level.rows} rows, "
            f"{level.schedule.ntransmissions} messages), receives {order}: {len(measured['runs_s'])} runs")
    if not runs:
        raise InputError(f"no level of the pattern sends a message on {options.procs} ranks", where="--procs")
    return runs
