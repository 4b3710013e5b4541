"""``commcost map``: the rank-to-node placement that minimizes a schedule's predicted time under any model.

What is placed: a schedule file (``--schedule``), a collective algorithm
(``--collective C --algorithm A --procs P --nbytes N``), a kernel
(``--kernel mpdata --dims RxC``: MPDATA's halo exchange, paper 002;
``--kernel summa|wave2d --partition FILE``: paper 000's kernels on a 2D
distribution) or a sparse kernel's exchange (``--pattern spmv|spgemm
--matrix A.mtx --procs P [--amg-level K]``: paper 001). Each ``--start`` placement (sequential, round-robin,
random:SEED, graph: METIS's cut of the traffic graph, file:PATH, and for
kernels the natural one: paper 002's heuristic arrangement with
``--bandwidths``, the partition file's hosts) is improved by
:func:`commcost.mapping.improve` under ``--model`` within ``--time-limit``
seconds; the best result wins. At most ``--ppn`` ranks per node (default
the platform's ``[mapping]`` ppn, else ceil(P / nodes)) on the platform's
first ``--nodes`` nodes (default ceil(P / ppn)).

Prints each start's price before and after, and the winner against the
sequential placement (mpirun's default). The winner is also priced under
every other model of ``--params`` that can price it, so a placement tuned
to one model is seen under the others. ``--out DIR`` writes
``optimized.rankfile`` (Open MPI: ``mpirun --map-by rankfile:file=...``),
``optimized.nodes`` (one node per rank: ``--mapping file:...`` for
``commcost predict``), the same two for the sequential placement, the
schedule (``schedule.json``) and ``map.json``. ``--measure`` runs that
schedule for real (:mod:`commcost.launch.kernel_worker`: every phase's
transmissions as Isend/Irecv or Send, barrier-separated, max over ranks,
median of ``--repeat`` runs) under both rankfiles
(:mod:`commcost.launch.rankfile_runs`: every rank's host checked, results
reused) and prints measured against predicted ratios.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from commcost.cli.collective_options import add_collective_options
from commcost.cli.options import add_unit_option, seconds_budget
from commcost.workflows.pricing import model_from
from commcost.cli.registry import OutputFormat, command
from commcost.cli.options import add_launch_options
from commcost.errors import InputError

KERNELS = ("mpdata", "summa", "wave2d")


def _configure(p: argparse.ArgumentParser) -> None:
    from commcost.workflows.pricing import collectives

    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--schedule", type=Path, help="schedule file (.json or .toml)")
    what.add_argument("--collective", choices=[c.value for c in collectives()], help="a collective algorithm")
    what.add_argument("--kernel", choices=KERNELS, help="a data-parallel kernel (mpdata: paper 002; summa, "
                                                        "wave2d: paper 000 on --partition)")
    what.add_argument("--pattern", choices=("spmv", "spgemm"),
                      help="a sparse kernel's irregular exchange on --matrix over --procs ranks (paper 001)")
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml)")
    p.add_argument("--params", required=True, type=Path, help="model parameters file (.toml)")
    p.add_argument("--model", required=True, help="the model whose predicted time the placement minimizes")
    p.add_argument("--ppn", type=int, help="at most this many ranks per node (default the platform's [mapping] "
                                           "ppn, else ceil(P / nodes))")
    p.add_argument("--nodes", type=int, help="the allocation: the platform's first N nodes (default "
                                             "ceil(P / ppn), as many as the sequential placement fills)")
    p.add_argument("--start", action="append",
                   help="start placement: sequential, round-robin, random:SEED, graph (METIS), file:PATH, "
                        "heuristic (mpdata, with --bandwidths), partition (summa, wave2d) (repeatable; default "
                        "sequential, round-robin, graph and the kernel's own)")
    p.add_argument("--time-limit", type=seconds_budget, default=10.0,
                   help="seconds of local search per start (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search's random order (default 0)")
    p.add_argument("--out", type=Path, help="write rankfiles, node files and map.json here")
    p.add_argument("--measure", action="store_true",
                   help="with --out: run the schedule under the sequential and the optimized rankfile with MPI")
    p.add_argument("--repeat", type=int, default=5, help="with --measure: timed runs of the schedule (default 5)")
    add_launch_options(p)
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])
    add_unit_option(p)
    add_collective_options(p)
    k = p.add_argument_group("kernels (with --kernel)")
    k.add_argument("--dims", help="mpdata: R x C process grid (MPI_Cart, row-major ranks; default: the "
                                  "heuristic's shape with --bandwidths, else the squarest)")
    k.add_argument("--domain", default="512x512x64", help="mpdata: n x m x l grid points (default 512x512x64)")
    k.add_argument("--halo", default="1x1", help="mpdata: ihalo x jhalo halo widths (default 1x1)")
    k.add_argument("--value-bytes", type=int, default=8, help="mpdata: bytes per grid value (default 8)")
    k.add_argument("--bandwidths", type=Path, help="mpdata: group bandwidths for paper 002's heuristic start")
    k.add_argument("--level", help="mpdata: the platform level the bandwidths name (default as arrange)")
    k.add_argument("--partition", type=Path, help="summa, wave2d: 2D distribution file")
    k.add_argument("--steps", type=int, default=1, help="mpdata, wave2d: time steps (default 1)")
    g = p.add_argument_group("sparse patterns (with --pattern; --procs is the ranks)")
    g.add_argument("--matrix", type=Path, help="Matrix Market file (.mtx)")
    g.add_argument("--rows", default="contiguous", choices=("contiguous", "metis"),
                   help="how the matrix rows are split over the ranks (default contiguous)")
    g.add_argument("--amg-level", type=int, default=0,
                   help="level K of the matrix's classical AMG hierarchy (default 0: the matrix itself)")


def _what(args: argparse.Namespace, platform) -> tuple:
    """The schedule to place, its name, and the kernel's own starts (name -> node_of_rank)."""
    if args.schedule is not None:
        from commcost.io.schedule_file import load_schedule

        schedule = load_schedule(args.schedule)
        return schedule, schedule.name, {}
    if args.collective is not None:
        return _collective(args)
    if args.pattern is not None:
        return _pattern(args)
    if args.kernel == "mpdata":
        return _mpdata(args, platform)
    return _partitioned_kernel(args, platform)


