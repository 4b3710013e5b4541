"""``commcost predict``'s work: price one schedule file, or one collective algorithm (or every one) at a point
or over a sweep of (P, size), under a model or paper 004's closed forms.

What for: a script asks what a schedule or a collective costs on a platform
the way the command does, and gets the costs back as objects (each with the
``to_dict()`` the command prints under ``--format json``). Kernels and
patterns are priced by :mod:`commcost.workflows.kernels` on the same inputs
(:func:`predict_inputs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commcost.errors import InputError
from commcost.workflows.pricing import (PAPER004, algorithm_params, case_of, fits_in_memory, given_params, load_mapping,
                                        model_from, paper004_pricer, price_placed, strictness)


@dataclass
class PredictOptions:
    """What ``commcost predict`` prices and how (its options, by their argparse names): a ``schedule`` file
    or a ``collective`` (``algorithm`` or ``all_algorithms``, at ``procs`` and ``nbytes``, each a point, a
    range ``LO..HI`` or a list)."""

    schedule: Path | None = None  # schedule file (.json or .toml)
    collective: str | None = None  # price a collective algorithm instead of a schedule file
    platform: Path | None = None  # platform file (.toml)
    params: Path | None = None  # model parameters file (.toml)
    strict: bool = False
    model: str | None = None  # a cost model, or ompi_bcast_model (paper 004, with collective bcast)
    mapping: str | None = None  # rank placement overriding the platform file's [mapping]
    format: str = "table"  # csv asks for a collective's sweep rows even at one point
    explain: bool = False  # how the cost arises (tau-Lop: the formula)
    algorithm: str | None = None
    all_algorithms: bool = False
    procs: Any = None  # number of ranks, or a sweep (2..1024, 4,6,8); an int for kernels and patterns
    ppn: int | None = None
    nbytes: str | None = None  # message size or block per rank, or a sweep
    root: int = 0
    param: list[str] = field(default_factory=list)  # algorithm parameters NAME=VALUE


@dataclass
class PredictInputs:
    """What every prediction reads: the platform and its mapping spec, the parameter file, and the cost model
    (None under paper 004's closed forms, whose parameters are ``closed``)."""

    platform: Any
    spec: Any
    params: Any
    model: Any = None
    closed: Any = None


def predict_inputs(options: PredictOptions) -> PredictInputs:
    """Load the platform, the parameter file and the model, and refuse options that do not go together (a
    sweep of ``procs`` is for collectives: elsewhere ``options.procs`` becomes the one integer it names)."""
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform

    platform, spec = load_platform(options.platform)
    params = load_params(options.params, strict=strictness(options))
    if options.model == PAPER004:
        if options.collective != "bcast":
            raise InputError(f"--model {PAPER004} prices Open MPI broadcasts; expected --collective bcast",
                             where="--model")
        return PredictInputs(platform, spec, params, None, params.for_model(PAPER004))
    model = model_from(params, options.model)
    if options.format == "csv" and not options.collective:
        raise InputError("csv lists collectives' points; expected --format table or json here", where="--format")
    if options.procs is not None and not options.collective:  # sweeps are for collectives; kernels take one P
        try:
            options.procs = int(options.procs)
        except ValueError:
            raise InputError(f"expected an integer number of ranks, got {options.procs!r} (sweeps go with "
                             "--collective)", where="--procs") from None
    return PredictInputs(platform, spec, params, model)


@dataclass
class SchedulePrediction:
    """The cost of a schedule file."""

    name: str
    cost: Any  # commcost.models.Cost

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        from commcost.report.cost_report import cost_to_dict

        return cost_to_dict(self.cost, self.name)


@dataclass
class CollectivePrediction:
    """One collective at one point: each algorithm priced (``rows`` of algorithm, collective schedule, cost)
    and the algorithms not priced (with ``every``: all of them were asked for)."""

    header: dict
    rows: list
    skipped: list[str]
    every: bool

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        from commcost.report.cost_report import cost_to_dict

        results = []
        for algorithm, cs, cost in self.rows:
            doc = cost_to_dict(cost, cs.schedule.name)
            doc.update({"algorithm": algorithm.key, "library": algorithm.library, "id": algorithm.id,
                        "params": cs.params, "transmissions": cs.schedule.transmissions_run,
                        "phases": cs.schedule.phases_run})
            results.append(doc)
        return {**self.header, "results": results, "skipped": self.skipped} if self.every \
            else {**self.header, **results[0]}


@dataclass
class SweepPrediction:
    """A collective over a sweep of (P, size): rows as :func:`commcost.workflows.predict_sweep.price_sweep`
    gives them."""

    header: dict
    chosen: list
    rows: list[dict]
    skipped: list[str]

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        from commcost.workflows.predict_sweep import sweep_document

        return sweep_document(self.header, self.chosen, self.rows, self.skipped)


@dataclass
class Paper004Prediction:
    """Paper 004's closed forms at one point: rows of algorithm, id, params, time_s and equation."""

    header: dict
    rows: list[dict]
    every: bool
    case: Any  # commcost.collectives.Case
    mapping: Any  # commcost.platform.Mapping

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        return {**self.header, "results": self.rows} if self.every else {**self.header, **self.rows[0]}


Prediction = SchedulePrediction | CollectivePrediction | SweepPrediction | Paper004Prediction


def predict(options: PredictOptions, inputs: PredictInputs | None = None) -> Prediction:
    """Price ``options.schedule`` or ``options.collective`` (at a point or over a sweep) on the platform under
    the model (``inputs``: from :func:`predict_inputs` where not given)."""
    from commcost.io.schedule_file import load_schedule

    if inputs is None:
        inputs = predict_inputs(options)
    if options.collective:
        return predict_collective(options, inputs)
    schedule = load_schedule(options.schedule)
    mapping = load_mapping(options, inputs.platform, inputs.spec, schedule.nprocs)
    return SchedulePrediction(schedule.name, price_placed(options, schedule, inputs.platform, mapping, inputs.model))


def predict_collective(options: PredictOptions, inputs: PredictInputs) -> Prediction:
    """The chosen algorithms of ``options.collective`` at one point, or over the sweep of ``procs`` and
    ``nbytes`` (and always so with ``format`` csv)."""
    from commcost.collectives import Collective, algorithms, find
    from commcost.workflows.predict_sweep import sweep_points

    procs, sizes = sweep_points(options)
    fits_in_memory(inputs.platform, load_mapping(options, inputs.platform, inputs.spec, procs[-1]), max(sizes),
                   str(options.platform), "--nbytes")
    given = algorithm_params(options.param)
    if options.all_algorithms:
        chosen = algorithms(Collective(options.collective))
    else:
        if not options.algorithm:
            raise InputError("--collective needs --algorithm NAME or --all-algorithms", where="--algorithm")
        chosen = [find(Collective(options.collective), options.algorithm)]
    if len(procs) > 1 or len(sizes) > 1 or options.format == "csv":
        return _predict_sweep(options, inputs, chosen, given, procs, sizes)
    case = case_of(options.collective, procs[0], sizes[0], options.root)
    mapping = load_mapping(options, inputs.platform, inputs.spec, procs[0])
    if inputs.closed is not None:
        return _predict_paper004(options, case, chosen, given, mapping, inputs.closed)
    rows = []
    skipped: list[str] = []
    for algorithm in chosen:
        row = _priced(options, inputs, algorithm, given, case, mapping, skipped)
        if row is not None:
            rows.append(row)
    header = {"collective": case.collective.value, "procs": case.nprocs, "nbytes": case.nbytes, "root": case.root,
              "mapping": mapping.description, "model": inputs.model.NAME}
    return CollectivePrediction(header, rows, skipped, options.all_algorithms)


def _priced(options: PredictOptions, inputs: PredictInputs, algorithm, given: dict[str, int], case, mapping,
            skipped: list[str]):
    """(algorithm, collective schedule, cost) of one algorithm at ``case``; None, with a note in ``skipped``,
    where every algorithm was asked for and this one cannot be priced there."""
    from commcost.collectives import build
    from commcost.collectives.recorder import ScheduleTooLarge, transmission_limit
    from commcost.collectives.registry import Unsupported

    mine = given_params(algorithm, given, options.all_algorithms)
    if "ppn" not in mine:  # han: ranks per node from the placement
        from commcost.collectives.ompi_han import on_placement

        placed = on_placement(algorithm, mine, mapping.node_of_rank)
        if placed is None:
            if not options.all_algorithms:
                raise InputError(f"{algorithm.key} is modelled for ranks placed on nodes in blocks; give "
                                 "--param ppn=N", where="--mapping")
            skipped.append(f"{algorithm.key} (ranks not placed on nodes in blocks)")
            return None
        mine = placed
    try:
        cs = build(algorithm, case, mine)
    except ScheduleTooLarge as exc:
        if not options.all_algorithms:
            raise InputError(f"{algorithm.key}: {exc.message}", where="--procs") from None
        skipped.append(f"{algorithm.key} (more than {transmission_limit():,} transmissions)")
        return None
    except Unsupported:
        if not options.all_algorithms:
            raise
        skipped.append(f"{algorithm.key} (Open MPI does not run it on {case.nprocs} ranks)")
        return None
    except InputError as exc:
        raise exc.located(where=f"--param {exc.where}" if exc.where else None) from None
    return algorithm, cs, price_placed(options, cs.schedule, inputs.platform, mapping, inputs.model)


def _predict_sweep(options: PredictOptions, inputs: PredictInputs, chosen, given, procs, sizes) -> SweepPrediction:
    """``--procs``/``--nbytes`` sweeps (or ``--format csv``): one row per point, as OSU prints
    (:mod:`commcost.workflows.predict_sweep`)."""
    from commcost.selection.select import schedule_pricer
    from commcost.workflows.predict_sweep import price_sweep

    mappings: dict = {}

    def mapping_of(nprocs: int):
        if nprocs not in mappings:
            mappings[nprocs] = load_mapping(options, inputs.platform, inputs.spec, nprocs)
        return mappings[nprocs]

    closed, model = inputs.closed, inputs.model
    if closed is not None:
        price = paper004_pricer(closed, mapping_of, options.root)
        chosen = [a for a in chosen if a.library == "ompi"] if options.all_algorithms else chosen
    else:
        price = schedule_pricer(model, inputs.platform, mapping_of, options.root)
    rows, skipped = price_sweep(options, chosen, given, procs, sizes, mapping_of, price)
    header = {"collective": options.collective, "model": PAPER004 if closed is not None else model.NAME,
              "root": options.root, "mapping": options.mapping or "the platform file's", "procs": procs,
              "nbytes": sizes}
    return SweepPrediction(header, chosen, rows, skipped)


def _predict_paper004(options: PredictOptions, case, chosen, given, mapping, params) -> Paper004Prediction:
    """Paper 004's closed forms (eq. 1, 9-13) for the Open MPI bcast algorithms it models."""
    from commcost.closedform.ompi_bcast_model import EQUATIONS, MODELLED

    rows = []
    for algorithm in chosen:
        if algorithm.library != "ompi" or algorithm.name not in MODELLED:
            if not options.all_algorithms:
                raise InputError(f"paper 004 has no model of {algorithm.key}; it models ompi."
                                 f"{', ompi.'.join(MODELLED)}", where="--algorithm")
            continue
        values = algorithm.resolve_params({k: v for k, v in given.items()
                                           if any(p.name == k for p in algorithm.params)})
        extra = {"fanout": values["fanout"]} if algorithm.name == "chain" else {}
        time_s = float(MODELLED[algorithm.name](case.nprocs, case.nbytes, values.get("segsize", 0), mapping,
                                                params.for_algorithm(algorithm.name), root=case.root, **extra))
        rows.append({"algorithm": algorithm.key, "id": algorithm.id, "params": values, "time_s": time_s,
                     "equation": f"paper 004 {EQUATIONS[algorithm.name]}"})
    header = {"collective": "bcast", "procs": case.nprocs, "nbytes": case.nbytes, "root": case.root,
              "mapping": mapping.description, "model": PAPER004}
    return Paper004Prediction(header, rows, options.all_algorithms, case, mapping)
