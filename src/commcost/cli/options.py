"""Options and helpers that several commands share: strictness, placements, pricing, collective cases.

What for: a command declares and reads these the same way as every other
(``predict``, ``select``, ``partition``, ``pattern``, ``evaluate-selection``
and ``map`` place ranks with :func:`load_mapping`); this module imports no
command, so commands import it without cycles.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from commcost.errors import InputError

if TYPE_CHECKING:
    from commcost.collectives import Case

PAPER004 = "ompi_bcast_model"  # paper 004's model: whole algorithms, not schedules


def add_format_option(p: argparse.ArgumentParser, json_help: str = "") -> None:
    """``--format table|json``: what the command prints (the JSON schemas are in docs/json-output.md)."""
    p.add_argument("--format", default="table", choices=["table", "json"],
                   help="table (default) or json: one JSON document on standard output, progress on standard "
                        "error" + (f"; {json_help}" if json_help else ""))


def add_unit_option(p: argparse.ArgumentParser, default: str = "us") -> None:
    """``--unit us|ms|s``: one time unit for every cell of the command's tables (issue 16 item 2), a default fixed
    per table (microseconds, as OSU prints, unless the table's times are seconds by nature); JSON stays in
    seconds."""
    from commcost.units import TIME_UNITS

    p.add_argument("--unit", default=default, choices=list(TIME_UNITS),
                   help=f"the tables' time unit (default {default}{', as OSU prints' if default == 'us' else ''}; "
                        "JSON is always in seconds)")


MAX_BUDGET_S = 7 * 24 * 3600.0  # a week: longer is a typo, not a plan


def channel_name(text: str, where: str = "--channel") -> str:
    """One channel's name as an option gives it (letters, digits, '_', '-' or '.'), not a list: else an
    :class:`InputError` naming the option."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", text):
        raise InputError(f"expected one channel name (letters, digits, _ - .), got {text[:80]!r}", where=where)
    return text


def seconds_budget(text: str) -> float:
    """An argparse type: a number of seconds, finite, above 0 and at most :data:`MAX_BUDGET_S`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= MAX_BUDGET_S:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected seconds above 0 and at most {MAX_BUDGET_S:.0f} (a week), "
                                         f"got {text!r}")
    return value


def add_html_option(p: argparse.ArgumentParser) -> None:
    """``--html FILE``: the report as one self-contained web page (pictures embedded; docs/html-report.md)."""
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="also write the report as one self-contained HTML page (plots embedded, provenance, "
                        "nothing fetched from elsewhere)")


def write_html(args: argparse.Namespace, page) -> None:
    """Write ``page`` to ``--html`` and say so (on standard error under --format json)."""
    import sys

    path = page.write(args.html)
    print(f"  wrote {path}", file=sys.stderr if wants_json(args) or getattr(args, "format", "") == "csv"
          else sys.stdout)


def wants_json(args: argparse.Namespace) -> bool:
    """Whether the command prints its result as JSON."""
    return getattr(args, "format", "table") == "json"


def progress_stream(args: argparse.Namespace):
    """A context in which the command's printed lines go to standard error when it prints JSON, so that
    standard output carries the JSON document alone."""
    import contextlib
    import sys

    return contextlib.redirect_stdout(sys.stderr) if wants_json(args) else contextlib.nullcontext()


def print_json(doc) -> None:
    """One JSON document on standard output (paths and numpy numbers as plain values)."""
    import json

    def plain(value):
        if isinstance(value, Path):
            return str(value)
        if hasattr(value, "item"):
            return value.item()
        if hasattr(value, "tolist"):
            return value.tolist()
        raise TypeError(f"not JSON: {type(value).__name__}")

    print(json.dumps(doc, indent=2, default=plain))


def model_from(params, name: str):
    """The cost model ``name`` with the parameter file's section for it and its reduction tables (what a
    command prices with; InputError, from the file, where the section is missing)."""
    from commcost.models import MODELS

    return MODELS[name](params.for_model(name)).with_reduction(params.reduction())


def add_strict_option(p: argparse.ArgumentParser) -> None:
    """``--strict``: refuse parameter tables that break their model's constraints (default: load them as
    measured, with one warning per table)."""
    p.add_argument("--strict", action="store_true",
                   help="refuse tau-Lop tables that break the model's constraints (default: warn and load "
                        "them as measured; a file's [taulop] strict = true does the same)")


def strictness(args: argparse.Namespace) -> bool | None:
    """What ``--strict`` asks of ``load_params``: True to refuse, None to let the file decide (commands that
    build their options without it, as tune does for select, leave it to the file)."""
    return True if getattr(args, "strict", False) else None


def collectives():
    """Every collective, in the registry's order (for choices of options)."""
    from commcost.collectives import Collective

    return list(Collective)


def load_mapping(args: argparse.Namespace, platform, spec, nprocs: int):
    from commcost.io.mapping_spec import MappingKind, MappingSpec, parse_mapping_option

    base_dir = args.platform.parent
    where = "mapping"
    if args.mapping:
        try:
            spec = parse_mapping_option(args.mapping)
        except InputError as exc:
            raise exc.located(where="--mapping") from None
        base_dir, where = Path.cwd(), "--mapping"
    elif getattr(args, "ppn", None) is not None:
        if args.ppn < 1:
            raise InputError(f"expected ranks per node >= 1, got {args.ppn}", where="--ppn")
        most = max((node.type.cores + node.type.gpus for node in platform.nodes), default=args.ppn)
        if args.ppn > most:  # more ranks than a node has cores: oversubscribed, not what the models price
            raise InputError(f"expected --ppn <= {most}, the most ranks a node of {args.platform} runs (its cores "
                             f"and GPUs), got {args.ppn}", where="--ppn")
        spec, where = MappingSpec(MappingKind.SEQUENTIAL, ppn=args.ppn), "--ppn"
    if spec is None:
        raise InputError("the platform has no [mapping] section; expected one there, --mapping or --ppn",
                         source=str(args.platform))
    try:
        return spec.build(platform, nprocs, base_dir)
    except InputError as exc:
        raise exc.located(source=str(args.platform) if where == "mapping" else None, where=where) from None


