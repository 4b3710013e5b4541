"""``commcost arrange mpdata``: the communication-optimal 2D arrangement of processes (paper 002).

Processes: ``--ppn`` per node of the platform (default one per node, as
paper 002 runs MPDATA), in node order; each belongs to its node's group at
``--level`` (default the platform's outermost group level, else the node).
Bandwidths between groups come from ``--bandwidths`` (paper 002 Table 1's
form, :mod:`commcost.io.bandwidths_file`). The initial arrangement is the
``--initial`` order (sequential, round-robin over groups, or random:SEED)
filled column by column into ``--initial-shape`` (default the squarest
r x c with r <= c); the heuristic (:mod:`commcost.partition.arrangement`)
starts from the same order. Prints both with cost_H, cost_V and their
ratio; ``--exhaustive`` (p <= 12) adds the optimum and the heuristic's gap.

``--params`` prices MPDATA's halo-exchange schedule
(:mod:`commcost.kernels.mpdata`, one time step) of each arrangement under
the models of that file on the platform, and says where a model ranks the
arrangements otherwise than the bandwidth cost does. ``--out DIR`` writes
what a user deploys: an Open MPI rankfile per arrangement (MPI_Cart rank
``i * c + j`` on the node of the process at cell (i, j)), the reorder file
(the key of each sequentially launched rank for ``MPI_Comm_split``), a PNG
of the arrangements coloured by group and ``arrangement.json``.
``--measure`` then runs the halo exchange for real (mpi4py,
:mod:`commcost.launch.halo_worker`) under each rankfile, checks every rank ran
on the node its rankfile names, and prints measured against predicted
ratios; each run's result is written as it is taken and reused when the
command runs again.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from commcost.cli.options import add_unit_option
from commcost.cli.registry import OutputFormat, command
from commcost.cli.options import add_launch_options
from commcost.errors import InputError


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("application", choices=["mpdata"], help="the 2D data-parallel code (MPDATA's halo exchange)")
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--bandwidths", type=Path, help="horizontal/vertical bandwidths between groups")
    source.add_argument("--bandwidths-from", metavar="MODEL",
                        help="derive them from this model of --params: h / t(h) and w / t(w) between two nodes "
                             "of the groups, at the initial shape's message sizes (level default: the innermost "
                             "above nodes, as paper 002's clusters)")
    p.add_argument("--level", help="group level of the platform the bandwidths name (default: the outermost "
                                   "whose groups the bandwidths all name; 'node': one group per node)")
    p.add_argument("--ppn", type=int, default=1, help="processes per node (default 1)")
    p.add_argument("--domain", default="512x512x64", help="n x m x l grid points (default 512x512x64)")
    p.add_argument("--halo", default="1x1", help="ihalo x jhalo halo widths (default 1x1)")
    p.add_argument("--value-bytes", type=int, default=8, help="bytes per grid value (default 8)")
    p.add_argument("--initial", default="sequential",
                   help="initial linear order: sequential, round-robin (over groups) or random:SEED")
    p.add_argument("--initial-shape", help="R x C of the initial arrangement (default the squarest, R <= C)")
    p.add_argument("--exhaustive", action="store_true", help="also the optimum over every placement (p <= 12)")
    p.add_argument("--params", type=Path, help="also price each arrangement's halo exchange under these models")
    p.add_argument("--model", action="append", help="with --params: model to price with (repeatable; default all)")
    p.add_argument("--out", type=Path, help="write rankfiles, the reorder file, a PNG and arrangement.json here")
    p.add_argument("--measure", action="store_true",
                   help="with --out: run the halo exchange under each rankfile with MPI and compare with predictions")
    p.add_argument("--steps", type=int, default=5, help="with --measure: time steps per sample (default 5)")
    p.add_argument("--repeat", type=int, default=5, help="with --measure: timed samples (default 5)")
    add_launch_options(p)
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])
    add_unit_option(p, "s")  # paper 002's costs of a time step are seconds


def dims(text: str, count: int, where: str) -> tuple[int, ...]:
    parts = text.lower().split("x")
    try:
        values = tuple(int(v) for v in parts)
    except ValueError:
        values = ()
    if len(values) != count or any(v < 1 for v in values):
        raise InputError(f"expected {'x'.join(['N'] * count)} with positive integers, got {text!r}", where=where)
    return values


def _default_level(platform, groups) -> str:
    """The level (of the platform's, then 'node') whose groups the bandwidths name most completely; ties go
    to the outermost."""
    named = set(groups)
    candidates = [(lv, {node.groups[d] for node in platform.nodes}) for d, lv in enumerate(platform.levels)]
    candidates = [*reversed(candidates), ("node", {node.name for node in platform.nodes})]
    return max(candidates, key=lambda item: len(item[1] & named) / len(item[1]))[0]


def process_groups(platform, bandwidths, level: str | None, ppn: int, source: Path) -> tuple:
    """The level the bandwidths name (``level``, else :func:`_default_level`) and the group of each of the
    ``ppn`` processes per node (node order), as indices into the bandwidths' groups."""
    import numpy as np

    level = level or _default_level(platform, bandwidths.groups)
    if level != "node" and level not in platform.levels:
        raise InputError(f"expected 'node' or one of the platform's levels {list(platform.levels)}, got {level!r}",
                         where="--level")
    labels = [node.name if level == "node" else node.groups[platform.levels.index(level)]
              for node in platform.nodes for _ in range(ppn)]
    missing = sorted(set(labels) - set(bandwidths.groups))
    if missing:
        raise InputError(f"no bandwidths for group {missing[0]!r} (level {level}); expected one of "
                         f"{list(bandwidths.groups)}", source=str(source), where="groups")
    index = {g: i for i, g in enumerate(bandwidths.groups)}
    return level, np.array([index[g] for g in labels], dtype=np.int64)


def _derived_bandwidths(args: argparse.Namespace, platform, hw: tuple[float, float]):
    """b_H and b_V between the groups of ``--level`` (default the innermost above nodes) from ``--bandwidths-from``'s
    model of ``--params`` (:mod:`commcost.partition.model_bandwidths`), at the message sizes ``hw``."""
    from commcost.workflows.pricing import strictness
    from commcost.io.bandwidths_file import Bandwidths
    from commcost.io.params_file import load_params
    from commcost.models import MODELS
    from commcost.partition.model_bandwidths import model_bandwidths

    if args.params is None:
        raise InputError("--bandwidths-from MODEL takes the model from --params FILE; expected --params",
                         where="--bandwidths-from")
    if args.bandwidths_from not in MODELS:
        raise InputError(f"expected one of {sorted(MODELS)}, got {args.bandwidths_from!r}", where="--bandwidths-from")
    level = args.level or (platform.levels[0] if platform.levels else "node")
    if level != "node" and level not in platform.levels:
        raise InputError(f"expected 'node' or one of the platform's levels {list(platform.levels)}, got {level!r}",
                         where="--level")
    members: dict[str, list[int]] = {}
    for n, node in enumerate(platform.nodes):
        members.setdefault(node.name if level == "node" else node.groups[platform.levels.index(level)], []).append(n)
    params = load_params(args.params, strict=strictness(args))
    try:
        model = MODELS[args.bandwidths_from](params.for_model(args.bandwidths_from))
        bh, bv = model_bandwidths(model, platform, list(members.values()), *hw)
    except InputError as exc:
        raise exc.located(source=str(args.params)) from None
    args.level = level
    return Bandwidths(tuple(members), bh, bv)


def _order(initial: str, group):
    import numpy as np

    p = len(group)
    if initial == "sequential":
        return np.arange(p)
    if initial == "round-robin":
        members = [list(np.flatnonzero(group == g)) for g in np.unique(group)]
        out = []
        while any(members):
            out += [m.pop(0) for m in members if m]
        return np.array(out)
    kind, _, seed = initial.partition(":")
    if kind == "random" and seed.isdigit():
        return np.random.default_rng(int(seed)).permutation(p)
    raise InputError(f"expected sequential, round-robin or random:SEED, got {initial!r}", where="--initial")


def _described(arr, names, group_names, group) -> dict:
    return {"shape": list(arr.shape), "cost_h_s": arr.cost_h, "cost_v_s": arr.cost_v, "cost_s": arr.cost,
            "grid": [[names[q] for q in row] for row in arr.grid.tolist()],
            "groups": [[group_names[group[q]] for q in row] for row in arr.grid.tolist()]}


@command("arrange", "the communication-optimal 2D arrangement of a data-parallel code's processes (paper 002)",
         _configure)
def _arrange(args: argparse.Namespace) -> int:
    import numpy as np

    from commcost.io.bandwidths_file import load_bandwidths
    from commcost.io.platform_file import load_platform
    from commcost.partition import arrangement as arr

    platform, _ = load_platform(args.platform)
    domain = dims(args.domain, 3, "--domain")
    halo = dims(args.halo, 2, "--halo")
    if args.ppn < 1 or args.value_bytes < 1:
        raise InputError("expected --ppn and --value-bytes >= 1", where="--ppn" if args.ppn < 1 else "--value-bytes")
    if args.model and args.params is None:
        raise InputError("prices with a model of --params FILE; expected --params with it", where="--model")

    def volumes(r: int, c: int) -> tuple[float, float]:
        return arr.mpdata_volumes(domain, halo, r, c, args.value_bytes)

    p = len(platform.nodes) * args.ppn
    pairs = arr.factor_pairs(p)
    if args.initial_shape:
        r, c = dims(args.initial_shape, 2, "--initial-shape")
        if r * c != p:
            raise InputError(f"expected R x C = {p} processes, got {r} x {c}", where="--initial-shape")
    else:
        r, c = min(pairs, key=lambda rc: (abs(rc[0] - rc[1]), -rc[1]))
    if args.bandwidths is not None:
        bandwidths = load_bandwidths(args.bandwidths)
    else:
        bandwidths = _derived_bandwidths(args, platform, volumes(r, c))
    level, group = process_groups(platform, bandwidths, args.level, args.ppn, args.bandwidths)
    names = [f"{node.name}" + (f":{k}" if args.ppn > 1 else "") for node in platform.nodes for k in range(args.ppn)]
    order = _order(args.initial, group)
    initial = arr.priced(order.reshape(c, r).T.copy(), group, bandwidths.horizontal, bandwidths.vertical, volumes)
    started = time.perf_counter()
    best, rounds = arr.heuristic(order, group, bandwidths.horizontal, bandwidths.vertical, volumes)
    spent = time.perf_counter() - started
    out = {"application": args.application, "processes": p, "level": level, "domain": list(domain),
           "halo": list(halo), "initial_order": args.initial,
           "initial": _described(initial, names, bandwidths.groups, group),
           "heuristic": {**_described(best, names, bandwidths.groups, group), "rounds": rounds, "seconds": spent},
           "ratio": initial.cost / best.cost}
    arrangements = {"initial": initial, "heuristic": best}
    if args.exhaustive:
        started = time.perf_counter()
        optimum = arr.exhaustive(group, bandwidths.horizontal, bandwidths.vertical, volumes)
        arrangements["optimum"] = optimum
        out["exhaustive"] = {**_described(optimum, names, bandwidths.groups, group),
                             "placements_per_shape": arr.placements_count(group),
                             "seconds": time.perf_counter() - started,
                             "heuristic_gap_pct": 100 * (best.cost / optimum.cost - 1)}
    node_of_process = np.repeat(np.arange(len(platform.nodes)), args.ppn)
    mappings = {label: _mapping(a, node_of_process) for label, a in arrangements.items()}
    if args.bandwidths is None:
        out["derived_bandwidths"] = {"model": args.bandwidths_from, "at_shape": [r, c], "unit": "B/s",
                                     "groups": list(bandwidths.groups), "horizontal": bandwidths.horizontal.tolist(),
                                     "vertical": bandwidths.vertical.tolist()}
    if args.params is not None:
        out["models"] = _priced_by_models(args, arrangements, mappings, platform, volumes)
        out["disagreements"] = _disagreements(arrangements, out["models"])
    if args.out is not None:
        out["files"] = _write_outputs(args, out, arrangements, mappings, platform, names, bandwidths.groups, group)
    if args.measure:
        out["measured"] = _measure(args, out, arrangements, mappings, platform, domain, halo)
    if args.out is not None:
        (args.out / "arrangement.json").write_text(json.dumps(out, indent=2))
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(out, indent=2))
        return 0
    _print_table(args, out, domain, halo, p, level, rounds, spent)
    return 0


