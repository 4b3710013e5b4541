"""A data-parallel kernel priced on a 2D distribution (paper 000): what ``commcost predict --kernel`` computes.

:func:`kernel_schedule` builds SUMMA's (all of it, or one iteration) or
Wave2D's schedule on a partition; :func:`price_kernel` places it (the
partition's hosts, or ``mapping`` / ``ppn``) and prices it under a model,
for hloggp also under paper 000's kernel rule
(:mod:`commcost.closedform.hloggp_kernels`). ``map`` places the same
schedules (:mod:`commcost.workflows.mapping_search`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from commcost.errors import InputError

KERNELS = ("summa", "wave2d")


@dataclass
class KernelOptions:
    """What ``predict --kernel`` prices and where (its options, by their argparse names)."""

    kernel: str = "summa"
    partition: Path | None = None
    iteration: int | None = None
    steps: int = 1
    platform: Path | None = None
    params: Path | None = None
    model: str = "hloggp"
    mapping: str | None = None
    ppn: int | None = None
    explain: bool = False


@dataclass
class KernelPrice:
    """A kernel's schedule on its partition, where its ranks ran, and its costs (the model's, then for hloggp
    paper 000's kernel rule's)."""

    part: Any
    schedule: Any
    mapping: Any
    costs: list


def kernel_schedule(kernel: str, part, iteration: int | None = None, steps: int = 1):
    """The schedule ``--kernel`` asks for on a partition: SUMMA (``iteration``: that iteration alone) or
    Wave2D over ``steps`` time steps."""
    from commcost.kernels import summa, summa_iteration, wave2d

    if kernel == "summa":
        if iteration is None:
            return summa(part)
        if not 0 <= iteration < part.n:
            raise InputError(f"expected an iteration in 0..{part.n - 1}, got {iteration}", where="--iteration")
        return summa_iteration(part, iteration)
    if steps < 1:
        raise InputError(f"expected --steps >= 1, got {steps}", where="--steps")
    return wave2d(part, steps)


def price_kernel(options: KernelOptions, platform, spec, model, params) -> KernelPrice:
    """Price a kernel on a partition; for hloggp also under paper 000's kernel rule."""
    from commcost.closedform import hloggp_kernels
    from commcost.io.partition_file import read_partition
    from commcost.models import PlacedSchedule
    from commcost.platform import Mapping
    from commcost.workflows.pricing import load_mapping, price_placed

    if options.partition is None:
        raise InputError("--kernel needs --partition FILE", where="--partition")
    part = read_partition(options.partition)
    schedule = kernel_schedule(options.kernel, part, options.iteration, options.steps)
    if options.mapping:
        mapping = load_mapping(options, platform, spec, part.nprocs)
    else:
        try:
            mapping = Mapping.from_node_names(platform, list(part.hosts))
        except InputError as exc:
            raise exc.located(source=str(options.partition), where="host") from None
    costs = [price_placed(options, schedule, platform, mapping, model)]
    if options.model == "hloggp":
        try:
            costs.append(hloggp_kernels.price(PlacedSchedule.of(schedule, platform, mapping),
                                              params.for_model("hloggp")))
        except InputError as exc:
            raise exc.located(source=str(options.params)) from None
    return KernelPrice(part, schedule, mapping, costs)


@dataclass
class PatternOptions:
    """What ``predict --pattern`` prices and where (its options, by their argparse names): paper 001 section 5
    (Fig. 10-11), the halo exchange of an SpMV or the row exchange of an SpGEMM, on the matrix or on every level
    of its classical AMG hierarchy (``amg_levels``), split over ``procs`` ranks (``partition`` contiguous or
    metis)."""

    pattern: str = "spmv"
    matrix: Path | None = None
    procs: int | None = None
    partition: Path | str | None = None
    amg_levels: bool = False
    value_bytes: int = 8
    platform: Path | None = None
    params: Path | None = None
    model: str = "maxrate"
    mapping: str | None = None
    ppn: int | None = None


@dataclass
class PatternPrice:
    """A pattern's price per level: ``rows`` (one dict per level, as ``--format json`` prints them), the row
    split used and whether the rows carry max-rate's terms and the postal baseline."""

    rows: list[dict]
    partition: str
    maxrate: bool


def _postal(params):
    """The same max-rate parameters as the postal model: no injection limit, no queue search, no contention."""
    from commcost.models.maxrate import MaxRateRow

    rows = {k: MaxRateRow(r.alpha_s, r.rate_bytes_per_s) for k, r in params.rows.items()}
    return replace(params, rows=rows, queue_search="none", contention="none")


def price_pattern(options: PatternOptions, platform, spec, model) -> PatternPrice:
    """Price the pattern per level under ``model``; under ``maxrate`` its time is split into the max-rate, queue
    search and contention terms (:meth:`commcost.models.maxrate.MaxRate.terms`), with the postal model of the
    same parameters beside it (alpha + s / R_b by locality and protocol), the baseline the paper improves on."""
    from commcost.kernels.sparse import pattern_levels, read_matrix
    from commcost.models import MODELS, PlacedSchedule
    from commcost.workflows.pricing import load_mapping

    if options.matrix is None:
        raise InputError("--pattern needs --matrix A.mtx", where="--matrix")
    if options.procs is None or options.procs < 1:
        raise InputError("--pattern needs --procs P >= 1", where="--procs")
    if options.value_bytes < 1:
        raise InputError(f"expected --value-bytes >= 1, got {options.value_bytes}", where="--value-bytes")
    partition = str(options.partition) if options.partition is not None else "contiguous"
    matrix = read_matrix(options.matrix)
    levels = pattern_levels(matrix, options.pattern, options.procs, partition, options.amg_levels,
                            options.value_bytes)
    mapping = load_mapping(options, platform, spec, options.procs)
    maxrate = options.model == "maxrate"
    postal = MODELS["maxrate"](_postal(model.params)) if maxrate else None
    rows = []
    for level in levels:
        try:
            placed = PlacedSchedule.of(level.schedule, platform, mapping)
            s = level.schedule
            row = {"level": level.index, "rows": level.rows, "nnz": level.nnz, "messages": s.ntransmissions,
                   "bytes": float(s.nbytes.sum()),
                   "max_messages_received": int(_max_count(s.dst, s.nprocs)) if s.ntransmissions else 0}
            if maxrate:
                terms = model.terms(placed)[0] if s.ntransmissions else None
                row.update({"maxrate_s": terms.maxrate_s if terms else 0.0,
                            "queue_s": terms.queue_s if terms else 0.0,
                            "contention_s": terms.contention_s if terms else 0.0,
                            "time_s": terms.time_s if terms else 0.0,
                            "postal_s": postal.total_time_s(placed) if s.ntransmissions else 0.0})
            else:
                row["time_s"] = model.total_time_s(placed) if s.ntransmissions else 0.0
        except InputError as exc:
            raise exc.located(source=str(options.params)) from None
        rows.append(row)
    return PatternPrice(rows, partition, maxrate)


def _max_count(dst, nprocs: int) -> int:
    import numpy as np

    return int(np.bincount(dst, minlength=nprocs).max())
