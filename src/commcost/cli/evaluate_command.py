"""``commcost evaluate-selection``: fit on one measurements table, score the selection on another.

The test table must hold measured times of several algorithms of the
collective at the same (P, n) points (e.g. imported OSU runs with forced
algorithms, or ``commcost calibrate`` bcast rows). The training side is a
measurements CSV (fitted here with ``--model``) or a parameter file.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path

from commcost.cli.options import (add_html_option, add_strict_option, add_unit_option, model_from, strictness,
                                  transfer_counts, write_html)
from commcost.cli.registry import command
from commcost.errors import InputError


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


def _label(choice) -> str | None:
    """A pick for people: the algorithm's label; a strategy measured as such (Open MPI's own decision): its
    own pick; none: None."""
    if choice is None:
        return None
    return getattr(choice, "label", "its own pick")


def _in_range(nprocs: int, low: int | None, high: int | None) -> bool:
    return (low is None or nprocs >= low) and (high is None or nprocs <= high)


def measured_table(path: Path, collective, library: str, low: int | None = None, high: int | None = None):
    """From the collective's rows of a measurements CSV with ``low <= P <= high`` (several runs of one point:
    their mean): ``{(P, n): {choice: seconds}}`` of the forced algorithms, each resolved in the registry, and
    ``{(P, n): seconds}`` of Open MPI's own decision (algorithm ``default``: coll/tuned's algorithm 0 in an
    OSU sweep). n is the size commcost's Case counts (:attr:`Measurement.case_nbytes`: a reduce_scatter
    row of OSU's whole vector, each rank's block)."""
    from commcost.collectives import find
    from commcost.io.measurements import read_measurements
    from commcost.selection.decision import Choice

    sums: dict = defaultdict(lambda: defaultdict(list))
    for row in read_measurements(path):
        if row.collective != collective.value or not row.algorithm or not _in_range(row.nprocs, low, high) \
                or row.case_nbytes <= 0:
            continue
        if row.algorithm == "default":
            sums[(row.nprocs, row.case_nbytes)]["default"].append(row.time_s_mean)
            continue
        name = row.algorithm if "." in row.algorithm or row.algorithm.isdigit() else f"{library}.{row.algorithm}"
        try:
            algorithm = find(collective, name)
        except InputError as exc:
            raise InputError(f"{exc.message}", source=str(path), where="algorithm") from None
        given = {"segsize": row.segsize} if row.segsize and any(p.name == "segsize" for p in algorithm.params) \
            else {}
        choice = Choice(algorithm, algorithm.resolve_params(given))
        sums[(row.nprocs, row.case_nbytes)][choice].append(row.time_s_mean)
    means = {point: {c: sum(v) / len(v) for c, v in times.items()} for point, times in sums.items()}
    defaults = {point: times.pop("default") for point, times in means.items() if "default" in times}
    table = {point: times for point, times in means.items() if len(times) >= 2}
    if not table:
        raise InputError(f"no (P, n) point with measured times of two or more {collective.value} algorithms",
                         source=str(path))
    return table, defaults


def most_common(rows, collective, attribute: str, default):
    """The most frequent value of ``attribute`` among the collective's ``rows`` (``default`` without any):
    ``rank_statistic``, ``element_size`` (OSU's reductions count 4-byte floats)."""
    from collections import Counter

    found = Counter(getattr(row, attribute) for row in rows if row.collective == collective.value)
    return found.most_common(1)[0][0] if found else default


def trained_params(args: argparse.Namespace):
    """The parameter set: loaded from a .toml, or fitted from a measurements CSV with ``--model``."""
    from commcost.io.params_file import load_params, write_params

    if args.train.suffix.lower() == ".toml":
        if args.from_collectives or args.train_max_procs:
            raise InputError("a parameter file is already fitted; --from-collectives and --train-max-procs "
                             "take a measurements CSV", where="--train")
        return load_params(args.train, strict=strictness(args))
    if args.from_collectives:
        return _fit_from_collectives(args)
    from commcost.calibration.from_measurements import fit_channels, model_section
    from commcost.io.measurements import measurement_columns, read_measurements

    transfers = transfer_counts(args.transfers)
    try:
        fits = fit_channels(measurement_columns(read_measurements(args.train)), args.model, transfers)
    except InputError as exc:
        raise exc.located(source=str(args.train)) from None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trained.toml"
        write_params(path, {args.model: model_section(args.model, fits)}, {"fitted_from": str(args.train)})
        return load_params(path)


class RowFits:
    """The fits of one measurements table's forced algorithms (every collective it holds) by the largest P
    they take, each fitted once: the model's own fit and cross-validation's folds are the same fit of the
    same rows (a fold fitted to one collective's rows alone vouched for a model the selection never used),
    and each collective's folds are the others' too. ``start``: where a fold's fit begins (the whole fit's
    theta)."""

    def __init__(self, rows, platform, model: str, known: dict | None = None) -> None:
        self.rows, self.platform, self.model = rows, platform, model
        self._fits: dict = dict(known or {})  # max_procs -> fit (or the InputError it raised)

    def fit(self, max_procs: int | None, start=None):
        """The fit of the rows of at most ``max_procs`` ranks (all: None); an InputError is kept and raised
        again."""
        from commcost.cli.fit_command import fit_collective_rows

        if max_procs not in self._fits:
            try:
                self._fits[max_procs] = fit_collective_rows(self.rows, self.platform, self.model, None, max_procs,
                                                            start=start)
            except InputError as exc:
                self._fits[max_procs] = exc
        fit = self._fits[max_procs]
        if isinstance(fit, InputError):
            raise fit
        return fit


def _fit_from_collectives(args: argparse.Namespace):
    """Parameters fitted to the training rows' forced collective algorithms (every collective they hold)."""
    from commcost.io.measurements import read_measurements
    from commcost.io.platform_file import load_platform

    platform, _ = load_platform(args.platform)
    args.row_fits = RowFits(read_measurements(args.train), platform, args.model)
    try:
        fit = args.row_fits.fit(args.train_max_procs)
    except InputError as exc:
        raise exc.located(source=str(args.train)) from None
    args.fit_summary = {**fit.summary(), "unidentified": fit.unidentified, "per_algorithm": fit.per_algorithm}
    return _params_of(fit, args.train)


def _params_of(fit, train: Path):
    """A collective fit as a parameter set (through the file the fit would write)."""
    from commcost.cli.fit_command import collective_fit_sections
    from commcost.io.params_file import load_params, write_params

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trained.toml"
        write_params(path, collective_fit_sections(fit), {"fitted_from": str(train)})
        return load_params(path)


def cross_validated(args: argparse.Namespace, collective, platform, mapping_of, choices, statistic: str):
    """:func:`strategy_for` on ``evaluate-selection``'s training rows; (None, None) where the training is a
    parameter file (nothing to refit)."""
    if args.train.suffix.lower() == ".toml" or not args.from_collectives:
        return None, None
    return strategy_for(args.train, collective, args.library, args.model, platform, mapping_of, args.root,
                        statistic, args.train_max_procs, choices, getattr(args, "row_fits", None))


def strategy_for(measurements: Path, collective, library: str, model: str, platform, mapping_of, root: int,
                 statistic: str, max_procs: int | None = None, choices=None, fits: RowFits | None = None):
    """The way of choosing forward cross-validation over the P of ``measurements`` (rows of at most
    ``max_procs`` ranks) keeps for ``collective`` (:mod:`commcost.selection.strategies`: model, anchored,
    best constant or the library's default), the model refitted below each held-out P to the rows it is
    fitted to for the selection (every collective's: ``fits``, shared between collectives); returns it and
    its pick function at any (P, n) (None: no rule), or (None, None) without two measured process
    counts."""
    from commcost.io.measurements import read_measurements
    from commcost.selection.select import schedule_pricer
    from commcost.selection.strategies import choose_strategy, strategy_picks

    if fits is None:
        fits = RowFits(read_measurements(measurements), platform, model)
    rows = fits.rows
    train, train_defaults = measured_table(measurements, collective, library, high=max_procs)
    if choices is None:
        choices = sorted({c for times in train.values() for c in times}, key=lambda c: (c.algorithm.id or 0, c.label))
    if len({p for p, _ in train}) < 2:
        return None, None

    element = most_common(rows, collective, "element_size", 1)

    def times_below(nprocs: int | None):
        try:
            start = None if nprocs is None else fits.fit(max_procs).theta  # a fold begins at the whole fit
            fit = fits.fit(max_procs if nprocs is None else nprocs - 1, start=start)
            price = schedule_pricer(model_from(_params_of(fit, measurements), model), platform, mapping_of, root,
                                    statistic, element_bytes=element)
        except InputError:
            return None
        return lambda choice, nprocs, sizes: price(choice, nprocs, sizes, None)

    final = times_below(None)
    nodes = {}  # P -> whether its rows span several nodes
    for row in rows:
        if row.collective == collective.value and (max_procs is None or row.nprocs <= max_procs):
            nodes[row.nprocs] = nodes.get(row.nprocs, False) or (row.nnodes or 1) > 1
    choice = choose_strategy(train, train_defaults, choices, times_below, regime=lambda p: nodes.get(p, False))
    return choice, strategy_picks(final, choices, train).get(choice.chosen)


def strategy_line(strategy) -> str:
    """One line: each way of choosing's mean penalty in cross-validation, and the one kept."""
    figures = ", ".join(f"{name} {pen:.1f}%" for name, pen in sorted(strategy.penalties.items()))
    return (f"forward cross-validation over P (held out {', '.join(map(str, strategy.folds))}; mean penalty of "
            f"each way of choosing): {figures or 'no fold could be scored'}; kept: {strategy.chosen}")


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
                 *(f"{_label(s.picks[n][0]) or '-'}, {s.picks[n][2]:+.1f}" if s.picks[n][2] == s.picks[n][2]
                   else f"{_label(s.picks[n][0]) or '-'}, n/a" for n in names)] for s in scores])
    return page


@command("evaluate-selection", "fit on one measurements table and score the model's selection on another",
         _configure)
def _evaluate(args: argparse.Namespace) -> int:
    from commcost.cli.options import load_mapping
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
        from commcost.cli.select_command import with_algorithm_fits

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
                        "picks": {k: {"choice": _label(c), "time_s": t, "penalty_pct": pen}
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
            label = _label(choice) or "-"
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
