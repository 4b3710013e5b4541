"""``commcost evaluate-selection``: fit on one measurements table, score the selection on another.

The test table must hold measured times of several algorithms of the
collective at the same (P, n) points (e.g. imported OSU runs with forced
algorithms, or ``commcost calibrate`` bcast rows). The training side is a
measurements CSV (fitted here with ``--model``) or a parameter file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import add_html_option, add_strict_option, add_unit_option, write_html
from commcost.cli.registry import command
from commcost.errors import InputError
from commcost.workflows.pricing import model_from
from commcost.workflows.evaluate import (choice_label, cross_validated, measured_table, most_common, strategy_line,
                                        trained_params)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--train", required=True, type=Path,
                   help="measurements CSV to fit the model on, or a parameter file (.toml) already fitted")
    add_strict_option(p)
    p.add_argument("--test", required=True, type=Path, help="measurements CSV with times of several algorithms")
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml) the test ran on")
    p.add_argument("--ppn", type=int, help="ranks per node of the test runs (sequential mapping)")
    p.add_argument("--mapping", help="rank placement of the test runs instead (round-robin, file:PATH, ...)")
    p.add_argument("--model", default="hockney", choices=["hockney", "taulop", "loggp", "loggph", "hloggp"],
                   help="model to fit and select with (default hockney)")
    p.add_argument("--collective", default="bcast", help="collective of the test rows (default bcast)")
    p.add_argument("--library", default="ompi", choices=["ompi", "mpich"])
    p.add_argument("--root", type=int, default=0)
    p.add_argument("--transfers", action="append", default=[], metavar="CHANNEL=K",
                   help="tau-Lop transfers per transmission of a channel when fitting (default shm=2)")
    p.add_argument("--algorithm-fit", action="store_true",
                   help="correct each Open MPI algorithm's price by the trained parameter file's "
                        "[algorithm_fit.<collective>.<name>] (a_s + b T_model, from commcost calibrate)")
    p.add_argument("--from-collectives", action="store_true",
                   help="fit the model to the training rows' measured collective algorithms (OSU sweeps per "
                        "forced algorithm, commcost import coltune) instead of point-to-point rows")
    p.add_argument("--train-max-procs", type=int, metavar="N", help="train on the rows of at most N ranks")
    p.add_argument("--test-min-procs", type=int, metavar="N", help="score on the points of at least N ranks")
    p.add_argument("--format", default="table", choices=["table", "json"])
    add_unit_option(p)
    add_html_option(p)


def _page(args: argparse.Namespace, collective, label: str, result, scores, names, totals, nchoices: int,
          strategy=None):
    """``--html``: the penalties, the model's picks beside the measured best on a map, and every point."""
    from commcost.report.html_page import HtmlPage
    from commcost.report.provenance import run_provenance
    from commcost.report.selection_map import figure_png, map_figure
    from commcost.report.selection_page import PENALTY_HEADERS, add_cross_validation, penalty_rows
    from commcost.units import format_nbytes

    page = HtmlPage(f"commcost evaluate-selection: {collective.value}",
                    run_provenance(getattr(args, "argv", None),
                                   {"train": args.train, "test": args.test, "platform": args.platform}))
    page.section("Penalty against the measured best")
    page.paragraph(f"Selection by {args.model} fitted on {args.train.name}, scored on {args.test.name}: "
                   f"{len(scores)} points, {nchoices} algorithms measured (paper 004 Table 3).")
    page.table(PENALTY_HEADERS, penalty_rows(totals))
    add_cross_validation(page, {collective.value: None if strategy is None else strategy.to_dict()})
    procs, sizes = list(result.procs), list(result.sizes)
    best = {(s.nprocs, s.nbytes): s.best for s in scores}
    measured = [[best.get((p, m)) for m in sizes] for p in procs]
    page.figure(figure_png(map_figure(procs, sizes, result.chosen, f"{collective.value}: {label} and the measured best",
                                      size_title=collective.size_meaning, default=measured,
                                      default_title="measured best", none_label="(not measured)")),
                "Left: the model's pick; right: the algorithm measured fastest. Same colour and marker, same "
                "algorithm.", alt="model picks against measured best")
    page.section("Every point")
    page.table(["P", "nbytes", "measured best", "best time (s)", *(f"{n}: pick, penalty %" for n in names)],
               [[s.nprocs, format_nbytes(s.nbytes), s.best.label, s.best_time_s,
                 *(f"{choice_label(s.picks[n][0]) or '-'}, {s.picks[n][2]:+.1f}" if s.picks[n][2] == s.picks[n][2]
                   else f"{choice_label(s.picks[n][0]) or '-'}, n/a" for n in names)] for s in scores])
    return page


@command("evaluate-selection", "fit on one measurements table and score the model's selection on another",
         _configure)
