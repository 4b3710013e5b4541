"""``commcost params repair``'s work: project measured tau-Lop tables onto the model's constraints.

FILE is a table in the authors' C++ format (written back in that format) or
a parameter file (.toml), whose ``[taulop]`` tables, from files or inline,
are all repaired and written inline into OUT with the rest of the file
unchanged; so are its ``[reduction.<op>]`` tables (gamma made
non-decreasing in m by the same isotonic fit). Each table's report says how
many cells moved and the largest move (:mod:`commcost.models.taulop.repair`).
"""

from __future__ import annotations

from pathlib import Path

from commcost.errors import InputError


def repair_params(file: Path, out: Path) -> dict[str, dict]:
    """Repair the tables of ``file`` and write them to ``out``; each table's summary by its name (the
    file's, or ``[taulop.<name>]`` and ``[reduction.<op>]``)."""
    from commcost.io.taulop_table import read_taulop_table, write_taulop_table
    from commcost.models.taulop.repair import repair_channel

    if out.resolve() == file.resolve():
        raise InputError("expected an output file other than the input (the measured table stays as it was)",
                         where="--out")
    reports: dict[str, dict] = {}
    if file.suffix.lower() == ".toml":
        doc = _repaired_toml(file, reports)
        import tomli_w

        out.write_text(tomli_w.dumps(doc), encoding="utf-8")
    else:
        repair = repair_channel(read_taulop_table(file, strict=False))
        write_taulop_table(repair.after, out)
        reports[str(file)] = repair.summary()
    return reports


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
