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
from pathlib import Path

from commcost.cli.collective_options import add_collective_options, collective_schedule
from commcost.cli.options import add_unit_option, seconds_budget
from commcost.cli.registry import OutputFormat, command
from commcost.cli.options import add_launch_options
from commcost.workflows.mapping_search import MapOptions, search_mapping
from commcost.workflows.options import from_namespace

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


@command("map", "the rank-to-node placement that minimizes a schedule's predicted time under a model", _configure)
def _map(args: argparse.Namespace) -> int:
    out = search_mapping(from_namespace(MapOptions, args), build_collective=collective_schedule)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(out, indent=2))
        return 0
    _print_table(out, args.unit)
    return 0


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
