"""``commcost select``: the predicted best algorithm (and tunables) for every (P, n) of a grid, as rules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.cli.options import (PAPER004, add_html_option, add_strict_option, model_from, paper004_pricer,
                                  strictness, write_html)
from commcost.cli.registry import command
from commcost.errors import InputError

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


def _values(text: str, option: str, sizes: bool = False) -> list[int]:
    from commcost.cli.grid_options import parse_points

    return parse_points(text, option, 0 if sizes else 1, sizes=sizes) if text else []


def variables(args: argparse.Namespace) -> dict[str, list[int]]:
    """The decision variables the options name."""
    out = {"segsize": _values(args.segsizes, "--segsizes", sizes=True)}
    if args.fanouts:
        out["fanout"] = _values(args.fanouts, "--fanouts")
    if args.radixes:
        out["radix"] = _values(args.radixes, "--radixes")
    return {k: v for k, v in out.items() if v}


def algorithm_names(text: str | None, collective, library: str) -> list[str]:
    """``--algorithms``: the names listed (none: every algorithm), each one the library models for the
    collective; an empty list or an unknown name is an error naming the valid ones."""
    from commcost.collectives import algorithms

    if text is None:
        return []
    names = [a.strip() for a in text.split(",")]
    known = sorted({a.name for a in algorithms(collective) if a.library == library})
    if not any(names) or not all(names):
        raise InputError(f"expected a comma list of {library} {collective.value} algorithm names "
                         f"({', '.join(known)}), got {text!r}", where="--algorithms")
    unknown = [n for n in names if n not in known]
    if unknown and known:  # (none known: the library models no such collective, said below)
        raise InputError(f"no {library} {collective.value} algorithm named {', '.join(map(repr, unknown))}; "
                         f"expected some of {', '.join(known)}", where="--algorithms")
    return names


def make_pricer(args: argparse.Namespace, procs: list[int], refused: list[str] | None = None):
    """The platform, a mapping per P and a pricer for the chosen model; errors name the file. Candidates
    too large to record are said in ``refused``."""
    from commcost.cli.options import load_mapping
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.selection.select import schedule_pricer

    platform, spec = load_platform(args.platform)
    params = load_params(args.params, strict=strictness(args))
    for nprocs in (procs[0], procs[-1]):  # fail early, with the option or file named, if P does not fit
        load_mapping(args, platform, spec, nprocs)
    mapping_of = lambda nprocs: load_mapping(args, platform, spec, nprocs)  # noqa: E731
    if args.model == PAPER004:
        if args.collective != "bcast" or args.library != "ompi":
            raise InputError(f"--model {PAPER004} models Open MPI broadcasts; expected bcast and --library ompi",
                             where="--model")
        return paper004_pricer(params.for_model(PAPER004), mapping_of, args.root)
    try:
        model = model_from(params, args.model)
    except InputError as exc:
        raise exc.located(source=str(args.params)) from None
    # what the rows a model was fitted to hold (tune --from-measurements: OSU's mean over ranks, reductions
    # counted in 4-byte floats); a select prices the collective's end, calls counted in bytes
    price = schedule_pricer(model, platform, mapping_of, args.root, getattr(args, "statistic", "max"),
                            refused=refused, element_bytes=getattr(args, "element_bytes", 1))
    if getattr(args, "algorithm_fit", False):
        price = with_algorithm_fits(args, params, price)
    return price


def with_algorithm_fits(args: argparse.Namespace, params, price):
    """:func:`commcost.selection.select.scaled_pricer` with the file's fits for ``args.collective``; a fit made
    under another model than ``--model`` is an error naming the file and the field."""
    from commcost.io.params_file import ALGORITHM_FIT
    from commcost.selection.select import scaled_pricer

    fits = params.sections.get(ALGORITHM_FIT, {}).get(args.collective, {})
    if not fits:
        raise InputError(f"no [{ALGORITHM_FIT}.{args.collective}.<algorithm>] tables; run commcost calibrate "
                         f"--benchmarks pingpong,{args.collective}", source=str(args.params), where="--algorithm-fit")
    for name, fit in fits.items():
        if fit.model and fit.model != args.model:
            raise InputError(f"fitted under {fit.model}, priced here under {args.model}; expected --model "
                             f"{fit.model}", source=str(args.params),
                             where=f"{ALGORITHM_FIT}.{args.collective}.{name}.model")
    return scaled_pricer(price, fits)


@command("select", "predict the best algorithm for every process count and message size; write rules",
         _configure)
def _select(args: argparse.Namespace) -> int:
    from commcost.cli.grid_options import parse_points
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


HAN_FIRST = "coll/han on several nodes, "


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


def ompi_default_times(args: argparse.Namespace, collective, procs, sizes, price, result, han_as=None):
    """Open MPI's default at every point (None where commcost has no schedule of its pick) and its
    predicted time by the same pricer (``[p, m]``, inf where unpriced); ([], None) for other libraries.

    The default is coll/han where commcost models han's collective (its schedule is tuned's fixed decision
    where han steps aside: one node, one rank per node, unequal nodes), else tuned's fixed decision.
    ``han_as(choice)``: han's default under other global tunables (a deployed configuration)."""
    import numpy as np

    from commcost.selection.ompi_fixed import as_choice, decide

    if args.library != "ompi":
        return [], None
    han = han_default(collective)
    if han is not None and han_as is not None:
        han = han_as(han)
    picks = [[han or as_choice(decide(collective, p, m)) for m in sizes] for p in procs]
    times = np.full((len(procs), len(sizes)), np.inf)
    for i, nprocs in enumerate(procs):
        for choice in {c for c in picks[i] if c is not None}:
            if choice in result.choices:
                row = result.time_of(choice)[i]
            else:
                row = price(choice, nprocs, sizes, None)
            for j in range(len(sizes)):
                if picks[i][j] == choice:
                    times[i, j] = row[j]
    return picks, times


