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
from commcost.errors import InputError


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
    from commcost.io.taulop_table import read_taulop_table, write_taulop_table
    from commcost.models.taulop.repair import repair_channel

    if args.out.resolve() == args.file.resolve():
        raise InputError("expected an output file other than the input (the measured table stays as it was)",
                         where="--out")
    reports = {}
    if args.file.suffix.lower() == ".toml":
        doc = _repaired_toml(args.file, reports)
        import tomli_w

        args.out.write_text(tomli_w.dumps(doc), encoding="utf-8")
    else:
        repair = repair_channel(read_taulop_table(args.file, strict=False))
        write_taulop_table(repair.after, args.out)
        reports[str(args.file)] = repair.summary()
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "tables": reports}, indent=2))
    else:
        for name, summary in reports.items():
            print(_describe(name, summary))
        print(f"wrote {args.out}")
    return 0


def _repaired_toml(path: Path, reports: dict) -> dict:
    """The parameter file's document with every [taulop] table repaired and inline."""
    from commcost.io.toml_file import read_toml
    from commcost.io.params_file import load_params
    from commcost.models.taulop.repair import moves, nondecreasing, repair_channel

    params = load_params(path, strict=False)
    if "taulop" not in params.sections:
        raise InputError("no [taulop] section; expected tau-Lop tables to repair", source=str(path))
    doc = dict(read_toml(path).data)
    body = dict(doc["taulop"])
    for name, table in params.sections["taulop"].tables.items():
        repair = repair_channel(table)
        reports[f"[taulop.{name}]"] = repair.summary()
        body[name] = repair.after.to_dict()
    doc["taulop"] = body
    if "reduction" in params.sections:  # inline too: a file named relative to FILE would not resolve from OUT
        reductions = dict(doc["reduction"])
        for op, law in params.sections["reduction"].items():
            after = nondecreasing(law.time_s)
            reports[f"[reduction.{op}]"] = moves(law.time_s, after, [f"gamma(m={m:g})" for m in law.m])
            reductions[op] = {"m": law.m.tolist(), "time_s": after.tolist(), "beyond_m": law.beyond_m}
        doc["reduction"] = reductions
    meta = dict(doc.get("meta", {}))
    meta["repaired_from"] = str(path)
    doc["meta"] = meta
    return doc