def _pattern(args: argparse.Namespace) -> tuple:
    from commcost.kernels.sparse import pattern_levels, read_matrix

    if args.matrix is None:
        raise InputError("--pattern needs --matrix A.mtx", where="--matrix")
    if args.procs is None or args.procs < 1:
        raise InputError("--pattern needs --procs P >= 1", where="--procs")
    if args.amg_level < 0 or args.value_bytes < 1:
        raise InputError("expected --amg-level >= 0 and --value-bytes >= 1",
                         where="--amg-level" if args.amg_level < 0 else "--value-bytes")
    levels = pattern_levels(read_matrix(args.matrix), args.pattern, args.procs, args.rows, args.amg_level > 0,
                            args.value_bytes)
    if args.amg_level >= len(levels):
        raise InputError(f"the AMG hierarchy has levels 0..{len(levels) - 1}, got {args.amg_level}",
                         where="--amg-level")
    schedule = levels[args.amg_level].schedule
    return schedule, f"{schedule.name} of {args.matrix.name} on {args.procs} ranks", {}


def _collective(args: argparse.Namespace) -> tuple:
    from commcost.cli.collective_options import collective_schedule

    algorithm, schedule = collective_schedule(args)
    if any(p.name == "ppn" for p in algorithm.params):
        raise InputError(f"{algorithm.key} runs on sub-communicators Open MPI builds from the placement, so its "
                         "schedule changes with the placement; expected an algorithm of coll/tuned or MPICH",
                         where="--algorithm")
    return schedule, f"{algorithm.key} {args.collective} of {args.nbytes} on {args.procs} ranks", {}


