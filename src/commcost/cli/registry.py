"""The command registry: each command registers its name, help line, options and run function here.

What for: every ``*_command`` module imports this one (and :mod:`.options`)
and nothing imports a command module back except :mod:`.main`, which
loads them all to build the parser, so ``commcost.cli`` has no import
cycle. :func:`run_command` runs a command already registered (``tune``
runs ``calibrate`` and ``verify`` through it).

Exit codes: 0 success, 2 bad input (one line on stderr naming the file,
place and expectation; never a traceback).
"""

from __future__ import annotations

import argparse
import enum
import os
import sys
import warnings
from typing import Callable

from commcost import __version__
from commcost.collectives.recorder import (BYTES_PER_TRANSMISSION, LIMIT_VARIABLE, MAX_TRANSMISSIONS, MEMORY_VARIABLE,
                                           read_memory_limit, read_transmission_limit)
from commcost.errors import InputError, InputWarning
from commcost.selection.long_pipeline import EXACT_VARIABLE, WHOLE_BUDGET, read_exact_up_to


class OutputFormat(enum.Enum):
    """How a command prints its result."""

    TABLE = "table"
    JSON = "json"


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Register a sub-command: its name, its help line, how to declare its options."""
    def wrap(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = (help_text, configure, run)
        return run
    return wrap


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit 2, as for bad files."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: {message}\n")


def registered_parser() -> argparse.ArgumentParser:
    """The argument parser of every command registered so far."""
    parser = Parser(prog="commcost", description="Predict and explain the communication cost of MPI programs.")
    parser.add_argument("--version", action="version", version=f"commcost {__version__}")
    parser.add_argument("--max-transmissions", type=_transmissions, metavar="N",
                        help=f"refuse, before building it, a schedule of more than N transmissions (default "
                             f"{MAX_TRANSMISSIONS:,}, about 2.4 GiB while it is priced; ${LIMIT_VARIABLE} too)")
    parser.add_argument("--max-memory", type=_memory, metavar="SIZE",
                        help=f"refuse, before building it, a schedule whose pricing would take more than SIZE "
                             f"(512MiB, 4GiB; {BYTES_PER_TRANSMISSION} bytes per transmission; ${MEMORY_VARIABLE} too)")
    parser.add_argument("--exact-up-to", type=_exact_up_to, metavar="N",
                        help=f"under tau-Lop, price whole (exactly) a pipeline of alike segments whose steps drift "
                             f"up to N transmissions, fold it from its mean step past N and say so (default "
                             f"{WHOLE_BUDGET:,}; at the transmission limit, every one it can record is exact; "
                             f"${EXACT_VARIABLE} too)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, (help_text, configure, _) in COMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def _transmissions(text: str) -> int:
    """--max-transmissions: a whole number >= 1 (:func:`~commcost.collectives.recorder.read_transmission_limit`)."""
    try:
        return read_transmission_limit(text, "--max-transmissions")
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _exact_up_to(text: str) -> int:
    """--exact-up-to: a whole number >= 0 (:func:`~commcost.selection.long_pipeline.read_exact_up_to`)."""
    try:
        return read_exact_up_to(text, "--exact-up-to")
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _memory(text: str) -> int:
    """--max-memory: a size (:func:`~commcost.collectives.recorder.read_memory_limit`)."""
    try:
        return read_memory_limit(text, "--max-memory")
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Input warnings as one line on stderr; others as Python prints them."""
    if issubclass(category, InputWarning):
        print(f"commcost: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def dispatch(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv`` and run its command: 0 on success, 2 with one line on stderr for bad input."""
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for a report's provenance
    if not args.command:
        parser.print_help()
        return 2
    limits = {LIMIT_VARIABLE: getattr(args, "max_transmissions", None),
              MEMORY_VARIABLE: getattr(args, "max_memory", None),
              EXACT_VARIABLE: getattr(args, "exact_up_to", None)}
    said = {name: os.environ.get(name) for name in limits}
    for name, value in limits.items():  # for this command (and the ranks it starts) only
        if value is not None:
            os.environ[name] = str(value)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", InputWarning)
            warnings.showwarning = _show_warning
            return COMMANDS[args.command][2](args)
    except InputError as exc:
        print(f"commcost: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"commcost: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        for name, value in said.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_command(argv: list[str]) -> int:
    """Run a command registered so far (its module imported), as ``commcost ARGV`` would."""
    return dispatch(registered_parser(), argv)
