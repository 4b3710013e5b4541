"""``commcost params repair FILE -o OUT``: project measured tau-Lop tables onto the model's constraints.

FILE is a table in the authors' C++ format (written back in that format) or
a parameter file (.toml), whose ``[taulop]`` tables, from files or inline,
are all repaired and written inline into OUT with the rest of the file
unchanged; so are its ``[reduction.<op>]`` tables (gamma made
non-decreasing in m by the same isotonic fit). One line per table says how
many cells moved and the largest move (:mod:`commcost.models.taulop.repair`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.registry import OutputFormat, command
from commcost.workflows.params_repair import repair_params


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["repair"],
                   help="repair: project tau-Lop tables onto the constraints (isotonic in m, "
                        "L(m,1) <= L(m,tau) <= tau L(m,1))")
    p.add_argument("file", type=Path, help="a tau-Lop table (C++ format) or a parameter file (.toml)")
    p.add_argument("-o", "--out", required=True, type=Path, help="where to write the repaired table or file")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])


def _describe(name: str, summary: dict) -> str:
    if not summary["moved"]:
        return f"{name}: no cell moved ({summary['cells']} cells already hold the constraints)"
    big = summary["largest"]
    return (f"{name}: {summary['moved']} of {summary['cells']} cells moved (median {100 * summary['median_relative']:.1f}%); "
            f"largest {big['cell']} {big['before_s']:.4g} -> {big['after_s']:.4g} s "
            f"({100 * big['relative']:.0f}%)")


@command("params", "inspect and repair parameter files: params repair FILE -o OUT", _configure)
def _params(args: argparse.Namespace) -> int:
    reports = repair_params(args.file, args.out)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "tables": reports}, indent=2))
    else:
        for name, summary in reports.items():
            print(_describe(name, summary))
        print(f"wrote {args.out}")
    return 0