def price_placed(args: argparse.Namespace, schedule, platform, mapping, model):
    from commcost.models import PlacedSchedule

    try:
        placed = PlacedSchedule.of(schedule, platform, mapping)
    except InputError as exc:
        raise exc.located(source=str(args.platform)) from None
    import numpy as np

    try:
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported once, by finite_cost
            cost = model.price(placed, explain=args.explain)
    except InputError as exc:
        raise exc.located(source=str(args.params)) from None
    return finite_cost(cost, args)


def finite_cost(cost, args: argparse.Namespace):
    """``cost``, or an error naming the parameter file when its time is not a finite number: a parameter
    near 0 that divides (a rate) or near 1e308 that multiplies (a time, a gap) makes inf or NaN, not a
    prediction."""
    import math

    if not math.isfinite(cost.time_s):
        raise InputError(f"the parameters give a time of {cost.time_s} s under {cost.model}; expected parameters "
                         "that keep times finite (a rate near 0 or a time or gap near 1e308?)",
                         source=str(args.params))
    return cost


def collective_case(args: argparse.Namespace) -> "Case":
    """The :class:`~commcost.collectives.Case` that ``--collective``, ``--procs``, ``--nbytes`` and ``--root`` name."""
    from commcost.units import parse_nbytes

    for flag, value in (("--procs", args.procs), ("--nbytes", args.nbytes)):
        if value is None:
            raise InputError(f"--collective needs {flag}", where=flag)
    try:
        nbytes = parse_nbytes(args.nbytes)
    except InputError as exc:
        raise exc.located(where="--nbytes") from None
    return case_of(args.collective, args.procs, nbytes, args.root)


def case_of(collective: str, nprocs: int, nbytes: int, root: int) -> "Case":
    """A :class:`~commcost.collectives.Case`, its errors named by the option that set the field (``--root``)."""
    from commcost.collectives import Case, Collective

    try:
        return Case(Collective(collective), nprocs, nbytes, root)
    except InputError as exc:
        raise InputError(exc.message, where=f"--{exc.where}" if exc.where else None) from None


def given_params(algorithm, given: dict[str, int], every_algorithm: bool) -> dict[str, int]:
    """The ``--param`` values ``algorithm`` is priced with: with ``--all-algorithms`` only those it has; for
    one algorithm all of them (an unknown name is then its error)."""
    if not every_algorithm:
        return given
    return {k: v for k, v in given.items() if any(p.name == k for p in algorithm.params)}


def algorithm_params(items: list[str]) -> dict[str, int]:
    """``NAME=VALUE`` pairs; values are integers or sizes (8KiB)."""
    from commcost.units import parse_nbytes

    values: dict[str, int] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise InputError(f"expected NAME=VALUE, got {item!r}", where="--param")
        try:
            values[name] = parse_nbytes(text)
        except InputError:
            raise InputError(f"{name}: expected an integer or a size such as 8KiB, got {text!r}",
                             where="--param") from None
    return values


def selection_model(params) -> tuple[str | None, dict[str, list[str]]]:
    """The model tune selects under, and the channels each fitted model covers: tau-Lop where Ring_tau
    covered shm and a network channel, else Hockney where the ping-pong did, else None."""
    from commcost.cli.mpi_launch import NETWORK_CHANNELS

    fitted_channels = {}
    for name in ("taulop", "hockney"):
        if name in params.sections:
            fitted = params.for_model(name)
            fitted_channels[name] = sorted(fitted.tables if name == "taulop" else fitted.channels)
    model = next((name for name, chans in fitted_channels.items()
                  if "shm" in chans and any(c in chans for c in NETWORK_CHANNELS)), None)
    return model, fitted_channels


def paper004_pricer(params, mapping_of, root: int = 0):
    """Paper 004's closed forms (eq. 1, 9-13) as a pricer (:mod:`commcost.selection.select`); algorithms the
    paper does not model cost inf."""
    import numpy as np

    from commcost.closedform.ompi_bcast_model import MODELLED

    def price(choice, nprocs, sizes, bound=None):
        name = choice.algorithm.name
        if choice.algorithm.library != "ompi" or name not in MODELLED:
            return np.full(len(sizes), np.inf)
        extra = {"fanout": choice.params["fanout"]} if name == "chain" else {}
        return np.asarray(MODELLED[name](nprocs, np.asarray(sizes, dtype=np.float64), choice.params.get("segsize", 0),
                                         mapping_of(nprocs), params, root=root, **extra), dtype=np.float64)
    return price


MAX_TRANSFERS = 16  # transfers per transmission: tau-Lop's channels have 1 (RDMA) to 3 (TCP: shm + net + shm)


def transfer_counts(items: list[str]) -> dict[str, int]:
    """``--transfers CHANNEL=K`` (repeatable): tau-Lop's transfers per transmission of a channel, 1 <= K <= 16."""
    transfers: dict[str, int] = {}
    for item in items:
        name, _, k = item.partition("=")
        if not name.strip() or not k.isdigit() or not 1 <= int(k) <= MAX_TRANSFERS:
            raise InputError(f"expected CHANNEL=K with 1 <= K <= {MAX_TRANSFERS}, got {item[:60]!r}",
                             where="--transfers")
        transfers[name.strip()] = int(k)
    return transfers