def _print_table(args: argparse.Namespace, out: dict, domain, halo, p: int, level: str, rounds: int,
                 spent: float) -> None:
    from commcost.units import format_seconds

    def t(seconds: float) -> str:
        return format_seconds(seconds, args.unit)

    print(f"{args.application} on {p} processes of {args.platform} (groups: {level}), domain "
          f"{'x'.join(map(str, domain))}, halo {'x'.join(map(str, halo))}")
    rows = [("initial", out["initial"]), ("heuristic", out["heuristic"])]
    if "exhaustive" in out:
        rows.append(("optimum", out["exhaustive"]))
    for label, a in rows:
        print(f"  {label:<10} {a['shape'][0]} x {a['shape'][1]}  cost_H {t(a['cost_h_s'])}  cost_V "
              f"{t(a['cost_v_s'])}  total {t(a['cost_s'])}")
        for row in a["groups"]:
            print("      " + " ".join(f"{g:<10}" for g in row))
    print(f"  initial / heuristic: {out['ratio']:.2f}x (heuristic: {rounds} rounds, {spent * 1e3:.1f} ms)")
    if "exhaustive" in out:
        print(f"  heuristic above the optimum by {out['exhaustive']['heuristic_gap_pct']:.4f}% "
              f"({out['exhaustive']['placements_per_shape']:,} placements per shape, "
              f"{out['exhaustive']['seconds']:.1f} s)")
    for model, times in out.get("models", {}).items():
        print(f"  {model:<10} one step: " + ", ".join(f"{label} {t(s)}" for label, s in times.items())
              + f"  (initial / heuristic {times['initial'] / times['heuristic']:.2f}x)")
    for line in out.get("disagreements", []):
        print(f"  note: {line}")
    if "measured" in out:
        m = out["measured"]
        print("  measured one step: " + ", ".join(f"{label} {t(v['time_s'])}" for label, v in m["runs"].items())
              + f"  (initial / heuristic {m['ratio']:.2f}x measured; predicted "
              + ", ".join(f"{k} {v:.2f}x" for k, v in m["predicted_ratio"].items()) + ")")
    for kind, path in out.get("files", {}).items():
        print(f"  wrote {kind}: {path}")


