"""Selection over (P, size): the pricer a command selects with, Open MPI's default beside it, the
predicted penalty of keeping the default, and the tuning files a selection writes."""

from __future__ import annotations

import argparse

from commcost.errors import InputError
from commcost.workflows.pricing import PAPER004, fits_in_memory, model_from, paper004_pricer, strictness


def _values(text: str, option: str, sizes: bool = False) -> list[int]:
    from commcost.workflows.grid import parse_points

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


def make_pricer(args: argparse.Namespace, procs: list[int], refused: list[str] | None = None,
                sizes: list[int] | None = None):
    """The platform, a mapping per P and a pricer for the chosen model; errors name the file. Candidates
    too large to record are said in ``refused``. ``sizes``: refused (``--sizes``) where the largest does not
    fit in the memory of a node the largest P uses, as its platform states it (:func:`fits_in_memory`)."""
    from commcost.workflows.pricing import load_mapping
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.selection.select import schedule_pricer

    platform, spec = load_platform(args.platform)
    params = load_params(args.params, strict=strictness(args))
    for nprocs in (procs[0], procs[-1]):  # fail early, with the option or file named, if P does not fit
        mapping = load_mapping(args, platform, spec, nprocs)
    if sizes:
        fits_in_memory(platform, mapping, max(sizes), str(args.platform))
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
        price = with_algorithm_fits(args, params, price,
                                    lambda nprocs: mapping_of(nprocs).nodes_of_first(nprocs) == 1)
    return price


def with_algorithm_fits(args: argparse.Namespace, params, price, one_node=None):
    """:func:`commcost.selection.select.scaled_pricer` with the file's fits for ``args.collective``
    (``one_node(P)``: whether P ranks share one node, for a fit's one-node corrections); a fit made
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
    return scaled_pricer(price, fits, one_node)


HAN_FIRST = "coll/han on several nodes, "


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
            mine = [j for j in range(len(sizes)) if picks[i][j] == choice]
            if choice in result.choices:
                row = np.array(result.time_of(choice)[i], dtype=np.float64)
                # the grid leaves unpriced what cannot be the fastest (its floor reaches the best's time): the
                # default is compared there too, so it is priced without that bound
                again = [j for j in mine if not np.isfinite(row[j])]
                if again:
                    row[again] = price(choice, nprocs, [sizes[j] for j in again], None)
            else:
                row = price(choice, nprocs, sizes, None)
            times[i, mine] = np.asarray(row)[mine]
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
