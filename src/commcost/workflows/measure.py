"""Run a kernel's communication for real and price it under each model (``commcost measure-kernel``, paper 000
sec. 5), and what ``measure-pattern`` shares with it.

For each configuration (a partition file, or P ranks of speeds 1..P on an
N x N block matrix), ``python -m commcost.launch.kernel_worker`` runs under
mpirun on this machine and times every iteration as Algorithm 1 does
(barrier, time, max over ranks, sum). The same kernel is priced under each
model of ``--params`` on a one-node platform whose channel is ``--network``
(shm: Open MPI's default transport; tcp: ``--mca btl tcp,self``), since
every rank of the run shares this node. :func:`measure_kernel` returns one
:class:`~commcost.report.kernel_validation.KernelRun` per configuration and
network; :func:`write_results` writes ``results.json`` and the PNG that the
command reports.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from commcost.errors import InputError
from commcost.launch.mpi_launch import local_mpirun_line, run_rank_program

NETWORKS = ("shm", "tcp")
TRANSFERS = {"shm": ("shm", "shm"), "tcp": ("shm", "tcp", "shm")}  # DESIGN.md / paper 000 eq. 1-2
MAX_LOCAL_RANKS = 1024  # --procs runs on this machine: more ranks than this is a typo, not a laptop's run


@dataclass
class MeasureKernelOptions:
    """What ``commcost measure-kernel`` runs and prices (its options, by their argparse names)."""

    kernel: str = "summa"
    partition: list[Path] | None = None
    procs: str | None = None
    n: int = 32
    kb: int = 32
    steps: int = 20
    params: Path | None = None
    strict: bool = False
    model: list[str] | None = None
    network: list[str] | None = None
    out: Path = field(default_factory=lambda: Path("kernel-measurements"))
    png: Path | None = None
    mpirun: str | None = None
    timeout: float = 300.0


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


def configurations(options: MeasureKernelOptions) -> list[tuple[str, Path]]:
    """(label, partition file) per configuration; --procs writes its partitions into --out."""
    from commcost.io.partition_file import write_partition
    from commcost.partition import column_partition

    if options.partition:
        return [(path.stem, path) for path in options.partition]
    out = []
    procs = _proc_range(options.procs or "")
    if options.n < 1 or procs[-1] > options.n * options.n:
        raise InputError(f"N = {options.n} blocks per side holds at most {max(options.n, 0) ** 2} processes of one "
                         f"block each; --procs asks for {procs[-1]}", where="--n")
    for p in procs:
        path = options.out / f"partition_p{p}_n{options.n}.txt"
        try:
            part = column_partition(list(range(1, p + 1)), options.n, ["localhost"] * p, options.kb)
        except InputError as exc:
            raise exc.located(where="--n") from None
        write_partition(part, path)
        out.append((f"P={p} N={options.n}", path))
    return out


def local_platform(network: str, cores: int):
    """One node, every rank on it, joined by the ``network`` channel."""
    from commcost.platform import Channel, Node, NodeType, Platform

    kind = NodeType("local", max(cores, 1))
    return Platform(f"local-{network}", (kind,), (Node("local", kind),),
                    (Channel(network, 0, "node", TRANSFERS[network]),))


def params_and_models(params_file: Path, models: list[str] | None, strict: bool = False):
    """``--params`` loaded and the models to predict with: ``--model`` (each checked to exist and to have its
    section) or every model the file has parameters for."""
    from commcost.io.params_file import load_params
    from commcost.models import MODELS

    params = load_params(params_file, strict=True if strict else None)
    models = models or [m for m in MODELS if m in params.sections]
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


def run_worker(options: MeasureKernelOptions, mpirun: str, network: str, partition: Path, nprocs: int,
               result: Path) -> dict:
    """Run the kernel under mpirun; the worker's JSON (iteration times, their sum)."""
    line = local_mpirun_line(mpirun, nprocs, network)
    line += [sys.executable, "-m", "commcost.launch.kernel_worker", "--kernel", options.kernel,
             "--partition", str(partition), "--steps", str(options.steps), "--out", str(result)]
    return run_rank_program(line, result, options.timeout, source=str(partition))


def measure_kernel(options: MeasureKernelOptions, progress: TextIO | None = None) -> list:
    """Every configuration run on every network and priced under every model: one
    :class:`~commcost.report.kernel_validation.KernelRun` each, a line per run on ``progress``."""
    from commcost.io.partition_file import read_partition
    from commcost.kernels import summa, wave2d
    from commcost.launch.mpi_launch import find_mpirun
    from commcost.report.kernel_validation import KernelRun

    if options.steps < 1:
        raise InputError(f"expected --steps >= 1, got {options.steps}", where="--steps")
    params, models = params_and_models(options.params, options.model, options.strict)
    mpirun = find_mpirun(options.mpirun)
    options.out.mkdir(parents=True, exist_ok=True)
    runs = []
    configured = configurations(options)  # every partition checked and written before the first run
    for network in options.network or ["shm"]:
        for label, path in configured:
            part = read_partition(path)
            if part.nprocs < 2:
                raise InputError("expected a partition of at least 2 processes", source=str(path))
            schedule = summa(part) if options.kernel == "summa" else wave2d(part, options.steps)
            measured = run_worker(options, mpirun, network, path, part.nprocs,
                                  options.out / f"{options.kernel}_{network}_{path.stem}.json")
            run = KernelRun(options.kernel, network, label, part.nprocs, part.n, measured["time_s"],
                            predict(schedule, network, params, models))
            runs.append(run)
            if progress is not None:
                print(f"  measured {options.kernel} {label} (P = {part.nprocs}, N = {part.n}, {network}): "
                      f"{len(measured['iterations_s'])} iterations", file=progress, flush=True)
    return runs


def write_results(runs: list, out: Path, png: Path | None = None) -> dict[str, Any]:
    """Write ``out/results.json`` and the measured-vs-predicted PNG (``png``, default
    ``out/measured_vs_predicted.png``); the document ``--format json`` prints."""
    from commcost.report.kernel_validation import plot_validation

    results = [r.to_dict() for r in runs]
    (out / "results.json").write_text(json.dumps(results, indent=2))
    png = png or out / "measured_vs_predicted.png"
    plot_validation(runs, png)
    return {"results": results, "results_file": str(out / "results.json"), "png": str(png)}
