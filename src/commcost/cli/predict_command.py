"""``commcost predict``, ``algorithms`` and ``models``: price one schedule, collective, kernel or pattern;
list what can be priced."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import (add_format_option, add_html_option, add_strict_option, add_unit_option,
    print_json, wants_json)
from commcost.workflows.options import from_namespace
from commcost.workflows.predict import (CollectivePrediction, Paper004Prediction, PredictOptions, SchedulePrediction,
                                        SweepPrediction, predict, predict_inputs)
from commcost.workflows.predict_sweep import print_sweep
from commcost.workflows.pricing import PAPER004, collectives
from commcost.cli.registry import OutputFormat, command
from commcost.errors import InputError


def _configure_predict(p: argparse.ArgumentParser) -> None:
    from commcost.models import MODELS

    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--schedule", type=Path, help="schedule file (.json or .toml)")
    what.add_argument("--collective", choices=[c.value for c in collectives()],
                      help="price a collective algorithm instead of a schedule file")
    from commcost.cli.kernel_command import configure_kernel_options
    configure_kernel_options(p, what)
    from commcost.cli.pattern_command import configure_pattern_options
    configure_pattern_options(p, what)
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml)")
    p.add_argument("--params", required=True, type=Path, help="model parameters file (.toml)")
    add_strict_option(p)
    p.add_argument("--model", required=True, choices=[*sorted(MODELS), PAPER004],
                   help=f"cost model ({PAPER004}: paper 004's closed forms of Open MPI bcasts, with --collective bcast)")
    p.add_argument("--mapping", default=None,
                   help="rank placement, overriding the platform file's [mapping]: sequential:PPN, "
                        "round-robin[:NODES], random:PPN:seed=N, file:PATH, layout:PATH:ROW")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[*(f.value for f in OutputFormat), "csv"],
                   help="table (default), json, or csv (collectives: one row per point and algorithm)")
    add_unit_option(p)
    add_html_option(p)
    p.add_argument("--explain", action="store_true", help="show how the cost arises (tau-Lop: the formula)")
    coll = p.add_argument_group("collectives (with --collective)")
    which = coll.add_mutually_exclusive_group()
    which.add_argument("--algorithm", help="library name (knomial, mpich.binomial) or Open MPI id")
    which.add_argument("--all-algorithms", action="store_true", help="price every algorithm of the collective")
    coll.add_argument("--procs", help="number of ranks P, or a sweep: 2..1024 (every power of two between) "
                                       "or a list 4,6,8")
    coll.add_argument("--ppn", type=int, help="ranks per node (sequential mapping); default: the platform's")
    coll.add_argument("--nbytes", "--sizes", "-m", dest="nbytes",
                      help="message size (bcast, reduce, allreduce) or block per rank: 64KiB, 1M (binary, as "
                           "OSU), or a sweep printed as OSU does: 1..4MiB, OSU's 1:4M, or a list 1K,64K")
    coll.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    coll.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="algorithm parameter, e.g. segsize=8KiB, fanout=2, radix=4 (repeatable)")


@command("predict", "price a schedule or a collective algorithm on a platform under a model", _configure_predict)
def _predict(args: argparse.Namespace) -> int:
    if args.html is not None and not (args.kernel or args.pattern):
        raise InputError("the HTML report is written for --kernel and --pattern; expected one of them (select, "
                         "tune and verify write one for collectives)", where="--html")
    options = from_namespace(PredictOptions, args)
    inputs = predict_inputs(options)
    if args.kernel or args.pattern:
        args.procs = options.procs  # kernels and patterns take one P: the integer --procs named
        if args.kernel:
            from commcost.cli.kernel_command import predict_kernel
            return predict_kernel(args, inputs.platform, inputs.spec, inputs.model, inputs.params)
        from commcost.cli.pattern_command import predict_pattern
        return predict_pattern(args, inputs.platform, inputs.spec, inputs.model, inputs.params)
    prediction = predict(options, inputs)
    if isinstance(prediction, SweepPrediction):
        print_sweep(args, prediction.header, prediction.chosen, prediction.rows, prediction.skipped)
    elif args.format == OutputFormat.JSON.value:
        print(json.dumps(prediction.to_dict(), indent=2))
    elif isinstance(prediction, Paper004Prediction):
        _print_paper004(prediction, args.unit)
    else:
        _print_cost(prediction, args.unit)
    return 0


def _print_cost(prediction: SchedulePrediction | CollectivePrediction, unit: str) -> None:
    """A schedule's or one algorithm's cost; every algorithm's side by side, and what was not priced."""
    from commcost.report.cost_report import render_comparison, render_text

    if isinstance(prediction, SchedulePrediction):
        print(render_text(prediction.cost, prediction.name, unit=unit))
    elif prediction.every:
        print(render_comparison(prediction.header, [(a.key, a.id, cs.params, cs.schedule.transmissions_run,
                                                     cs.schedule.phases_run, cost)
                                                    for a, cs, cost in prediction.rows], unit=unit))
        for note in prediction.skipped:
            print(f"  not priced: {note}")
    else:
        _, cs, cost = prediction.rows[0]
        print(render_text(cost, cs.schedule.name, unit=unit))