def _evaluate(args: argparse.Namespace) -> int:
    from commcost.workflows.pricing import load_mapping
    from commcost.collectives import Collective
    from commcost.io.measurements import read_measurements
    from commcost.io.platform_file import load_platform
    from commcost.report.selection_report import render_penalties
    from commcost.selection.evaluate import best_single, penalties, summary
    from commcost.selection.ompi_fixed import as_choice, decide
    from commcost.selection.select import schedule_pricer, select
    from commcost.units import format_nbytes, format_seconds

    try:
        collective = Collective(args.collective)
    except ValueError:
        raise InputError(f"expected one of {[c.value for c in Collective]}, got {args.collective!r}",
                         where="--collective") from None
    measured, measured_default = measured_table(args.test, collective, args.library, low=args.test_min_procs)
    params = trained_params(args)
    try:
        model = model_from(params, args.model)
    except InputError as exc:
        raise exc.located(source=str(args.train)) from None
    platform, spec = load_platform(args.platform)
    procs = sorted({p for p, _ in measured})
    sizes = sorted({n for _, n in measured})
    choices = sorted({c for times in measured.values() for c in times}, key=lambda c: (c.algorithm.id or 0, c.label))
    tested = read_measurements(args.test)
    statistic = most_common(tested, collective, "rank_statistic", "max")  # what the test rows hold (OSU: mean)
    price = schedule_pricer(model, platform, lambda n: load_mapping(args, platform, spec, n), args.root, statistic,
                            element_bytes=most_common(tested, collective, "element_size", 1))
    if args.algorithm_fit:
        from commcost.workflows.select import with_algorithm_fits

        if args.train.suffix.lower() != ".toml" and not args.from_collectives:
            raise InputError("per-algorithm fits come from a parameter file or --from-collectives; expected "
                             "--train PARAMS.toml", where="--algorithm-fit")
        from commcost.io.params_file import ALGORITHM_FIT

        scaled = True
        if args.from_collectives and not params.sections.get(ALGORITHM_FIT, {}).get(collective.value):
            scaled = False  # cross-validation over P kept no per-algorithm scale for this collective
        else:
            price = with_algorithm_fits(argparse.Namespace(collective=collective.value, model=args.model,
                                                            params=args.train), params, price)
    result = select(collective, args.library, choices, procs, sizes, price, source=f"model {args.model}")

    def ompi_default(nprocs: int, nbytes: int):
        if args.library != "ompi":
            return None
        return as_choice(decide(collective, nprocs, nbytes))

    how = ""
    if args.algorithm_fit:
        how = ", fitted per algorithm" if scaled else ", per-algorithm scale not kept by cross-validation"
    label = f"model-based ({args.model}{how})"
    strategies = {label: result.selection.choice, "Open MPI fixed decision": ompi_default}
    if args.train.suffix.lower() != ".toml":  # the one algorithm a site tuned on the training rows would keep
        try:
            trained_best = best_single(measured_table(args.train, collective, args.library,
                                                      high=args.train_max_procs)[0])
        except InputError:
            trained_best = None
        if trained_best is not None:
            strategies[f"best single on train ({trained_best.label})"] = lambda nprocs, nbytes: trained_best
    timed = {"Open MPI default (measured)": measured_default} if measured_default else {}
    mapping_of = lambda n: load_mapping(args, platform, spec, n)  # noqa: E731
    strategy, strategy_pick = cross_validated(args, collective, platform, mapping_of, choices, statistic)
    if strategy is not None and strategy_pick is not None and measured_default:
        cv_label = f"commcost, cross-validated ({strategy.chosen})"
        timed[cv_label] = {pt: (measured_default.get(pt, float("nan")) if (pick := strategy_pick(*pt)) is None
                                else times.get(pick, float("nan"))) for pt, times in measured.items()}
    scores = penalties(measured, strategies, timed)
    names = [*strategies, *timed, "best single algorithm"]
    totals = {name: summary(scores, name) for name in names}
    if args.html:
        write_html(args, _page(args, collective, label, result, scores, names, totals, len(choices), strategy))
    if args.format == "json":
        print(json.dumps({
            "collective": collective.value, "model": args.model, "train": str(args.train), "test": str(args.test),
            "train_max_procs": args.train_max_procs, "test_min_procs": args.test_min_procs,
            "statistic": statistic, "fit": getattr(args, "fit_summary", None), "summary": totals,
            "strategy": None if strategy is None else strategy.to_dict(),
            "points": [{"nprocs": s.nprocs, "nbytes": s.nbytes, "best": s.best.label, "best_time_s": s.best_time_s,
                        "picks": {k: {"choice": choice_label(c), "time_s": t, "penalty_pct": pen}
                                  for k, (c, t, pen) in s.picks.items()}} for s in scores]}, indent=2))
        return 0
    print(f"{collective.value}: selection by {args.model} fitted on {args.train}, scored on {args.test} "
          f"({len(scores)} points, {len(choices)} algorithms measured)\n")
    head = f"  {'P':>5} {'n':>9}  {'measured best':<26}" + "".join(f" {n[:24]:<32}" for n in names)
    print(head)
    for s in scores:
        cells = []
        for name in names:
            choice, _, pen = s.picks[name]
            label = choice_label(choice) or "-"
            cells.append(f" {label[:22]:<22} {pen:>+7.1f}%" if pen == pen else f" {label[:22]:<22} {'n/a':>8}")
        print(f"  {s.nprocs:>5} {format_nbytes(s.nbytes):>9}  {s.best.label[:14]:<14} "
              f"{format_seconds(s.best_time_s, args.unit):>11}" + " ".join(cells))
    print()
    print(render_penalties(totals, "penalty against the measured best (paper 004 Table 3):"))
    if strategy is not None:
        print("\n" + strategy_line(strategy))
    fitted = (getattr(args, "fit_summary", None) or {}).get("per_algorithm", {})
    mine = {k: v for k, v in fitted.items() if k.split(".")[0] == collective.value}
    if mine:
        print(f"\nin-sample fit of the {collective.value} algorithms (the {statistic} over ranks the rows hold): "
              "measured / model, median |error|")
        for name, row in sorted(mine.items()):
            print(f"  {name:<40} {row['mu']:>7.3f} {row['median_abs_pct']:>7.0f}%  ({int(row['points'])} points)")
    return 0