def _mapping(arrangement, node_of_process):
    """MPI_Cart rank k = i * c + j (row-major) on the node of the process at cell (i, j)."""
    from commcost.platform import Mapping

    return Mapping.on_nodes(node_of_process[arrangement.grid.reshape(-1)], "arrangement")


def _priced_by_models(args, arrangements, mappings, platform, volumes) -> dict[str, dict[str, float]]:
    """Seconds of one MPDATA time step of each arrangement under each model of ``--params``."""
    from commcost.cli.measure_kernel_command import params_and_models
    from commcost.kernels.mpdata import halo_schedule
    from commcost.models import MODELS, PlacedSchedule

    params, models = params_and_models(args)
    out: dict[str, dict[str, float]] = {}
    for name in models:
        model = MODELS[name](params.for_model(name))
        out[name] = {}
        for label, a in arrangements.items():
            schedule = halo_schedule(*a.shape, *volumes(*a.shape))
            out[name][label] = model.price(PlacedSchedule.of(schedule, platform, mappings[label])).time_s
    return out


def _disagreements(arrangements, models: dict[str, dict[str, float]]) -> list[str]:
    """Where a model orders two arrangements otherwise than the bandwidth cost (eq. 1-3) does."""
    lines = []
    labels = list(arrangements)
    for name, times in models.items():
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                by_cost = arrangements[a].cost - arrangements[b].cost
                by_model = times[a] - times[b]
                if by_cost * by_model < 0 and abs(by_model) > 1e-9 * max(times[a], times[b]):
                    better, worse = (a, b) if by_model < 0 else (b, a)
                    lines.append(f"{name} ranks the {better} arrangement ahead of the {worse} one "
                                 f"({times[better]:.4g} s vs {times[worse]:.4g} s per step); the bandwidth cost "
                                 f"says the opposite ({arrangements[better].cost:.4g} vs "
                                 f"{arrangements[worse].cost:.4g})")
    return lines


