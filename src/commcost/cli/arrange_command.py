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
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from commcost.cli.main import OutputFormat, command
from commcost.errors import InputError


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("application", choices=["mpdata"], help="the 2D data-parallel code (MPDATA's halo exchange)")
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml)")
    p.add_argument("--bandwidths", required=True, type=Path, help="horizontal/vertical bandwidths between groups")
    p.add_argument("--level", help="group level of the platform the bandwidths name (default: the outermost; "
                                   "'node': one group per node)")
    p.add_argument("--ppn", type=int, default=1, help="processes per node (default 1)")
    p.add_argument("--domain", default="512x512x64", help="n x m x l grid points (default 512x512x64)")
    p.add_argument("--halo", default="1x1", help="ihalo x jhalo halo widths (default 1x1)")
    p.add_argument("--value-bytes", type=int, default=8, help="bytes per grid value (default 8)")
    p.add_argument("--initial", default="sequential",
                   help="initial linear order: sequential, round-robin (over groups) or random:SEED")
    p.add_argument("--initial-shape", help="R x C of the initial arrangement (default the squarest, R <= C)")
    p.add_argument("--exhaustive", action="store_true", help="also the optimum over every placement (p <= 12)")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])


def _ints(text: str, count: int, where: str) -> tuple[int, ...]:
    parts = text.lower().split("x")
    try:
        values = tuple(int(v) for v in parts)
    except ValueError:
        values = ()
    if len(values) != count or any(v < 1 for v in values):
        raise InputError(f"expected {'x'.join(['N'] * count)} with positive integers, got {text!r}", where=where)
    return values


def _order(initial: str, group, rng_seed=None):
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
    bandwidths = load_bandwidths(args.bandwidths)
    domain = _ints(args.domain, 3, "--domain")
    halo = _ints(args.halo, 2, "--halo")
    if args.ppn < 1 or args.value_bytes < 1:
        raise InputError("expected --ppn and --value-bytes >= 1", where="--ppn" if args.ppn < 1 else "--value-bytes")
    level = args.level or (platform.levels[-1] if platform.levels else "node")
    if level != "node" and level not in platform.levels:
        raise InputError(f"expected 'node' or one of the platform's levels {list(platform.levels)}, got {level!r}",
                         where="--level")
    labels = [node.name if level == "node" else node.groups[platform.levels.index(level)]
              for node in platform.nodes for _ in range(args.ppn)]
    names = [f"{node.name}" + (f":{k}" if args.ppn > 1 else "") for node in platform.nodes for k in range(args.ppn)]
    missing = sorted(set(labels) - set(bandwidths.groups))
    if missing:
        raise InputError(f"no bandwidths for group {missing[0]!r} (level {level}); expected one of "
                         f"{list(bandwidths.groups)}", source=str(args.bandwidths), where="groups")
    index = {g: i for i, g in enumerate(bandwidths.groups)}
    group = np.array([index[g] for g in labels], dtype=np.int64)
    p = len(group)

    def volumes(r: int, c: int) -> tuple[float, float]:
        return arr.mpdata_volumes(domain, halo, r, c, args.value_bytes)

    order = _order(args.initial, group)
    pairs = arr.factor_pairs(p)
    if args.initial_shape:
        r, c = _ints(args.initial_shape, 2, "--initial-shape")
        if r * c != p:
            raise InputError(f"expected R x C = {p} processes, got {r} x {c}", where="--initial-shape")
    else:
        r, c = min(pairs, key=lambda rc: (abs(rc[0] - rc[1]), -rc[1]))
    initial = arr.priced(order.reshape(c, r).T.copy(), group, bandwidths.horizontal, bandwidths.vertical, volumes)
    started = time.perf_counter()
    best, rounds = arr.heuristic(order, group, bandwidths.horizontal, bandwidths.vertical, volumes)
    spent = time.perf_counter() - started
    out = {"application": args.application, "processes": p, "level": level, "domain": list(domain),
           "halo": list(halo), "initial_order": args.initial,
           "initial": _described(initial, names, bandwidths.groups, group),
           "heuristic": {**_described(best, names, bandwidths.groups, group), "rounds": rounds, "seconds": spent},
           "ratio": initial.cost / best.cost}
    if args.exhaustive:
        started = time.perf_counter()
        optimum = arr.exhaustive(group, bandwidths.horizontal, bandwidths.vertical, volumes)
        out["exhaustive"] = {**_described(optimum, names, bandwidths.groups, group),
                             "placements_per_shape": arr.placements_count(group),
                             "seconds": time.perf_counter() - started,
                             "heuristic_gap_pct": 100 * (best.cost / optimum.cost - 1)}
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.application} on {p} processes of {args.platform} (groups: {level}), domain "
          f"{'x'.join(map(str, domain))}, halo {'x'.join(map(str, halo))}")
    rows = [("initial", out["initial"]), ("heuristic", out["heuristic"])]
    if "exhaustive" in out:
        rows.append(("optimum", out["exhaustive"]))
    for label, a in rows:
        print(f"  {label:<10} {a['shape'][0]} x {a['shape'][1]}  cost_H {a['cost_h_s']:.6g} s  cost_V "
              f"{a['cost_v_s']:.6g} s  total {a['cost_s']:.6g} s")
        for row in a["groups"]:
            print("      " + " ".join(f"{g:<10}" for g in row))
    print(f"  initial / heuristic: {out['ratio']:.2f}x (heuristic: {rounds} rounds, {spent * 1e3:.1f} ms)")
    if "exhaustive" in out:
        print(f"  heuristic above the optimum by {out['exhaustive']['heuristic_gap_pct']:.4f}% "
              f"({out['exhaustive']['placements_per_shape']:,} placements per shape, "
              f"{out['exhaustive']['seconds']:.1f} s)")
    return 0
