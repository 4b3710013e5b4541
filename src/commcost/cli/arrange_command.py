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
from pathlib import Path

from commcost.cli.options import add_unit_option
from commcost.cli.registry import OutputFormat, command
from commcost.cli.options import add_launch_options
from commcost.workflows.arrange import ArrangeOptions, arrange
from commcost.workflows.options import from_namespace


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


@command("arrange", "the communication-optimal 2D arrangement of a data-parallel code's processes (paper 002)",
         _configure)
def _arrange(args: argparse.Namespace) -> int:
    out = arrange(from_namespace(ArrangeOptions, args))
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(out, indent=2))
        return 0
    _print_table(args, out)
    return 0


def _print_table(args: argparse.Namespace, out: dict) -> None:
    from commcost.units import format_seconds

    domain, halo, p, level = out["domain"], out["halo"], out["processes"], out["level"]
    rounds, spent = out["heuristic"]["rounds"], out["heuristic"]["seconds"]

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
