"""``commcost``: one entry point; every command module registers itself in :mod:`.registry`.

This module only loads the command modules and dispatches (nothing imports
it but the console script and ``python -m commcost``). Exit codes: 0
success, 2 bad input (one line on stderr naming the file, place and
expectation; never a traceback).
"""

from __future__ import annotations

import sys

from commcost.cli.registry import dispatch, registered_parser

COMMAND_MODULES = ("predict", "fit", "import", "calibrate", "select", "evaluate", "tune", "verify", "kernel",
                   "measure_kernel", "measure_pattern", "arrange", "map", "goal", "params", "rules")


def build_parser():
    """The argument parser of every command."""
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"commcost.cli.{name}_command")  # registers its commands
    return registered_parser()


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code."""
    return dispatch(build_parser(), argv)


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
