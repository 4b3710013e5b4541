"""Layout tables (paper 000, Table 1) as whitespace-separated text.

::

    # comment lines start with '#'
    Name  M    c=6  c=5  c=4  c=3  c=2  GPU  P
    M1    1+0  2    0    0    0    0    0    2
    M13   9+4  12   3    9    1    1    12   38

``Name`` and ``M`` are required; ``M`` counts nodes per node type, types in
the order the platform declares them. Any number of ``c=K`` columns give
CPU processes of K cores; ``GPU`` (optional) gives GPU processes; ``P``
(optional) is checked against their sum.
"""

from __future__ import annotations

import re
from pathlib import Path

from commcost.errors import InputError
from commcost.platform.layout import LayoutRow
from commcost.io.text_lines import text_of
from commcost.units import MAX_DIGITS, whole_number

_CORES = re.compile(r"^c=(\d+)$")


def read_layout_table(path: str | Path) -> dict[str, LayoutRow]:
    """Rows of a layout table by name; errors name the file, line and column."""
    source = str(path)
    lines = text_of(path, "layout table").splitlines()
    header: list[str] | None = None
    rows: dict[str, LayoutRow] = {}
    for lineno, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        if header is None:
            header = _read_header(fields, source, lineno)
            continue
        row = _read_row(header, fields, source, lineno)
        if row.name in rows:
            raise InputError(f"layout {row.name!r} is defined twice; expected unique names",
                             source=source, where=f"line {lineno}")
        rows[row.name] = row
    if header is None or not rows:
        raise InputError("expected a header line (Name M c=K ... GPU P) and at least one row", source=source)
    return rows


def _read_header(fields: list[str], source: str, lineno: int) -> list[str]:
    if fields[:2] != ["Name", "M"]:
        raise InputError(f"expected the header to start with 'Name M', got {' '.join(fields[:2])!r}",
                         source=source, where=f"line {lineno}")
    for column in fields[2:]:
        if column not in ("GPU", "P") and not _CORES.match(column):
            raise InputError(f"unknown column {column!r}; expected c=K (K cores per process), GPU or P",
                             source=source, where=f"line {lineno}")
        if _CORES.match(column) and whole_number(column[2:]) is None:
            raise InputError(f"column c=K with a K of {len(column) - 2:,} digits; expected at most {MAX_DIGITS}",
                             source=source, where=f"line {lineno}")
    if len(set(fields)) != len(fields):
        raise InputError("a column is named twice", source=source, where=f"line {lineno}")
    return fields


def _read_row(header: list[str], fields: list[str], source: str, lineno: int) -> LayoutRow:
    where = f"line {lineno}"
    if len(fields) != len(header):
        raise InputError(f"expected {len(header)} columns ({' '.join(header)}), got {len(fields)}",
                         source=source, where=where)
    name, m_text = fields[0], fields[1]
    if not re.fullmatch(r"\d+(\+\d+)*", m_text):
        raise InputError(f"column 'M': expected node counts per node type such as 9+7, got {m_text!r}",
                         source=source, where=where)
    if any(whole_number(k) is None for k in m_text.split("+")):
        raise InputError(f"column 'M': a node count of more than {MAX_DIGITS} digits; expected node counts per "
                         "node type such as 9+7", source=source, where=where)
    counts: dict[str, int] = {}
    for column, value in zip(header[2:], fields[2:]):
        if not (value.isdigit() and value.isascii()):
            raise InputError(f"column {column!r}: expected an integer >= 0, got {value!r}",
                             source=source, where=where)
        if whole_number(value) is None:
            raise InputError(f"column {column!r}: a count of {len(value):,} digits; expected at most {MAX_DIGITS}",
                             source=source, where=where)
        counts[column] = int(value)
    cpu = tuple((int(_CORES.match(c).group(1)), n) for c, n in counts.items() if _CORES.match(c) and n)
    if any(cores == 0 for cores, _ in cpu):
        raise InputError("column 'c=0': a CPU process needs at least one core", source=source, where=where)
    row = LayoutRow(name, tuple(int(k) for k in m_text.split("+")), cpu, counts.get("GPU", 0))
    if "P" in counts and counts["P"] != row.nprocs:
        raise InputError(f"column 'P' is {counts['P']}, but the process columns sum to {row.nprocs}",
                         source=source, where=where)
    return row