def _mpdata(args: argparse.Namespace, platform) -> tuple:
    import numpy as np

    from commcost.cli.arrange_command import dims, process_groups
    from commcost.kernels.mpdata import halo_schedule
    from commcost.partition import arrangement as arr

    domain, halo = dims(args.domain, 3, "--domain"), dims(args.halo, 2, "--halo")
    if args.value_bytes < 1 or args.steps < 1:
        raise InputError("expected --value-bytes and --steps >= 1",
                         where="--value-bytes" if args.value_bytes < 1 else "--steps")

    def volumes(r: int, c: int) -> tuple[float, float]:
        return arr.mpdata_volumes(domain, halo, r, c, args.value_bytes)

    starts = {}
    shape = dims(args.dims, 2, "--dims") if args.dims else None
    if args.bandwidths is not None:
        from commcost.io.bandwidths_file import load_bandwidths

        bandwidths = load_bandwidths(args.bandwidths)
        ppn = args.ppn or 1
        _, group = process_groups(platform, bandwidths, args.level, ppn, args.bandwidths)
        best, _ = arr.heuristic(np.arange(len(group)), group, bandwidths.horizontal, bandwidths.vertical, volumes)
        if shape is None:
            shape = best.shape
        if shape[0] * shape[1] != len(group):
            raise InputError(f"the heuristic arranges the {len(group)} processes of {ppn} per node; expected "
                             f"--dims of {len(group)} ranks, got {shape[0]} x {shape[1]}", where="--dims")
        if best.shape != shape:  # step 2 of the heuristic at the asked shape, from its order
            r, c = shape
            filled = arr.priced(best.order().reshape(c, r).T.copy(), group, bandwidths.horizontal,
                                bandwidths.vertical, volumes)
            best = arr.rearrange(filled, group, bandwidths.horizontal, bandwidths.vertical, volumes)
        starts["heuristic"] = np.repeat(np.arange(len(platform.nodes)), ppn)[best.grid.reshape(-1)]
    if shape is None:
        p = len(platform.nodes) * (args.ppn or 1)
        shape = min(arr.factor_pairs(p), key=lambda rc: (abs(rc[0] - rc[1]), -rc[1]))
    r, c = shape
    h, w = volumes(r, c)
    return halo_schedule(r, c, h, w, args.steps), f"MPDATA halo exchange {r}x{c}", starts


def _partitioned_kernel(args: argparse.Namespace, platform) -> tuple:
    import numpy as np

    from commcost.cli.kernel_command import kernel_schedule
    from commcost.io.partition_file import read_partition
    from commcost.platform import Mapping

    if args.partition is None:
        raise InputError(f"--kernel {args.kernel} needs --partition FILE", where="--partition")
    part = read_partition(args.partition)
    args.iteration = None
    schedule = kernel_schedule(args, part)
    try:
        hosts = Mapping.from_node_names(platform, list(part.hosts)).node_of_rank
    except InputError as exc:
        raise exc.located(source=str(args.partition), where="host") from None
    return schedule, schedule.name, {"partition": np.asarray(hosts)}


def _starts(args: argparse.Namespace, schedule, platform, ppn: int, capacity, own: dict) -> tuple[dict, list[str]]:
    """The start placements asked for (name -> node_of_rank), and notes on those left out: sequential
    (rank p on node p div ppn), round-robin over the ceil(P / ppn) nodes sequential fills, random:SEED (a
    seeded permutation of sequential), graph, file:PATH and the kernel's own (``own``)."""
    from commcost.io.mapping_file import load_mapping_file
    from commcost.mapping import graph_start
    from commcost.mapping.local_search import level_groups
    from commcost.platform import Mapping

    p = schedule.nprocs
    names = args.start or ["sequential", "round-robin", "graph", *own]
    starts, notes = {}, []
    for name in dict.fromkeys(names):
        kind, _, rest = name.partition(":")
        if name == "sequential":
            starts[name] = Mapping.sequential(platform, p, ppn).node_of_rank
        elif name == "round-robin":
            starts[name] = Mapping.round_robin(platform, p, math.ceil(p / ppn)).node_of_rank
        elif kind == "random" and rest.isdigit():
            starts[name] = Mapping.random(platform, p, ppn, int(rest)).node_of_rank
        elif name == "graph":
            try:
                starts[name] = graph_start(schedule, capacity, level_groups(platform), args.seed)
            except ImportError:
                notes.append("graph start left out: pymetis is not installed (pip install 'commcost[sparse]')")
        elif kind == "file" and rest:
            mapping = load_mapping_file(rest, platform)
            if mapping.nprocs < p:
                raise InputError(f"expected a node for each of the {p} ranks, got {mapping.nprocs}", source=rest)
            starts[name] = mapping.node_of_rank[:p]
        elif name in own:
            starts[name] = own[name]
        elif name in ("heuristic", "partition"):
            raise InputError(f"the {name} start needs "
                             + ("--kernel mpdata and --bandwidths" if name == "heuristic" else
                                "--kernel summa or wave2d and --partition"), where="--start")
        else:
            raise InputError("expected sequential, round-robin, random:SEED, graph, file:PATH, heuristic or "
                             f"partition, got {name!r}", where="--start")
    return starts, notes


