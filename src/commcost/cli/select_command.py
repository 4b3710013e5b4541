"""``commcost select``: the predicted best algorithm (and tunables) for every (P, n) of a grid, as rules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.cli.options import add_html_option, add_strict_option, write_html
from commcost.cli.registry import command
from commcost.errors import InputError
from commcost.workflows.pricing import PAPER004
from commcost.workflows.select import (HAN_FIRST, algorithm_names, finite_or_none, han_default, make_pricer,
                                      ompi_default_times, predicted_penalty, variables, write_tuning_files)

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
    from commcost.workflows.grid import parse_points
    from commcost.collectives import Collective
    from commcost.report.selection_map import plot_map
    from commcost.report.selection_report import grid_csv, render_penalties, render_rules, rule_rows
    from commcost.selection.select import candidates, select

    collective = Collective(args.collective)
    if args.write_ompi_rules and args.library != "ompi":
        raise InputError("an Open MPI rules file needs Open MPI algorithms; expected --library ompi",
                         where="--write-ompi-rules")
    if args.write_mpich_json and args.library != "mpich":
        raise InputError("an MPICH selection file needs MPICH algorithms; expected --library mpich",
                         where="--write-mpich-json")
    procs = parse_points(args.procs, "--procs", 2)
    sizes = parse_points(args.sizes, "--sizes", 1, sizes=True)
    only = algorithm_names(args.algorithms, collective, args.library)
    choices = candidates(collective, args.library, variables(args), only or None)
    if not choices and not only:
        from commcost.collectives import algorithms

        modelled = sorted({a.collective.value for a in algorithms() if a.library == args.library})
        raise InputError(f"commcost models no {args.library} {collective.value} algorithm; it models {args.library}'s "
                         f"{', '.join(modelled) or 'none'}", where="--library")
    if not choices:
        raise InputError(f"no {args.library} {collective.value} algorithm matches {args.algorithms!r}",
                         where="--algorithms")
    refused: list[str] = []
    price = make_pricer(args, procs, refused)
    result = select(collective, args.library, choices, procs, sizes, price, source=f"model {args.model}")
    chosen = result.chosen
    default, default_s = ompi_default_times(args, collective, procs, sizes, price, result)
    title = (f"{collective.value}: best {args.library} algorithm by {args.model} "
             f"({len(choices)} candidates, {len(procs)} process counts x {len(sizes)} sizes)")
    penalty = predicted_penalty(default_s, result) if default else None
    default_title = (f"Open MPI's default ({HAN_FIRST if han_default(collective) else ''}tuned's fixed decision "
                     "on one)")
    map_png = None
    if args.plot:
        map_png = plot_map(args.plot, procs, sizes, chosen, title, size_title=collective.size_meaning,
                           default=default or None, default_title=default_title)
    written = write_tuning_files(args, [result.selection])
    if args.html:
        write_html(args, _page(args, collective, procs, sizes, result, default, default_title, penalty, title,
                               written, map_png))
    from commcost.collectives.recorder import LIMIT_VARIABLE

    for line in dict.fromkeys(refused):  # on stderr: stdout stays what the format says
        print(f"commcost: not priced (never picked; --max-transmissions or {LIMIT_VARIABLE} raises the limit): "
              f"{line}", file=sys.stderr)
    if args.format != "table":  # stdout stays machine-readable
        for line in written:
            print(f"commcost: wrote {line}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps({"collective": collective.value, "library": args.library, "model": args.model,
                          "procs": procs, "sizes": sizes, "rules": rule_rows(result.selection),
                          "grid": [{"nprocs": p, "nbytes": m, "algorithm": chosen[i][j].algorithm.key,
                                    "params": dict(chosen[i][j].params),
                                    "time_s": float(result.best_time_s[i, j]),
                                    **({"ompi_default": default[i][j].label if default[i][j] else None,
                                        "ompi_default_time_s": finite_or_none(default_s[i, j])} if default else {})}
                                   for i, p in enumerate(procs) for j, m in enumerate(sizes)],
                          **({"ompi_default_penalty": predicted_penalty(default_s, result)} if default else {})},
                         indent=2))
    elif args.format == "csv":
        print(grid_csv(procs, sizes, {
            "algorithm": lambda i, j: chosen[i][j].algorithm.key,
            "id": lambda i, j: chosen[i][j].algorithm.id,
            "params": lambda i, j: ";".join(f"{k}={v}" for k, v in sorted(chosen[i][j].params.items())),
            "time_s": lambda i, j: float(result.best_time_s[i, j]),
            **({"ompi_default": lambda i, j: default[i][j].label if default[i][j] else "",
                "ompi_default_time_s": lambda i, j: float(default_s[i, j])} if default else {}),
        }), end="")
    else:
        print(render_rules(result.selection, title))
        if default:
            print()
            print(render_penalties({"Open MPI default": penalty},
                                   f"{default_title} against the model's choice, both priced by {args.model}:"))
        if args.plot:
            print(f"\n  map: {args.plot}")
        for line in written:
            print(f"  wrote {line}")
    return 0


def _page(args, collective, procs, sizes, result, default, default_title: str, penalty, title: str, written,
          map_png):
    """select's HTML report: what was priced, the map beside the default's, the rules, the default's penalty."""
    from commcost.report.html_page import HtmlPage
    from commcost.report.provenance import run_provenance
    from commcost.report.selection_page import add_selection
    from commcost.report.selection_report import render_rules

    page = HtmlPage(f"commcost select: {collective.value} ({args.library})",
                    run_provenance(getattr(args, "argv", None), {"parameters": args.params, "platform": args.platform}))
    page.section("What was priced")
    page.table(("model", "candidates", "process counts", "sizes", "points"),
               [[args.model, len(result.choices), f"{procs[0]}..{procs[-1]} ({len(procs)})",
                 f"{sizes[0]}..{sizes[-1]} B ({len(sizes)})", len(procs) * len(sizes)]])
    page.paragraph("Every point is a prediction: no measurement backs this selection (commcost tune and commcost "
                   "verify measure one).")
    add_selection(page, "Selection", title=title, size_title=collective.size_meaning, procs=procs, sizes=sizes,
                  chosen=result.chosen, rules_text=render_rules(result.selection, title), default=default or None,
                  default_title=default_title, penalties={"Open MPI default": penalty} if penalty else None,
                  penalty_caption=f"{default_title} against the model's choice, both priced by {args.model}",
                  map_png=map_png)
    if written:
        page.section("Files written")
        page.table(("file",), [[line] for line in written])
    return page


