"""``commcost measure-kernel``: run a kernel's communication for real, compare with predictions (paper 000 sec. 5).

For each configuration (a partition file, or P ranks of speeds 1..P on an
N x N block matrix), ``python -m commcost.launch.kernel_worker`` runs under
mpirun on this machine and times every iteration as Algorithm 1 does
(barrier, time, max over ranks, sum). The same kernel is priced under each
model of ``--params`` on a one-node platform whose channel is ``--network``
(shm: Open MPI's default transport; tcp: ``--mca btl tcp,self``), since
every rank of the run shares this node. Prints each configuration's
measured and predicted costs with the proportional error mu, then mean mu
in the form of paper 000 Table 2; writes ``results.json`` and a PNG.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.launch.mpi_launch import local_mpirun_line, run_rank_program
from commcost.cli.options import (add_format_option, add_strict_option, add_unit_option, print_json, progress_stream,
    seconds_budget, wants_json)
from commcost.workflows.pricing import strictness
from commcost.cli.registry import command
from commcost.errors import InputError

NETWORKS = ("shm", "tcp")
TRANSFERS = {"shm": ("shm", "shm"), "tcp": ("shm", "tcp", "shm")}  # DESIGN.md / paper 000 eq. 1-2


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


MAX_LOCAL_RANKS = 1024  # --procs runs on this machine: more ranks than this is a typo, not a laptop's run


def _proc_range(text: str) -> list[int]:
    low, _, high = text.partition("..")
    try:
        a, b = int(low), int(high or low)
    except ValueError:
        a = b = 0
    if not 2 <= a <= b:
        raise InputError(f"expected P or A..B with 2 <= A <= B, got {text!r}", where="--procs")
    if b > MAX_LOCAL_RANKS:
        raise InputError(f"runs on this machine take at most {MAX_LOCAL_RANKS} ranks, got {text!r}", where="--procs")
    return list(range(a, b + 1))


def configurations(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(label, partition file) per configuration; --procs writes its partitions into --out."""
    from commcost.io.partition_file import write_partition
    from commcost.partition import column_partition

    if args.partition:
        return [(path.stem, path) for path in args.partition]
    out = []
    procs = _proc_range(args.procs)
    if args.n < 1 or procs[-1] > args.n * args.n:
        raise InputError(f"N = {args.n} blocks per side holds at most {max(args.n, 0) ** 2} processes of one block "
                         f"each; --procs asks for {procs[-1]}", where="--n")
    for p in procs:
        path = args.out / f"partition_p{p}_n{args.n}.txt"
        try:
            part = column_partition(list(range(1, p + 1)), args.n, ["localhost"] * p, args.kb)
        except InputError as exc:
            raise exc.located(where="--n") from None
        write_partition(part, path)
        out.append((f"P={p} N={args.n}", path))
    return out


def local_platform(network: str, cores: int):
    """One node, every rank on it, joined by the ``network`` channel."""
    from commcost.platform import Channel, Node, NodeType, Platform

    kind = NodeType("local", max(cores, 1))
    return Platform(f"local-{network}", (kind,), (Node("local", kind),),
                    (Channel(network, 0, "node", TRANSFERS[network]),))


def params_and_models(args: argparse.Namespace):
    """``--params`` loaded and the models to predict with: ``--model`` (each checked to exist and to have its
    section) or every model the file has parameters for."""
    from commcost.io.params_file import load_params
    from commcost.models import MODELS

    params = load_params(args.params, strict=strictness(args))
    models = args.model or [m for m in MODELS if m in params.sections]
    for name in models:
        if name not in MODELS:
            raise InputError(f"unknown model {name!r}; expected one of {', '.join(sorted(MODELS))}", where="--model")
        params.for_model(name)
    return params, models


def predict(schedule, network: str, params, models: list[str]) -> dict[str, float]:
    """Predicted cost under each model (hloggp also under paper 000's kernel rule)."""
    import numpy as np

    from commcost.closedform import hloggp_kernels
    from commcost.models import MODELS, PlacedSchedule
    from commcost.platform import Mapping

    platform = local_platform(network, schedule.nprocs)
    placed = PlacedSchedule.of(schedule, platform, Mapping.on_nodes(np.zeros(schedule.nprocs, dtype=np.int64)))
    out: dict[str, float] = {}
    for name in models:
        try:
            out[name] = MODELS[name](params.for_model(name)).price(placed).time_s
            if name == "hloggp":
                out[hloggp_kernels.NAME] = hloggp_kernels.price(placed, params.for_model(name)).time_s
        except InputError as exc:
            print(f"commcost: not predicted under {name}: {exc}", file=sys.stderr)
    return out


def run_worker(args: argparse.Namespace, mpirun: str, network: str, partition: Path, nprocs: int,
               result: Path) -> dict:
    """Run the kernel under mpirun; the worker's JSON (iteration times, their sum)."""
    line = local_mpirun_line(mpirun, nprocs, network)
    line += [sys.executable, "-m", "commcost.launch.kernel_worker", "--kernel", args.kernel,
             "--partition", str(partition), "--steps", str(args.steps), "--out", str(result)]
    return run_rank_program(line, result, args.timeout, source=str(partition))


@command("measure-kernel", "run SUMMA or Wave2D's communication with MPI and compare with predictions (paper 000)",
         _configure)
def _measure_kernel(args: argparse.Namespace) -> int:
    from commcost.launch.mpi_launch import find_mpirun
    from commcost.io.partition_file import read_partition
    from commcost.kernels import summa, wave2d
    from commcost.report.kernel_validation import KernelRun

    if args.steps < 1:
        raise InputError(f"expected --steps >= 1, got {args.steps}", where="--steps")
    params, models = params_and_models(args)
    mpirun = find_mpirun(args.mpirun)
    args.out.mkdir(parents=True, exist_ok=True)
    with progress_stream(args):  # with --format json the lines go to standard error
        runs = []
        configured = configurations(args)  # every partition checked and written before the first run
        for network in args.network or ["shm"]:
            for label, path in configured:
                part = read_partition(path)
                if part.nprocs < 2:
                    raise InputError("expected a partition of at least 2 processes", source=str(path))
                schedule = summa(part) if args.kernel == "summa" else wave2d(part, args.steps)
                measured = run_worker(args, mpirun, network, path, part.nprocs,
                                      args.out / f"{args.kernel}_{network}_{path.stem}.json")
                run = KernelRun(args.kernel, network, label, part.nprocs, part.n, measured["time_s"],
                                predict(schedule, network, params, models))
                runs.append(run)
                print(f"  measured {args.kernel} {label} (P = {part.nprocs}, N = {part.n}, {network}): "
                      f"{len(measured['iterations_s'])} iterations", flush=True)
    return report_runs(args, runs)


def report_runs(args: argparse.Namespace, runs) -> int:
    """Print the measured-vs-predicted table, write ``OUT/results.json`` and the PNG (``--png``)."""
    from commcost.report.kernel_validation import plot_validation, render_validation

    results = [r.to_dict() for r in runs]
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    png = args.png or args.out / "measured_vs_predicted.png"
    plot_validation(runs, png)
    if wants_json(args):
        print_json({"results": results, "results_file": str(args.out / "results.json"), "png": str(png)})
        return 0
    print(render_validation(runs, args.unit))
    print(f"wrote {args.out / 'results.json'} and {png}")
    return 0