def _write_outputs(args, out, arrangements, mappings, platform, names, group_names, group) -> dict[str, str]:
    """Rankfiles, the heuristic's reorder file and the PNG in ``--out``; their paths by kind."""
    from commcost.io.mapping_file import rankfile_text, reorder_text
    from commcost.report.arrangement_plot import plot_arrangements

    args.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for label, mapping in mappings.items():
        path = args.out / f"{label}.rankfile"
        path.write_text(rankfile_text(mapping, platform))
        files[f"{label} rankfile"] = str(path)
    if "derived_bandwidths" in out:  # the table a later run can take with --bandwidths
        d = out["derived_bandwidths"]
        path = args.out / "bandwidths.toml"
        path.write_text(f"# derived from {d['model']} of {args.params} at the {d['at_shape'][0]} x "
                        f"{d['at_shape'][1]} shape's message sizes\nunit = \"B/s\"\ngroups = {json.dumps(d['groups'])}\n"
                        f"horizontal = {json.dumps(d['horizontal'])}\nvertical = {json.dumps(d['vertical'])}\n")
        files["bandwidths"] = str(path)
    path = args.out / "heuristic.order"
    path.write_text(reorder_text(arrangements["heuristic"].grid.reshape(-1)))
    files["reorder file"] = str(path)
    described = {label: _described(a, names, group_names, group) for label, a in arrangements.items()}
    panels = [(f"{label} {a.shape[0]} x {a.shape[1]}: {a.cost:.4g} s", described[label]["grid"],
               described[label]["groups"]) for label, a in arrangements.items()]
    path = args.out / "arrangement.png"
    plot_arrangements(panels, path)
    files["plot"] = str(path)
    files["json"] = str(args.out / "arrangement.json")
    return files


