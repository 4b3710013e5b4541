"""``commcost select``: the predicted best algorithm (and tunables) for every (P, n) of a grid, as rules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.cli.options import add_html_option, add_strict_option, write_html
from commcost.cli.registry import command
from commcost.workflows.options import from_namespace
from commcost.workflows.pricing import PAPER004
from commcost.workflows.selection_grid import SelectGrid, SelectOptions, select_grid

FORMATS = ("table", "json", "csv")


def _configure(p: argparse.ArgumentParser) -> None:
    from commcost.models import MODELS

    from commcost.collectives import Collective

    p.add_argument("collective", choices=[c.value for c in Collective], help="the collective to select algorithms for")
    p.add_argument("--params", required=True, type=Path, help="model parameters file (.toml)")
    add_strict_option(p)
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml), e.g. examples/cluster")
    p.add_argument("--model", default="taulop", choices=[*sorted(MODELS), PAPER004],
                   help=f"cost model (default taulop; {PAPER004}: paper 004's closed forms, bcast only)")
    p.add_argument("--library", default="ompi", choices=["ompi", "mpich"], help="whose algorithms (default ompi)")
    p.add_argument("--procs", default="2..4096", help="process counts: LO..HI (powers of two between) or a list")
    p.add_argument("--sizes", default="1..4MiB", help="message sizes: LO..HI (powers of two between) or a list")
    p.add_argument("--ppn", type=int, help="ranks per node, sequential mapping (default: the platform's mapping)")
    p.add_argument("--mapping", help="rank placement instead: round-robin, random:PPN:seed=N, ...")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--segsizes", default="0,8KiB,32KiB,128KiB",
                   help="segment sizes to try where an algorithm takes one (decision variable; 0 = none)")
    p.add_argument("--fanouts", default="", help="chain fan-outs to try (default: the library's)")
    p.add_argument("--radixes", default="", help="k-nomial radixes to try (default: the library's)")
    p.add_argument("--algorithms", default=None, help="only these algorithm names (comma list; default all)")
    p.add_argument("--algorithm-fit", action="store_true",
                   help="correct each Open MPI algorithm's price by the params file's [algorithm_fit.<collective>."
                        "<name>] (a_s + b T, from calibrate --benchmarks ...,collectives)")
    p.add_argument("--format", default="table", choices=FORMATS)
    p.add_argument("--plot", type=Path, help="write a PNG map of the selection over (P, n)")
    add_html_option(p)
    p.add_argument("--write-ompi-rules", type=Path, metavar="FILE",
                   help="write an Open MPI coll/tuned rules file (coll_tuned_dynamic_rules_filename)")
    p.add_argument("--ompi-rules-format", default="classic", choices=["classic", "json"],
                   help="classic (rule-file-version-2, Open MPI 5.0.x and later; default) or json (Open MPI 6.0+)")
    p.add_argument("--write-mpich-json", type=Path, metavar="FILE",
                   help="write an MPICH selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE); "
                        "needs --library mpich")
    p.add_argument("--mpich-base", type=Path, metavar="FILE",
                   help="a complete MPICH selection file (e.g. MPICH's maint/tuning/coll/mpir/generic.json) whose "
                        "other collectives the written file keeps: MPICH takes the file as its whole selection")


@command("select", "predict the best algorithm for every process count and message size; write rules",
         _configure)
def _select(args: argparse.Namespace) -> int:
    from commcost.report.selection_report import grid_csv, render_penalties, render_rules

    grid = select_grid(from_namespace(SelectOptions, args))
    if args.html:
        write_html(args, _page(args, grid))
    for line in dict.fromkeys(grid.refused):  # on stderr: stdout stays what the format says
        print(f"commcost: not priced (never picked; --max-transmissions or --max-memory raises the limit): "
              f"{line}", file=sys.stderr)
    for line in dict.fromkeys(grid.approximated):
        print(f"commcost: {line}", file=sys.stderr)
    if args.format != "table":  # stdout stays machine-readable
        for line in grid.written:
            print(f"commcost: wrote {line}", file=sys.stderr)
    chosen, result, default, default_s = grid.result.chosen, grid.result, grid.default, grid.default_s
    if args.format == "json":
        print(json.dumps(grid.document(), indent=2))
    elif args.format == "csv":
        print(grid_csv(grid.procs, grid.sizes, {
            "algorithm": lambda i, j: chosen[i][j].algorithm.key,
            "id": lambda i, j: chosen[i][j].algorithm.id,
            "params": lambda i, j: ";".join(f"{k}={v}" for k, v in sorted(chosen[i][j].params.items())),
            "time_s": lambda i, j: float(result.best_time_s[i, j]),
            **({"ompi_default": lambda i, j: default[i][j].label if default[i][j] else "",
                "ompi_default_time_s": lambda i, j: float(default_s[i, j])} if default else {}),
        }), end="")
    else:
        print(render_rules(result.selection, grid.title))
        if default:
            print()
            print(render_penalties({"Open MPI default": grid.penalty},
                                   f"{grid.default_title} against the model's choice, both priced by {args.model}:"))
        if args.plot:
            print(f"\n  map: {args.plot}")
        for line in grid.written:
            print(f"  wrote {line}")
    return 0


def _page(args, grid: SelectGrid):
    """select's HTML report: what was priced, the map beside the default's, the rules, the default's penalty."""
    from commcost.report.html_page import HtmlPage
    from commcost.report.provenance import run_provenance
    from commcost.report.selection_page import add_selection
    from commcost.report.selection_report import render_rules

    collective, procs, sizes, result, penalty, title = (grid.collective, grid.procs, grid.sizes, grid.result,
                                                        grid.penalty, grid.title)
    page = HtmlPage(f"commcost select: {collective.value} ({args.library})",
                    run_provenance(getattr(args, "argv", None), {"parameters": args.params, "platform": args.platform}))
    page.section("What was priced")
    page.table(("model", "candidates", "process counts", "sizes", "points"),
               [[args.model, len(result.choices), f"{procs[0]}..{procs[-1]} ({len(procs)})",
                 f"{sizes[0]}..{sizes[-1]} B ({len(sizes)})", len(procs) * len(sizes)]])
    page.paragraph("Every point is a prediction: no measurement backs this selection (commcost tune and commcost "
                   "verify measure one).")
    add_selection(page, "Selection", title=title, size_title=collective.size_meaning, procs=procs, sizes=sizes,
                  chosen=result.chosen, rules_text=render_rules(result.selection, title), default=grid.default or None,
                  default_title=grid.default_title, penalties={"Open MPI default": penalty} if penalty else None,
                  penalty_caption=f"{grid.default_title} against the model's choice, both priced by {args.model}",
                  map_png=grid.map_png)
    if grid.written:
        page.section("Files written")
        page.table(("file",), [[line] for line in grid.written])
    return page


