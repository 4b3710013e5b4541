"""Selection scored on measurements: the measured table of a sweep, parameters trained on part of it,
and the cross-validated strategy (model, default, anchored) each collective keeps."""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commcost.errors import InputError
from commcost.workflows.pricing import model_from, strictness, transfer_counts


def choice_label(choice) -> str | None:
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


def trained_params(args: argparse.Namespace | EvaluateOptions):
    """The parameter set: loaded from a .toml, or fitted from a measurements CSV with ``--model``."""
    from commcost.io.params_file import load_params, write_params

    if args.train.suffix.lower() == ".toml":
        if args.from_collectives or args.train_max_procs or getattr(args, "barrier_skew", None):
            raise InputError("a parameter file is already fitted; --from-collectives, --train-max-procs and "
                             "--barrier-skew take a measurements CSV", where="--train")
        return load_params(args.train, strict=strictness(args))
    if args.from_collectives:
        return _fit_from_collectives(args)
    if getattr(args, "barrier_skew", None):
        raise InputError("applies only with --from-collectives; this fit would ignore it", where="--barrier-skew")
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

    def __init__(self, rows, platform, model: str, known: dict | None = None, barrier: str | None = None) -> None:
        self.rows, self.platform, self.model, self.barrier = rows, platform, model, barrier
        self._fits: dict = dict(known or {})  # max_procs -> fit (or the InputError it raised)

    def fit(self, max_procs: int | None, start=None):
        """The fit of the rows of at most ``max_procs`` ranks (all: None); an InputError is kept and raised
        again."""
        from commcost.workflows.fit import fit_collective_rows

        if max_procs not in self._fits:
            try:
                self._fits[max_procs] = fit_collective_rows(self.rows, self.platform, self.model, None, max_procs,
                                                            start=start, barrier=self.barrier)
            except InputError as exc:
                self._fits[max_procs] = exc
        fit = self._fits[max_procs]
        if isinstance(fit, InputError):
            raise fit
        return fit


def _fit_from_collectives(args: argparse.Namespace | EvaluateOptions):
    """Parameters fitted to the training rows' forced collective algorithms (every collective they hold)."""
    from commcost.io.measurements import read_measurements
    from commcost.io.platform_file import load_platform

    platform, _ = load_platform(args.platform)
    args.row_fits = RowFits(read_measurements(args.train), platform, args.model,
                            barrier=getattr(args, "barrier_skew", None))
    try:
        fit = args.row_fits.fit(args.train_max_procs)
    except InputError as exc:
        raise exc.located(source=str(args.train)) from None
    args.fit_summary = {**fit.summary(), "unidentified": fit.unidentified, "per_algorithm": fit.per_algorithm,
                        "per_algorithm_corrected": fit.per_algorithm_corrected,
                        "barrier_skew": fit.barrier_summary()}
    return _params_of(fit, args.train)


def _params_of(fit, train: Path):
    """A collective fit as a parameter set (through the file the fit would write)."""
    from commcost.workflows.fit import collective_fit_sections
    from commcost.io.params_file import load_params, write_params

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trained.toml"
        write_params(path, collective_fit_sections(fit), {"fitted_from": str(train)})
        return load_params(path)


def cross_validated(args: argparse.Namespace | EvaluateOptions, collective, platform, mapping_of, choices,
                    statistic: str):
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
    every way's pick function at any (P, n) (by name; a pick of None: no rule), or (None, None) without two
    measured process counts."""
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
    return choice, strategy_picks(final, choices, train)


def strategy_line(strategy) -> str:
    """One line: each way of choosing's mean penalty in cross-validation, and the one kept."""
    def figure(name: str, pen: float) -> str:
        folds = strategy.per_fold.get(name, {})
        each = f" ({', '.join(f'{p}: {v:.1f}%' for p, v in sorted(folds.items()))})" if len(folds) > 1 else ""
        return f"{name} {pen:.1f}%{each}"
    figures = ", ".join(figure(name, pen) for name, pen in sorted(strategy.penalties.items()))
    unvouched = ""
    if strategy.unvouched and strategy.chosen != "default":
        where = "on one node" if strategy.regime is False else "across nodes"
        kept = (f"{strategy.beyond} (it beat the best constant algorithm in the folds by more than a tie)"
                if strategy.beyond != "default" else
                "Open MPI's default (in the folds the way kept did not beat the best constant algorithm by more "
                "than a tie, and a constant's win is a fact of its regime)")
        unvouched = (f"; not cross-validated at P = {', '.join(map(str, strategy.unvouched))}: the folds held out "
                     f"P {where} only, and these are not; kept there: {kept}")
    return (f"forward cross-validation over P (held out {', '.join(map(str, strategy.folds))}; mean penalty of "
            f"each way of choosing): {figures or 'no fold could be scored'}; kept: {strategy.chosen}{unvouched}")