def _measure(args, out, arrangements, mappings, platform, domain, halo) -> dict:
    """Run the halo exchange under each rankfile (reusing a result already written for the same run); the
    measured seconds per step and the measured and predicted initial / heuristic ratios."""
    import math

    if args.out is None:
        raise InputError("--measure writes rankfiles and results: expected --out DIR", where="--measure")
    if args.steps < 1 or args.repeat < 1:
        raise InputError("expected --steps and --repeat >= 1", where="--steps" if args.steps < 1 else "--repeat")
    if args.value_bytes != 8:
        raise InputError("the measured halo exchange sends float64 values: expected --value-bytes 8",
                         where="--value-bytes")
    from commcost.launch.rankfile_runs import RankfileRun, run_under_rankfiles

    todo = {}
    for label in ("initial", "heuristic"):
        r, c = arrangements[label].shape
        local = [math.ceil(domain[0] / r), math.ceil(domain[1] / c), domain[2]]
        program = ["commcost.launch.halo_worker", "--dims", f"{r}x{c}", "--local", "x".join(map(str, local)),
                   "--halo", "x".join(map(str, halo)), "--steps", str(args.steps), "--repeat", str(args.repeat)]
        todo[label] = RankfileRun(Path(out["files"][f"{label} rankfile"]), program,
                                  args.out / f"measured_{label}.json",
                                  {"dims": [r, c], "local": local, "halo": list(halo), "steps": args.steps},
                                  [platform.nodes[n].name for n in mappings[label].node_of_rank])
    runs = run_under_rankfiles(todo, nprocs=len(mappings["initial"].node_of_rank), launcher=args.launcher,
                               mpirun=args.mpirun, timeout=args.timeout, command="arrange")
    ratio = runs["initial"]["time_s"] / runs["heuristic"]["time_s"]
    predicted = {"bandwidths": out["ratio"]}
    for model, times in out.get("models", {}).items():
        predicted[model] = times["initial"] / times["heuristic"]
    return {"runs": {k: {"time_s": v["time_s"], "runs_s": v["runs_s"], "hosts": v["hosts"]} for k, v in runs.items()},
            "ratio": ratio, "predicted_ratio": predicted}