@command("map", "the rank-to-node placement that minimizes a schedule's predicted time under a model", _configure)
def _map(args: argparse.Namespace) -> int:
    import numpy as np

    from commcost.workflows.pricing import strictness
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.mapping import group_swaps, improve
    from commcost.mapping.local_search import node_classes, schedule_pricer
    from commcost.models import MODELS
    from commcost.platform import Mapping

    platform, spec = load_platform(args.platform)
    params = load_params(args.params, strict=strictness(args))
    if args.model not in MODELS:
        raise InputError(f"expected one of {sorted(MODELS)}, got {args.model!r}", where="--model")
    if args.seed < 0:
        raise InputError(f"expected --seed >= 0, got {args.seed}", where="--seed")
    for flag, value in (("--ppn", args.ppn), ("--nodes", args.nodes)):
        if value is not None and value < 1:
            raise InputError(f"expected {flag} >= 1, got {value}", where=flag)
    if args.measure and args.out is None:
        raise InputError("--measure writes rankfiles and results: expected --out DIR", where="--measure")
    if args.repeat < 1:
        raise InputError(f"expected --repeat >= 1, got {args.repeat}", where="--repeat")
    schedule, name, own = _what(args, platform)
    if args.measure and schedule.has_dependencies:
        raise InputError("--measure runs schedules of phases; this one orders its transmissions by dependencies "
                         "(a collective algorithm: time the library's own with commcost verify)", where="--measure")
    p, nnodes = schedule.nprocs, len(platform.nodes)
    ppn = args.ppn or (spec.ppn if spec is not None and spec.ppn else math.ceil(p / nnodes))
    if ppn * nnodes < p:
        raise InputError(f"{p} ranks need --ppn >= {math.ceil(p / nnodes)} on {nnodes} nodes, got {ppn}",
                         where="--ppn")
    allocated = args.nodes or math.ceil(p / ppn)
    if not math.ceil(p / ppn) <= allocated <= nnodes:
        raise InputError(f"{p} ranks at {ppn} per node need {math.ceil(p / ppn)} to {nnodes} nodes, got "
                         f"{allocated}", where="--nodes")
    capacity = np.where(np.arange(nnodes) < allocated, ppn, 0)
    starts, notes = _starts(args, schedule, platform, ppn, capacity, own)
    for label, start in starts.items():
        counts = np.bincount(start, minlength=nnodes)
        over = np.flatnonzero(counts > capacity)
        if len(over):
            raise InputError(f"the {label} start places {int(counts[over[0]])} ranks on node "
                             f"{platform.nodes[over[0]].name!r}; expected at most --ppn {ppn} on each of the "
                             f"first {allocated} nodes (--nodes)", where="--start")
    model = model_from(params, args.model)
    base = Mapping.on_nodes(np.zeros(p, dtype=np.int64))
    price = _located(schedule_pricer(schedule, platform, model, base), args)
    time_of = _located(schedule_pricer(schedule, platform, model, base, tie_break=False), args)
    swaps = group_swaps(platform)
    classes = node_classes(platform)
    results = {label: improve(price, start, capacity, swaps, args.time_limit, args.seed, classes=classes)
               for label, start in starts.items()}
    winner = min(results, key=lambda k: results[k].time_s)
    best = results[winner]
    in_order = Mapping.sequential(platform, p, ppn).node_of_rank  # mpirun's default, the baseline
    sequential = time_of(in_order)
    out = {"schedule": name, "ranks": p, "ppn": ppn, "nodes_allocated": allocated, "model": args.model,
           "time_limit_s": args.time_limit, "sequential_s": sequential, "best_start": winner,
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
    out["other_models"] = _other_models(args, params, schedule, platform, base, placements)
    if args.out is not None:
        out["files"] = _write(args.out, platform, placements, schedule)
    if args.measure:
        out["measured"] = _measure(args, out, platform, schedule, placements)
    if args.out is not None:
        (args.out / "map.json").write_text(json.dumps(out, indent=2))
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(out, indent=2))
        return 0
    _print_table(out, args.unit)
    return 0


def _located(price, args: argparse.Namespace):
    """``price`` with a model's input errors naming the params file and a placement's the platform."""
    def located(node_of_rank):
        try:
            return price(node_of_rank)
        except InputError as exc:
            raise exc.located(source=str(args.params if exc.where != "channels" else args.platform)) from None
    return located


def _other_models(args, params, schedule, platform, base, placements: dict) -> dict[str, dict[str, float]]:
    """The sequential and the optimized placement priced under each other model the params file can drive."""
    from commcost.mapping.local_search import schedule_pricer
    from commcost.models import MODELS

    out = {}
    for name in sorted(MODELS):
        if name == args.model:
            continue
        try:
            model = model_from(params, name)
            price = schedule_pricer(schedule, platform, model, base, tie_break=False)
            out[name] = {"sequential_s": price(placements["sequential"]), "optimized_s": price(placements["optimized"])}
        except (InputError, KeyError, ValueError):
            continue  # the file has no parameters (or not all channels) for this model
    return out