def other_regime(strategy, procs, mapping_of) -> list[int]:
    """The process counts of ``procs`` past the largest trained P and in another regime (several nodes or one,
    placed by ``mapping_of``) than the one ``strategy``'s folds held out: there nothing cross-validated its way
    of choosing (:attr:`StrategyChoice.beyond` is kept there)."""
    if strategy is None or strategy.regime is None:
        return []
    return [p for p in procs if p > strategy.trained_up_to
            and (mapping_of(p).nodes_of_first(p) > 1) != strategy.regime]


@dataclass
class EvaluateOptions:
    """What ``commcost evaluate-selection`` fits and scores (its options, by their argparse names).

    The test table must hold measured times of several algorithms of the
    collective at the same (P, n) points (e.g. imported OSU runs with forced
    algorithms, or ``commcost calibrate`` bcast rows). The training side is a
    measurements CSV (fitted here with ``model``) or a parameter file.
    """

    train: Path | None = None  # measurements CSV to fit on, or a parameter file (.toml) already fitted
    test: Path | None = None  # measurements CSV with times of several algorithms
    platform: Path | None = None  # the platform file the test ran on
    strict: bool = False
    ppn: int | None = None
    mapping: str | None = None
    model: str = "hockney"
    collective: str = "bcast"
    library: str = "ompi"
    root: int = 0
    transfers: list[str] = field(default_factory=list)
    algorithm_fit: bool = False
    from_collectives: bool = False
    train_max_procs: int | None = None
    test_min_procs: int | None = None
    barrier_skew: str | None = None  # from_collectives: the barrier before each timed call (fit --barrier-skew)


@dataclass
class Evaluation:
    """A selection scored on measured times: the model's picks (``result``), each strategy's pick and
    penalty at every measured point (``scores``), the summary per strategy (``totals``, by ``names``), and
    the cross-validated strategy where one was kept."""

    options: EvaluateOptions
    collective: Any  # commcost.collectives.Collective
    label: str  # the model-based strategy's name
    result: Any  # commcost.selection.select.SelectionResult
    scores: list
    names: list[str]
    totals: dict
    nchoices: int  # algorithms measured
    statistic: str  # the statistic over ranks the test rows hold
    strategy: Any = None
    fit_summary: dict | None = None

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        o, s = self.options, self.strategy
        return {
            "collective": self.collective.value, "model": o.model, "train": str(o.train), "test": str(o.test),
            "train_max_procs": o.train_max_procs, "test_min_procs": o.test_min_procs,
            "barrier_skew": o.barrier_skew,
            "statistic": self.statistic, "fit": self.fit_summary, "summary": self.totals,
            "strategy": None if s is None else s.to_dict(),
            "points": [{"nprocs": s.nprocs, "nbytes": s.nbytes, "best": s.best.label, "best_time_s": s.best_time_s,
                        "picks": {k: {"choice": choice_label(c), "time_s": t, "penalty_pct": pen}
                                  for k, (c, t, pen) in s.picks.items()}} for s in self.scores]}


