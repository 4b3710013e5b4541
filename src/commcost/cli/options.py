"""Options several commands declare and read the same way: output format, time unit, HTML page, JSON
printing, strictness, budgets, launch lines.

What for: a command declares these as every other does; what they set up
(models, mappings, cases, pricing) is in :mod:`commcost.workflows.pricing`.
This module imports no command, so commands import it without cycles.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from commcost.errors import InputError


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


def add_strict_option(p: argparse.ArgumentParser) -> None:
    """``--strict``: refuse parameter tables that break their model's constraints (default: load them as
    measured, with one warning per table)."""
    p.add_argument("--strict", action="store_true",
                   help="refuse tau-Lop tables that break the model's constraints (default: warn and load "
                        "them as measured; a file's [taulop] strict = true does the same)")


def add_launch_options(p: argparse.ArgumentParser) -> None:
    """``--launcher``, ``--mpirun`` and ``--timeout`` of a command's ``--measure``."""
    p.add_argument("--launcher", help="with --measure: the mpirun line to place ranks with (no program; "
                                      "default the embedded mpirun on this machine, -np P)")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--timeout", type=seconds_budget, default=300.0,
                   help="with --measure: seconds per MPI run (default 300)")
