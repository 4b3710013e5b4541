"""The rank-to-node placement that minimizes a schedule's predicted time under any model (``commcost map``).

What is placed: :mod:`commcost.workflows.mapping_targets`. Each start
placement (sequential, round-robin, random:SEED, graph: METIS's cut of the
traffic graph, file:PATH, and for kernels the natural one: paper 002's
heuristic arrangement with bandwidths, the partition file's hosts) is
improved by :func:`commcost.mapping.improve` under the model within
``time_limit`` seconds; the best result wins. At most ``ppn`` ranks per node
(default the platform's ``[mapping]`` ppn, else ceil(P / nodes)) on the
platform's first ``nodes`` nodes (default ceil(P / ppn)).

The winner is compared with the sequential placement (mpirun's default)
and also priced under every other model of ``params`` that can price it, so
a placement tuned to one model is seen under the others. ``out`` and
``measure``: :mod:`commcost.workflows.mapping_outputs`.
"""

from __future__ import annotations

import json
import math
from typing import Callable

from commcost.errors import InputError
from commcost.workflows.map_options import MapOptions
from commcost.workflows.pricing import model_from


def search_mapping(options: MapOptions,
                   build_collective: Callable[[MapOptions], tuple] | None = None) -> dict:
    """Search the best placement from every start, compare it with the sequential one under every model, write
    ``out`` and run ``measure``: the document ``map.json`` holds and ``--format json`` prints. A collective's
    (algorithm, schedule) comes from ``build_collective`` (the command line's collective options build it)."""
    import numpy as np

    from commcost.workflows.pricing import strictness
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.mapping import group_swaps, improve
    from commcost.mapping.local_search import node_classes, schedule_pricer
    from commcost.models import MODELS
    from commcost.platform import Mapping
    from commcost.workflows.mapping_outputs import measure, write_placements
    from commcost.workflows.mapping_targets import start_placements, what_to_place

    platform, spec = load_platform(options.platform)
    params = load_params(options.params, strict=strictness(options))
    if options.model not in MODELS:
        raise InputError(f"expected one of {sorted(MODELS)}, got {options.model!r}", where="--model")
    if options.seed < 0:
        raise InputError(f"expected --seed >= 0, got {options.seed}", where="--seed")
    for flag, value in (("--ppn", options.ppn), ("--nodes", options.nodes)):
        if value is not None and value < 1:
            raise InputError(f"expected {flag} >= 1, got {value}", where=flag)
    if options.measure and options.out is None:
        raise InputError("--measure writes rankfiles and results: expected --out DIR", where="--measure")
    if options.repeat < 1:
        raise InputError(f"expected --repeat >= 1, got {options.repeat}", where="--repeat")
    schedule, name, own = what_to_place(options, platform, build_collective)
    if options.measure and schedule.has_dependencies:
        raise InputError("--measure runs schedules of phases; this one orders its transmissions by dependencies "
                         "(a collective algorithm: time the library's own with commcost verify)", where="--measure")
    p, nnodes = schedule.nprocs, len(platform.nodes)
    ppn = options.ppn or (spec.ppn if spec is not None and spec.ppn else math.ceil(p / nnodes))
    if ppn * nnodes < p:
        raise InputError(f"{p} ranks need --ppn >= {math.ceil(p / nnodes)} on {nnodes} nodes, got {ppn}",
                         where="--ppn")
    allocated = options.nodes or math.ceil(p / ppn)
    if not math.ceil(p / ppn) <= allocated <= nnodes:
        raise InputError(f"{p} ranks at {ppn} per node need {math.ceil(p / ppn)} to {nnodes} nodes, got "
                         f"{allocated}", where="--nodes")
    capacity = np.where(np.arange(nnodes) < allocated, ppn, 0)
    starts, notes = start_placements(options, schedule, platform, ppn, capacity, own)
    for label, start in starts.items():
        counts = np.bincount(start, minlength=nnodes)
        over = np.flatnonzero(counts > capacity)
        if len(over):
            raise InputError(f"the {label} start places {int(counts[over[0]])} ranks on node "
                             f"{platform.nodes[over[0]].name!r}; expected at most --ppn {ppn} on each of the "
                             f"first {allocated} nodes (--nodes)", where="--start")
    model = model_from(params, options.model)
    base = Mapping.on_nodes(np.zeros(p, dtype=np.int64))
    price = _located(schedule_pricer(schedule, platform, model, base), options)
    time_of = _located(schedule_pricer(schedule, platform, model, base, tie_break=False), options)
    swaps = group_swaps(platform)
    classes = node_classes(platform)
    results = {label: improve(price, start, capacity, swaps, options.time_limit, options.seed, classes=classes)
               for label, start in starts.items()}
    winner = min(results, key=lambda k: results[k].time_s)
    best = results[winner]
    in_order = Mapping.sequential(platform, p, ppn).node_of_rank  # mpirun's default, the baseline
    sequential = time_of(in_order)
    out = {"schedule": name, "ranks": p, "ppn": ppn, "nodes_allocated": allocated, "model": options.model,
           "time_limit_s": options.time_limit, "sequential_s": sequential, "best_start": winner,
           "optimized_s": best.time_s,
           "gain_vs_sequential": sequential / best.time_s if best.time_s > 0 else 1.0,
           "starts": {label: {"start_s": r.start_time_s, "optimized_s": r.time_s, "evaluations": r.evaluations,
                              "seconds": r.seconds, "converged": r.converged, "accepted": r.accepted}
                      for label, r in results.items()},
           "nodes": [platform.nodes[n].name for n in best.node_of_rank], "notes": notes}
    if "partition" in own:
        moved = [k for k, (a, b) in enumerate(zip(own["partition"], best.node_of_rank))
                 if platform.nodes[a].type.name != platform.nodes[b].type.name]
        if moved:
            notes.append(f"{len(moved)} rank(s) (first: rank {moved[0]}) now run on another node type than the "
                         "partition's host: its areas were balanced for those hosts' speeds, and map prices "
                         "communication only")
    placements = {"optimized": best.node_of_rank, "sequential": in_order}
    out["other_models"] = _other_models(options, params, schedule, platform, base, placements)
    if options.out is not None:
        out["files"] = write_placements(options.out, platform, placements, schedule)
    if options.measure:
        out["measured"] = measure(options, out, platform, schedule, placements)
    if options.out is not None:
        (options.out / "map.json").write_text(json.dumps(out, indent=2))
    return out


def _located(price, options: MapOptions) -> Callable:
    """``price`` with a model's input errors naming the params file and a placement's the platform."""
    def located(node_of_rank):
        try:
            return price(node_of_rank)
        except InputError as exc:
            raise exc.located(source=str(options.params if exc.where != "channels"
                                         else options.platform)) from None
    return located


def _other_models(options: MapOptions, params, schedule, platform, base,
                  placements: dict) -> dict[str, dict[str, float]]:
    """The sequential and the optimized placement priced under each other model the params file can drive."""
    from commcost.mapping.local_search import schedule_pricer
    from commcost.models import MODELS

    out = {}
    for name in sorted(MODELS):
        if name == options.model:
            continue
        try:
            model = model_from(params, name)
            price = schedule_pricer(schedule, platform, model, base, tie_break=False)
            out[name] = {"sequential_s": price(placements["sequential"]),
                         "optimized_s": price(placements["optimized"])}
        except (InputError, KeyError, ValueError):
            continue  # the file has no parameters (or not all channels) for this model
    return out