def evaluate_selection(options: EvaluateOptions) -> Evaluation:
    """Fit on one measurements table (or take a fitted parameter file), select with the model at the
    points of another, and score the picks (and Open MPI's fixed decision, the best single algorithm, the
    cross-validated strategy) against the measured best (paper 004 Table 3)."""
    from commcost.collectives import Collective
    from commcost.io.measurements import read_measurements
    from commcost.io.platform_file import load_platform
    from commcost.selection.evaluate import penalties, summary
    from commcost.selection.select import schedule_pricer, select
    from commcost.workflows.pricing import load_mapping

    try:
        collective = Collective(options.collective)
    except ValueError:
        raise InputError(f"expected one of {[c.value for c in Collective]}, got {options.collective!r}",
                         where="--collective") from None
    measured, measured_default = measured_table(options.test, collective, options.library,
                                                low=options.test_min_procs)
    params = trained_params(options)
    try:
        model = model_from(params, options.model)
    except InputError as exc:
        raise exc.located(source=str(options.train)) from None
    platform, spec = load_platform(options.platform)
    procs = sorted({p for p, _ in measured})
    sizes = sorted({n for _, n in measured})
    choices = sorted({c for times in measured.values() for c in times}, key=lambda c: (c.algorithm.id or 0, c.label))
    tested = read_measurements(options.test)
    statistic = most_common(tested, collective, "rank_statistic", "max")  # what the test rows hold (OSU: mean)
    mapping_of = lambda n: load_mapping(options, platform, spec, n)  # noqa: E731
    price = schedule_pricer(model, platform, mapping_of, options.root, statistic,
                            element_bytes=most_common(tested, collective, "element_size", 1))
    scaled = True
    if options.algorithm_fit:
        price, scaled = _algorithm_fitted(options, collective, params, price)
    result = select(collective, options.library, choices, procs, sizes, price, source=f"model {options.model}")
    how = ""
    if options.algorithm_fit:
        how = ", fitted per algorithm" if scaled else ", per-algorithm scale not kept by cross-validation"
    label = f"model-based ({options.model}{how})"
    strategies = {label: result.selection.choice, "Open MPI fixed decision": _ompi_default(options, collective),
                  **_trained_best(options, collective)}
    timed = {"Open MPI default (measured)": measured_default} if measured_default else {}
    strategy, ways = cross_validated(options, collective, platform, mapping_of, choices, statistic)
    if strategy is not None:
        strategy.unvouched = other_regime(strategy, procs, mapping_of)
    if strategy is not None and ways and measured_default:
        def held_out(way):
            return {pt: (measured_default.get(pt, float("nan")) if (pick := way(*pt)) is None
                         else times.get(pick, float("nan"))) for pt, times in measured.items()}
        past = f"; {strategy.beyond} past {strategy.trained_up_to} ranks" \
            if strategy.unvouched and strategy.beyond != strategy.chosen else ""
        timed[f"commcost, cross-validated ({strategy.chosen}{past})"] = held_out(
            lambda nprocs, nbytes: ways[strategy.way_at(nprocs)](nprocs, nbytes))
        if "anchored" in ways:  # the one way no other column scores
            timed["anchored in training rows"] = held_out(ways["anchored"])
    scores = penalties(measured, strategies, timed)
    names = [*strategies, *timed, "best single algorithm"]
    totals = {name: summary(scores, name) for name in names}
    return Evaluation(options, collective, label, result, scores, names, totals, len(choices), statistic, strategy,
                      getattr(options, "fit_summary", None))


def _algorithm_fitted(options: EvaluateOptions, collective, params, price):
    """``--algorithm-fit``: the pricer corrected by the trained file's per-algorithm fits, and whether it was
    (cross-validation over P may have kept no per-algorithm scale for this collective)."""
    from types import SimpleNamespace

    from commcost.io.params_file import ALGORITHM_FIT
    from commcost.workflows.select import with_algorithm_fits

    if options.train.suffix.lower() != ".toml" and not options.from_collectives:
        raise InputError("per-algorithm fits come from a parameter file or --from-collectives; expected "
                         "--train PARAMS.toml", where="--algorithm-fit")
    if options.from_collectives and not params.sections.get(ALGORITHM_FIT, {}).get(collective.value):
        return price, False  # cross-validation over P kept no per-algorithm scale for this collective
    ppn = options.ppn  # the ranks fill nodes of ppn in blocks: P of them share one node up to ppn
    return with_algorithm_fits(SimpleNamespace(collective=collective.value, model=options.model,
                                               params=options.train), params, price,
                               None if not ppn else (lambda nprocs: nprocs <= ppn)), True


def _ompi_default(options: EvaluateOptions, collective):
    """Open MPI's fixed decision as a strategy (no pick for other libraries)."""
    from commcost.selection.ompi_fixed import as_choice, decide

    def ompi_default(nprocs: int, nbytes: int):
        if options.library != "ompi":
            return None
        return as_choice(decide(collective, nprocs, nbytes))
    return ompi_default


def _trained_best(options: EvaluateOptions, collective) -> dict:
    """The one algorithm a site tuned on the training rows would keep, as a strategy (none where the training
    is a parameter file or its rows measure no point of two algorithms)."""
    from commcost.selection.evaluate import best_single

    if options.train.suffix.lower() == ".toml":
        return {}
    try:
        trained_best = best_single(measured_table(options.train, collective, options.library,
                                                  high=options.train_max_procs)[0])
    except InputError:
        trained_best = None
    if trained_best is None:
        return {}
    return {f"best single on train ({trained_best.label})": lambda nprocs, nbytes: trained_best}