def _print_paper004(prediction: Paper004Prediction, unit: str) -> None:
    """Paper 004's time of each algorithm at the point, the best marked."""
    from commcost.units import format_nbytes, format_seconds

    case, mapping, rows = prediction.case, prediction.mapping, prediction.rows
    best = min(r["time_s"] for r in rows)
    print(f"bcast of {format_nbytes(case.nbytes)} on {case.nprocs} ranks ({mapping.description}) "
          f"under paper 004's model")
    for r in rows:
        text = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "-"
        mark = "  <- best" if r["time_s"] == best else ""
        print(f"  {r['id']:>3}  {r['algorithm']:<26} {text:<22} {r['equation']:<16} "
              f"{format_seconds(r['time_s'], unit):>11}{mark}")


def _configure_algorithms(p: argparse.ArgumentParser) -> None:
    p.add_argument("--collective", choices=[c.value for c in collectives()], help="only this collective")
    add_format_option(p, "what ompi_info --parsable gives: library, component, collective, id, name, "
                         "parameters and defaults")


@command("algorithms", "list the collective algorithms with their library ids and parameters", _configure_algorithms)
def _algorithms(args: argparse.Namespace) -> int:
    from commcost.collectives import Collective, algorithms
    from commcost.collectives.ompi_han import is_han

    chosen = algorithms(Collective(args.collective) if args.collective else None)
    if wants_json(args):
        def component(a) -> str | None:
            return ("han" if is_han(a) else "tuned") if a.library == "ompi" else None

        print_json({"algorithms": [
            {"collective": a.collective.value, "library": a.library, "component": component(a), "name": a.name,
             "key": a.key, "id": a.id,
             "forced_by": (f"coll_tuned_{a.collective.value}_algorithm={a.id}" if a.id is not None
                           and component(a) == "tuned" else None),
             "description": a.description,
             "params": [{"name": p.name, "default": p.default, "minimum": p.minimum, "help": p.help}
                        for p in a.params]} for a in chosen]})
        return 0
    current = None
    for a in chosen:
        if a.collective is not current:
            if current is not None:
                print()
            current = a.collective
            print(f"{a.collective.value}:")
            print(f"  {'algorithm':<42} {'id':>3}  parameters (default)")
        params = ", ".join(f"{p.name}={p.default}" for p in a.params) or "-"
        ident = str(a.id) if a.id is not None else ""
        print(f"  {a.key:<42} {ident:>3}  {params:<32} {a.description}")
    return 0


@command("models", "list the cost models", add_format_option)
def _models(args: argparse.Namespace) -> int:
    from commcost.models import MODELS

    if wants_json(args):
        print_json({"models": [{"name": name, "description": MODELS[name].DESCRIPTION} for name in sorted(MODELS)]
                    + [{"name": PAPER004, "description": "paper 004's closed forms of Open MPI's broadcasts "
                                                         "(predict and select with --collective bcast)"}]})
        return 0
    width = max(len(name) for name in [*MODELS, PAPER004])
    for name in sorted(MODELS):
        print(f"{name:<{width}}  {MODELS[name].DESCRIPTION}")
    print(f"{PAPER004:<{width}}  paper 004's closed forms of Open MPI's broadcasts (predict and select, bcast)")
    return 0
