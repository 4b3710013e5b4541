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
from commcost.collectives.barrier import SKEW_CHOICES
from commcost.workflows.evaluate import EvaluateOptions, Evaluation, choice_label, evaluate_selection, strategy_line
from commcost.workflows.fit import barrier_line
from commcost.workflows.options import from_namespace


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
    p.add_argument("--barrier-skew", choices=SKEW_CHOICES,
                   help="--from-collectives: fit each rank's time from when the barrier before the timed call let "
                        "it go (commcost fit --barrier-skew)")
    p.add_argument("--format", default="table", choices=["table", "json"])
    add_unit_option(p)
    add_html_option(p)


def _page(args: argparse.Namespace, evaluation: Evaluation):
    """``--html``: the penalties, the model's picks beside the measured best on a map, and every point."""
    from commcost.report.html_page import HtmlPage
    from commcost.report.provenance import run_provenance
    from commcost.report.selection_map import figure_png, map_figure
    from commcost.report.selection_page import PENALTY_HEADERS, add_cross_validation, penalty_rows
    from commcost.units import format_nbytes

    collective, result, scores, names = evaluation.collective, evaluation.result, evaluation.scores, evaluation.names
    strategy = evaluation.strategy
    page = HtmlPage(f"commcost evaluate-selection: {collective.value}",
                    run_provenance(getattr(args, "argv", None),
                                   {"train": args.train, "test": args.test, "platform": args.platform}))
    page.section("Penalty against the measured best")
    page.paragraph(f"Selection by {args.model} fitted on {args.train.name}, scored on {args.test.name}: "
                   f"{len(scores)} points, {evaluation.nchoices} algorithms measured (paper 004 Table 3).")
    page.table(PENALTY_HEADERS, penalty_rows(evaluation.totals))
    add_cross_validation(page, {collective.value: None if strategy is None else strategy.to_dict()})
    procs, sizes = list(result.procs), list(result.sizes)
    best = {(s.nprocs, s.nbytes): s.best for s in scores}
    measured = [[best.get((p, m)) for m in sizes] for p in procs]
    page.figure(figure_png(map_figure(procs, sizes, result.chosen,
                                      f"{collective.value}: {evaluation.label} and the measured best",
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
    evaluation = evaluate_selection(from_namespace(EvaluateOptions, args))
    if args.html:
        write_html(args, _page(args, evaluation))
    if args.format == "json":
        print(json.dumps(evaluation.to_dict(), indent=2))
        return 0
    _print_table(evaluation, args.unit)
    return 0


def _print_table(evaluation: Evaluation, unit: str) -> None:
    """Every point's measured best and each strategy's pick and penalty, the summary, the cross-validated
    strategy and the in-sample fit of the collective's algorithms."""
    from commcost.report.selection_report import render_penalties
    from commcost.units import format_nbytes, format_seconds

    o, collective, scores, names = evaluation.options, evaluation.collective, evaluation.scores, evaluation.names
    print(f"{collective.value}: selection by {o.model} fitted on {o.train}, scored on {o.test} "
          f"({len(scores)} points, {evaluation.nchoices} algorithms measured)\n")
    head = f"  {'P':>5} {'n':>9}  {'measured best':<26}" + "".join(f" {n[:24]:<32}" for n in names)
    print(head)
    for s in scores:
        cells = []
        for name in names:
            choice, _, pen = s.picks[name]
            label = choice_label(choice) or "-"
            cells.append(f" {label[:22]:<22} {pen:>+7.1f}%" if pen == pen else f" {label[:22]:<22} {'n/a':>8}")
        print(f"  {s.nprocs:>5} {format_nbytes(s.nbytes):>9}  {s.best.label[:14]:<14} "
              f"{format_seconds(s.best_time_s, unit):>11}" + " ".join(cells))
    print()
    print(render_penalties(evaluation.totals, "penalty against the measured best (paper 004 Table 3):"))
    if evaluation.strategy is not None:
        print("\n" + strategy_line(evaluation.strategy))
    fitted = (evaluation.fit_summary or {}).get("per_algorithm", {})
    corrected = (evaluation.fit_summary or {}).get("per_algorithm_corrected", {})
    mine = {k: v for k, v in fitted.items() if k.split(".")[0] == collective.value}
    if mine:
        more = any(k in corrected for k in mine)
        print(f"\nin-sample fit of the {collective.value} algorithms (the {evaluation.statistic} over ranks the rows "
              "hold): measured / model, median |error|" + ("; then with the corrections cross-validation kept, "
                                                            "each point's regime's" if more else ""))
        for name, row in sorted(mine.items()):
            extra = f" {corrected[name]['mu']:>7.3f} {corrected[name]['median_abs_pct']:>7.0f}%" if name in corrected \
                else ""
            print(f"  {name:<40} {row['mu']:>7.3f} {row['median_abs_pct']:>7.0f}%{extra}  "
                  f"({int(row['points'])} points)")
    line = barrier_line((evaluation.fit_summary or {}).get("barrier_skew") or {})
    if line:
        print(line)
