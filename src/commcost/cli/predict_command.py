"""``commcost predict``, ``algorithms`` and ``models``: price one schedule, collective, kernel or pattern;
list what can be priced."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import (add_format_option, add_html_option, add_strict_option, add_unit_option,
    algorithm_params, print_json, wants_json)
from commcost.workflows.pricing import (PAPER004, case_of, collectives, given_params, load_mapping, model_from,
    paper004_pricer, price_placed, strictness)
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
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.io.schedule_file import load_schedule
    from commcost.report.cost_report import cost_to_dict, render_text

    if args.html is not None and not (args.kernel or args.pattern):
        raise InputError("the HTML report is written for --kernel and --pattern; expected one of them (select, "
                         "tune and verify write one for collectives)", where="--html")
    platform, spec = load_platform(args.platform)
    params = load_params(args.params, strict=strictness(args))
    if args.model == PAPER004:
        if args.collective != "bcast":
            raise InputError(f"--model {PAPER004} prices Open MPI broadcasts; expected --collective bcast",
                             where="--model")
        return _predict_collective(args, platform, spec, None, params.for_model(PAPER004))
    model = model_from(params, args.model)
    if args.format == "csv" and not args.collective:
        raise InputError("csv lists collectives' points; expected --format table or json here", where="--format")
    if args.procs is not None and not args.collective:  # sweeps are for collectives; kernels take one P
        try:
            args.procs = int(args.procs)
        except ValueError:
            raise InputError(f"expected an integer number of ranks, got {args.procs!r} (sweeps go with "
                             "--collective)", where="--procs") from None
    if args.kernel:
        from commcost.cli.kernel_command import predict_kernel
        return predict_kernel(args, platform, spec, model, params)
    if args.pattern:
        from commcost.cli.pattern_command import predict_pattern
        return predict_pattern(args, platform, spec, model, params)
    if args.collective:
        return _predict_collective(args, platform, spec, model)
    schedule = load_schedule(args.schedule)
    mapping = load_mapping(args, platform, spec, schedule.nprocs)
    cost = price_placed(args, schedule, platform, mapping, model)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(cost_to_dict(cost, schedule.name), indent=2))
    else:
        print(render_text(cost, schedule.name, unit=args.unit))
    return 0


def _predict_collective(args: argparse.Namespace, platform, spec, model, closed=None) -> int:
    from commcost.collectives import Collective, algorithms, build, find
    from commcost.report.cost_report import cost_to_dict, render_comparison, render_text

    from commcost.workflows.predict_sweep import sweep_points

    procs, sizes = sweep_points(args)
    given = algorithm_params(args.param)
    if args.all_algorithms:
        chosen = algorithms(Collective(args.collective))
    else:
        if not args.algorithm:
            raise InputError("--collective needs --algorithm NAME or --all-algorithms", where="--algorithm")
        chosen = [find(Collective(args.collective), args.algorithm)]
    if len(procs) > 1 or len(sizes) > 1 or args.format == "csv":
        return _predict_sweep(args, platform, spec, model, closed, chosen, given, procs, sizes)
    args.procs = procs[0]
    case = case_of(args.collective, procs[0], sizes[0], args.root)
    collective = case.collective
    mapping = load_mapping(args, platform, spec, args.procs)
    if closed is not None:
        return _predict_paper004(args, case, chosen, given, mapping, closed)
    from commcost.collectives.recorder import ScheduleTooLarge, transmission_limit
    from commcost.collectives.registry import Unsupported

    rows = []
    skipped: list[str] = []
    for algorithm in chosen:
        mine = given_params(algorithm, given, args.all_algorithms)
        if "ppn" not in mine:  # han: ranks per node from the placement
            from commcost.collectives.ompi_han import on_placement

            placed = on_placement(algorithm, mine, mapping.node_of_rank)
            if placed is None:
                if not args.all_algorithms:
                    raise InputError(f"{algorithm.key} is modelled for ranks placed on nodes in blocks; give "
                                     "--param ppn=N", where="--mapping")
                skipped.append(f"{algorithm.key} (ranks not placed on nodes in blocks)")
                continue
            mine = placed
        try:
            cs = build(algorithm, case, mine)
        except ScheduleTooLarge as exc:
            if not args.all_algorithms:
                raise InputError(f"{algorithm.key}: {exc.message}", where="--procs") from None
            skipped.append(f"{algorithm.key} (more than {transmission_limit():,} transmissions)")
            continue
        except Unsupported:
            if not args.all_algorithms:
                raise
            skipped.append(f"{algorithm.key} (Open MPI does not run it on {case.nprocs} ranks)")
            continue
        except InputError as exc:
            raise exc.located(where=f"--param {exc.where}" if exc.where else None) from None
        rows.append((algorithm, cs, price_placed(args, cs.schedule, platform, mapping, model)))
    header = {"collective": collective.value, "procs": case.nprocs, "nbytes": case.nbytes, "root": case.root,
              "mapping": mapping.description, "model": model.NAME}
    if args.format == OutputFormat.JSON.value:
        results = []
        for algorithm, cs, cost in rows:
            doc = cost_to_dict(cost, cs.schedule.name)
            doc.update({"algorithm": algorithm.key, "library": algorithm.library, "id": algorithm.id,
                        "params": cs.params, "transmissions": cs.schedule.transmissions_run,
                        "phases": cs.schedule.phases_run})
            results.append(doc)
        print(json.dumps({**header, "results": results, "skipped": skipped} if args.all_algorithms
                         else {**header, **results[0]}, indent=2))
    elif args.all_algorithms:
        print(render_comparison(header, [(a.key, a.id, cs.params, cs.schedule.transmissions_run,
                                          cs.schedule.phases_run, cost) for a, cs, cost in rows], unit=args.unit))
        for note in skipped:
            print(f"  not priced: {note}")
    else:
        print(render_text(rows[0][2], rows[0][1].schedule.name, unit=args.unit))
    return 0


def _predict_sweep(args: argparse.Namespace, platform, spec, model, closed, chosen, given, procs, sizes) -> int:
    """``--procs``/``--nbytes`` sweeps (or ``--format csv``): one row per point, as OSU prints
    (:mod:`commcost.workflows.predict_sweep`)."""
    from commcost.workflows.predict_sweep import price_sweep, print_sweep
    from commcost.selection.select import schedule_pricer

    mappings: dict = {}

    def mapping_of(nprocs: int):
        if nprocs not in mappings:
            mappings[nprocs] = load_mapping(args, platform, spec, nprocs)
        return mappings[nprocs]

    if closed is not None:
        price = paper004_pricer(closed, mapping_of, args.root)
        chosen = [a for a in chosen if a.library == "ompi"] if args.all_algorithms else chosen
    else:
        price = schedule_pricer(model, platform, mapping_of, args.root)
    rows, skipped = price_sweep(args, chosen, given, procs, sizes, mapping_of, price)
    header = {"collective": args.collective, "model": PAPER004 if closed is not None else model.NAME,
              "root": args.root, "mapping": args.mapping or "the platform file's", "procs": procs, "nbytes": sizes}
    print_sweep(args, header, chosen, rows, skipped)
    return 0


def _predict_paper004(args: argparse.Namespace, case, chosen, given, mapping, params) -> int:
    """Paper 004's closed forms (eq. 1, 9-13) for the Open MPI bcast algorithms it models."""
    from commcost.closedform.ompi_bcast_model import EQUATIONS, MODELLED
    from commcost.units import format_nbytes, format_seconds

    rows = []
    for algorithm in chosen:
        if algorithm.library != "ompi" or algorithm.name not in MODELLED:
            if not args.all_algorithms:
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
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({**header, "results": rows} if args.all_algorithms else {**header, **rows[0]}, indent=2))
        return 0
    best = min(r["time_s"] for r in rows)
    print(f"bcast of {format_nbytes(case.nbytes)} on {case.nprocs} ranks ({mapping.description}) "
          f"under paper 004's model")
    for r in rows:
        text = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "-"
        mark = "  <- best" if r["time_s"] == best else ""
        print(f"  {r['id']:>3}  {r['algorithm']:<26} {text:<22} {r['equation']:<16} "
              f"{format_seconds(r['time_s'], args.unit):>11}{mark}")
    return 0


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
