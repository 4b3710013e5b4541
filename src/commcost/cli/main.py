"""``commcost``: one entry point, sub-commands registered with a name and a one-line help.

Exit codes: 0 success, 2 bad input (one line on stderr naming the file,
place and expectation; never a traceback).
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
from pathlib import Path
from typing import Callable

from commcost import __version__
from commcost.errors import InputError


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


def _configure_predict(p: argparse.ArgumentParser) -> None:
    from commcost.models import MODELS

    p.add_argument("--schedule", required=True, type=Path, help="schedule file (.json or .toml)")
    p.add_argument("--platform", required=True, type=Path, help="platform file (.toml)")
    p.add_argument("--params", required=True, type=Path, help="model parameters file (.toml)")
    p.add_argument("--model", required=True, choices=sorted(MODELS), help="cost model")
    p.add_argument("--mapping", default=None,
                   help="rank placement, overriding the platform file's [mapping]: sequential:PPN, "
                        "round-robin[:NODES], random:PPN:seed=N, file:PATH, layout:PATH:ROW")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])
    p.add_argument("--explain", action="store_true", help="show how the cost arises (tau-Lop: the formula)")


@command("predict", "price a schedule on a platform under a model", _configure_predict)
def _predict(args: argparse.Namespace) -> int:
    from commcost.io.mapping_spec import parse_mapping_option
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.io.schedule_file import load_schedule
    from commcost.models import MODELS, PlacedSchedule
    from commcost.report.cost_report import cost_to_dict, render_text

    schedule = load_schedule(args.schedule)
    platform, spec = load_platform(args.platform)
    base_dir = args.platform.parent
    if args.mapping:
        try:
            spec = parse_mapping_option(args.mapping)
        except InputError as exc:
            raise exc.located(where="--mapping") from None
        base_dir = Path.cwd()
    if spec is None:
        raise InputError("the platform has no [mapping] section; expected one there or --mapping",
                         source=str(args.platform))
    try:
        mapping = spec.build(platform, schedule.nprocs, base_dir)
    except InputError as exc:
        raise exc.located(source=str(args.platform) if not args.mapping else None,
                          where="--mapping" if args.mapping else "mapping") from None
    params = load_params(args.params)
    model = MODELS[args.model](params.for_model(args.model))
    try:
        placed = PlacedSchedule.of(schedule, platform, mapping)
    except InputError as exc:
        raise exc.located(source=str(args.platform)) from None
    try:
        cost = model.price(placed, explain=args.explain)
    except InputError as exc:
        raise exc.located(source=str(args.params)) from None
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(cost_to_dict(cost, schedule.name), indent=2))
    else:
        print(render_text(cost, schedule.name))
    return 0


@command("models", "list the cost models", lambda p: None)
def _models(args: argparse.Namespace) -> int:
    from commcost.models import MODELS

    width = max(len(name) for name in MODELS)
    for name in sorted(MODELS):
        print(f"{name:<{width}}  {MODELS[name].DESCRIPTION}")
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for bad files
        self.exit(2, f"{self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, built from the registered commands."""
    parser = _Parser(prog="commcost", description="Predict and explain the communication cost of MPI programs.")
    parser.add_argument("--version", action="version", version=f"commcost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (help_text, configure, _) in COMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return COMMANDS[args.command][2](args)
    except InputError as exc:
        print(f"commcost: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"commcost: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