def _write(out_dir: Path, platform, placements: dict, schedule) -> dict[str, str]:
    from commcost.io.mapping_file import rankfile_text, write_node_names
    from commcost.io.schedule_file import dump_schedule
    from commcost.platform import Mapping

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"schedule": str(out_dir / "schedule.json")}
    dump_schedule(schedule, out_dir / "schedule.json")
    for label, node_of_rank in placements.items():
        mapping = Mapping.on_nodes(node_of_rank, label)
        path = out_dir / f"{label}.rankfile"
        path.write_text(rankfile_text(mapping, platform))
        files[f"{label} rankfile"] = str(path)
        path = out_dir / f"{label}.nodes"
        write_node_names(mapping, platform, path)
        files[f"{label} nodes"] = str(path)
    files["json"] = str(out_dir / "map.json")
    return files


def _measure(args: argparse.Namespace, out: dict, platform, schedule, placements: dict) -> dict:
    """Run the schedule (:mod:`commcost.launch.kernel_worker`) under the sequential and the optimized rankfile;
    the measured seconds and the measured and predicted sequential / optimized ratios."""
    import hashlib

    from commcost.launch.rankfile_runs import RankfileRun, run_under_rankfiles

    digest = hashlib.sha256(Path(out["files"]["schedule"]).read_bytes()).hexdigest()
    nodes = {label: [platform.nodes[n].name for n in placements[label]] for label in ("sequential", "optimized")}
    program = ["commcost.launch.kernel_worker", "--schedule", str(Path(out["files"]["schedule"]).resolve()),
               "--repeat", str(args.repeat)]
    todo = {label: RankfileRun(Path(out["files"][f"{label} rankfile"]), program,
                               args.out / f"measured_{label}.json",
                               {"schedule_sha256": digest, "placement": nodes[label], "repeat": args.repeat},
                               nodes[label])
            for label in ("sequential", "optimized")}
    runs = run_under_rankfiles(todo, nprocs=schedule.nprocs, launcher=args.launcher, mpirun=args.mpirun,
                               timeout=args.timeout, command="map")
    predicted = {args.model: out["gain_vs_sequential"]}
    for name, t in out["other_models"].items():
        predicted[name] = t["sequential_s"] / t["optimized_s"] if t["optimized_s"] > 0 else 1.0
    return {"runs": {k: {"time_s": v["time_s"], "runs_s": v["runs_s"], "hosts": v["hosts"]} for k, v in runs.items()},
            "ratio": runs["sequential"]["time_s"] / runs["optimized"]["time_s"], "predicted_ratio": predicted}


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _print_table(out: dict, unit: str) -> None:
    from commcost.units import format_seconds

    print(f"{out['schedule']}: {_count(out['ranks'], 'rank')} on {_count(out['nodes_allocated'], 'node')}, at most "
          f"{out['ppn']} per node, under {out['model']}")
    for label, r in out["starts"].items():
        moves = ", ".join(f"{v} {k}" for k, v in r["accepted"].items()) or "no move improved it"
        ended = "local optimum" if r["converged"] else "time limit"
        print(f"  from {label:<12} {format_seconds(r['start_s'], unit):>11} -> "
              f"{format_seconds(r['optimized_s'], unit):>11}  "
              f"({_count(r['evaluations'], 'placement')} priced in {r['seconds']:.2f} s, {ended}; {moves})")
    print(f"  optimized (from {out['best_start']}): {format_seconds(out['optimized_s'], unit)}, sequential placement "
          f"{format_seconds(out['sequential_s'], unit)}: {out['gain_vs_sequential']:.2f}x")
    for name, t in out["other_models"].items():
        ratio = t["sequential_s"] / t["optimized_s"] if t["optimized_s"] > 0 else 1.0
        print(f"  under {name:<9} sequential {format_seconds(t['sequential_s'], unit)}, optimized "
              f"{format_seconds(t['optimized_s'], unit)}: {ratio:.2f}x")
    if "measured" in out:
        m = out["measured"]
        print("  measured: " + ", ".join(f"{k} {format_seconds(v['time_s'], unit)}" for k, v in m["runs"].items())
              + f"  (sequential / optimized {m['ratio']:.2f}x measured; predicted "
              + ", ".join(f"{k} {v:.2f}x" for k, v in m["predicted_ratio"].items()) + ")")
    for note in out["notes"]:
        print(f"  note: {note}")
    for kind, path in out.get("files", {}).items():
        print(f"  wrote {kind}: {path}")
