"""``commcost predict --collective`` over sweeps, printed as OSU prints a benchmark: one row per point.

What for: OSU users read a collective as a column of sizes and a column
of latencies in microseconds (``osu_bcast -m 1:4M``); a sweep here prints
the same, one row per (P, size) and one column per algorithm, so a model's
prediction sits beside an OSU run by eye or by ``join``. ``--procs`` and
``--nbytes`` (``--sizes``, ``-m``) take a point, ``LO..HI`` or OSU's
``MIN:MAX`` (LO, every power of two between, HI), or a comma list.
Times come from the same pricer ``select`` uses
(:func:`commcost.selection.select.schedule_pricer`: size classes, one pass
per class), or paper 004's closed forms.

Formats: the table (``# Size`` header lines as OSU writes them, times in
``--unit``), CSV in long form (``procs,nbytes,algorithm,id,time_<unit>``)
and JSON (times in seconds; schema in docs/json-output.md).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys

from commcost.workflows.grid import parse_points
from commcost.errors import InputError
from commcost.units import TIME_UNITS


def sweep_points(args: argparse.Namespace) -> tuple[list[int], list[int]]:
    """The process counts and sizes ``--procs`` and ``--nbytes`` name (each a point, a range or a list)."""
    for flag, value in (("--procs", args.procs), ("--nbytes", args.nbytes)):
        if value is None:
            raise InputError(f"--collective needs {flag}", where=flag)
    procs = parse_points(str(args.procs), "--procs", 1)
    text = str(args.nbytes)
    if ":" in text and ".." not in text:  # OSU's -m MIN:MAX
        low, _, high = text.partition(":")
        text = f"{low or 1}..{high}"
    return procs, parse_points(text, "--nbytes", 0, sizes=True)


def label(algorithm) -> str:
    """A column title: the library's key and, where the library numbers it, its id (``ompi.binomial(6)``)."""
    return algorithm.key if algorithm.id is None else f"{algorithm.key}({algorithm.id})"


def price_sweep(args: argparse.Namespace, chosen, given: dict[str, int], procs: list[int], sizes: list[int],
                mapping_of, price) -> tuple[list[dict], list[str]]:
    """Every chosen algorithm at every (P, size): rows ``{procs, nbytes, times_s: {key: seconds or None}}``
    and the notes on what was not priced (None where the library does not run it)."""
    from commcost.workflows.pricing import case_of, given_params
    from commcost.collectives.recorder import ScheduleTooLarge, transmission_limit
    from commcost.selection.decision import Choice

    choices = []
    for algorithm in chosen:
        try:
            values = algorithm.resolve_params(given_params(algorithm, given, args.all_algorithms))
        except InputError as exc:
            raise InputError(exc.message, where=f"--param {exc.where}" if exc.where else "--param") from None
        choices.append(Choice(algorithm, values))
    times = {(p, n): {} for p in procs for n in sizes}
    skipped = []
    for nprocs in procs:
        case_of(args.collective, nprocs, sizes[0], args.root)
        mapping_of(nprocs)  # errors name the platform file or --mapping
        for choice in choices:
            key = choice.algorithm.key
            try:
                got = price(choice, nprocs, sizes)
            except ScheduleTooLarge:
                if not args.all_algorithms:
                    raise InputError(f"{key} on {nprocs} ranks runs more than {transmission_limit():,} "
                                     "transmissions; expected a smaller --procs", where="--procs") from None
                got = [math.inf] * len(sizes)
                skipped.append(f"{key} on {nprocs} ranks (more than {transmission_limit():,} transmissions)")
            for n, t in zip(sizes, got):
                times[(nprocs, n)][key] = float(t) if math.isfinite(t) else None
    rows = [{"procs": p, "nbytes": n, "times_s": times[(p, n)]} for p in procs for n in sizes]
    for row in rows:
        finite = {k: t for k, t in row["times_s"].items() if t is not None}
        row["best"] = min(finite, key=finite.get) if finite else None
    return rows, skipped


def sweep_document(header: dict, chosen, rows: list[dict], skipped: list[str]) -> dict:
    """The sweep as the JSON document ``--format json`` prints (times in seconds)."""
    return {**header, "algorithms": [{"algorithm": a.key, "library": a.library, "id": a.id} for a in chosen],
            "points": rows, "skipped": skipped}


def print_sweep(args: argparse.Namespace, header: dict, chosen, rows: list[dict], skipped: list[str]) -> None:
    """The sweep in ``args.format``: OSU-style table, long CSV, or JSON."""
    unit = args.unit
    factor = TIME_UNITS[unit]
    if args.format == "json":
        print(json.dumps(sweep_document(header, chosen, rows, skipped), indent=2))
        return
    if args.format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["procs", "nbytes", "algorithm", "id", f"time_{unit}"])
        for row in rows:
            for a in chosen:
                t = row["times_s"].get(a.key)
                if t is not None:
                    writer.writerow([row["procs"], row["nbytes"], a.key, "" if a.id is None else a.id,
                                     f"{t / factor:.6g}"])
        return
    titles = [label(a) for a in chosen]
    widths = [max(len(t), 12) for t in titles]
    print(f"# commcost predict: {header['collective']} under {header['model']}, root {header['root']}, "
          f"{header['mapping']}")
    print(f"# times in {unit} (Latency({unit}) as OSU prints it)")
    best_col = len(chosen) > 1
    print(f"{'# P':<8}{'Size':<12}" + "".join(f"{t:>{w + 2}}" for t, w in zip(titles, widths))
          + ("   best" if best_col else ""))
    for row in rows:
        cells = []
        for a, w in zip(chosen, widths):
            t = row["times_s"].get(a.key)
            cells.append(f"{'-' if t is None else f'{t / factor:.2f}':>{w + 2}}")
        line = f"{row['procs']:<8}{row['nbytes']:<12}" + "".join(cells)
        if best_col:
            line += f"   {row['best'] or '-'}"
        print(line)
    for note in skipped:
        print(f"# not priced: {note}")