def han_default(collective):
    """Open MPI 5's coll/han with its defaults as a Choice, where commcost models han's ``collective``."""
    from commcost.collectives import find
    from commcost.collectives.ompi_han import default_name
    from commcost.errors import InputError
    from commcost.selection.decision import Choice

    try:
        algorithm = find(collective, f"ompi.{default_name(collective)}")
    except InputError:
        return None
    return Choice(algorithm, algorithm.resolve_params())


def predicted_penalty(default_s, result) -> dict:
    """The summary of Open MPI's default against the model's best, by the model (paper 004 Table 3 style)."""
    import numpy as np

    from commcost.selection.evaluate import summary_of

    return summary_of(100.0 * (default_s / result.best_time_s - 1.0), np.isfinite(default_s))


def finite_or_none(value: float) -> float | None:
    """A time for a JSON report: the value, or None where it is NaN or infinite."""
    return float(value) if value == value and value != float("inf") else None


def write_tuning_files(args: argparse.Namespace, selections) -> list[str]:
    """Write the rules files the options ask for; returns what was written, one line each."""
    written = []
    if getattr(args, "write_ompi_rules", None):
        from commcost.io.ompi_rules import write_ompi_rules

        write_ompi_rules(selections, args.write_ompi_rules, args.ompi_rules_format)
        written.append(f"Open MPI rules ({args.ompi_rules_format}): {args.write_ompi_rules}")
    if getattr(args, "write_mpich_json", None):
        from commcost.io.mpich_json import write_mpich_json

        base = getattr(args, "mpich_base", None)
        write_mpich_json(selections, args.write_mpich_json, base)
        written.append(f"MPICH selection JSON: {args.write_mpich_json}"
                       + ("" if base else " (only these collectives: MPICH aborts on any other unless merged "
                                          "into a complete file, see --mpich-base)"))
    return written
