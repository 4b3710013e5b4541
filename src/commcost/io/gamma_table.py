"""The reduction times (gamma) of the tau-Lop authors' library, read as one operation's ReductionLaw.

Format (libtaulop ``params/<machine>/gamma.txt``; tab- or space-separated,
seconds)::

    #m        30
    #max_ops  18
    #size     MAX_I     MIN_I     SUM_I     ...
    4         1.873e-07 1.889e-07 2.400e-07 ...

The first line gives the number of rows, the second the number of
operations; the ``#size`` line names the columns (an operation and a
datatype: ``SUM_I`` is MPI_SUM on integers, ``SUM_R`` on reals); then one
row per size m (bytes) with gamma(m) of every operation. The library's
other machines write ``#m:``, ``#tau_op:`` and a ``#m max min sum ...``
names line; both forms are read. A parameter file
takes one column as ``[reduction.<op>] file = "gamma.txt", column = "SUM_I"``
(libtaulop's default operation is ``SUM_I``).

Measured columns are not always increasing in m (metropolis' SUM_I takes
2.4e-7 s at 4 B and 1.6e-7 s at 64 B); such a column loads as measured with
one warning (how many sizes, the worst), and ``strict`` refuses it, as the
tau-Lop tables (:mod:`.taulop_table`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from commcost.errors import InputError
from commcost.io.text_lines import count_header, text_of
from commcost.models.reduction import ReductionLaw, beyond_rule

KEYS = ("file", "column", "beyond_m")


def read_gamma_table(path: str | Path, column: str, op: str | None = None, strict: bool = True,
                     warnings: list[str] | None = None, beyond_m: str = "chunks") -> ReductionLaw:
    """gamma(m) of the operation in ``column``; errors name the file, the line and what was expected.

    A column whose times fall as m grows is refused when ``strict``; otherwise it loads as measured and one
    line on it goes to ``warnings``.
    """
    source = str(path)
    lines = text_of(path, "reduction table").splitlines()
    if len(lines) < 3:
        raise InputError("expected '#m <count>', '#max_ops <count>' and the '#size ...' column names on the "
                         "first three lines", source=source)
    nrows = count_header(lines[0], ("#m",), source, 1)
    nops = count_header(lines[1], ("#max_ops", "#tau_op"), source, 2)
    names = lines[2].split()
    if not names or names[0] not in ("#size", "#m") or len(names) != nops + 1:
        raise InputError(f"expected '#size' and {nops} operation names, got {lines[2].strip()!r}", source=source,
                         where="line 3")
    if column not in names[1:]:
        raise InputError(f"no column {column!r}; expected one of {', '.join(names[1:])}", source=source,
                         where="column")
    k = names.index(column)
    sizes, times, linenos = [], [], []
    for lineno, line in enumerate(lines[3:], start=4):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        if len(fields) != nops + 1:
            raise InputError(f"expected {nops + 1} columns (size and {nops} times), got {len(fields)}",
                             source=source, where=f"line {lineno}")
        try:
            m, t = float(fields[0]), float(fields[k])
        except ValueError:
            raise InputError(f"expected numbers, got {fields[0]!r} and {fields[k]!r}", source=source,
                             where=f"line {lineno}") from None
        if not (np.isfinite(m) and np.isfinite(t)) or m < 0 or t < 0:
            raise InputError(f"expected a size and a time >= 0, got {fields[0]} and {fields[k]}", source=source,
                             where=f"line {lineno}")
        if sizes and m <= sizes[-1]:
            raise InputError(f"size {fields[0]} is not above the previous {sizes[-1]:g}", source=source,
                             where=f"line {lineno}")
        sizes.append(m)
        times.append(t)
        linenos.append(lineno)
    if len(sizes) != nrows:
        raise InputError(f"expected {nrows} rows (the '#m' line), got {len(sizes)}", source=source)
    t = np.array(times)
    drops = np.flatnonzero(t[1:] < t[:-1]) + 1  # rows below the row before
    if len(drops):
        worst = drops[np.argmax(1 - t[drops] / t[drops - 1])]
        what = (f"gamma(m={sizes[worst]:g}) = {t[worst]:g} is below gamma(m={sizes[worst - 1]:g}) = "
                f"{t[worst - 1]:g}; expected gamma non-decreasing in m")
        if strict:
            raise InputError(what, source=source, where=f"line {linenos[worst]}")
        if warnings is not None:
            sizes_word = "size falls" if len(drops) == 1 else "sizes fall"
            warnings.append(f"{source}: column {column}: {len(drops)} {sizes_word} below the size before "
                            f"(measured noise?); worst at line {linenos[worst]}: {what}; loaded as measured "
                            "(strict refuses it)")
    m = np.array(sizes)
    return ReductionLaw(op or column.lower(), m, t, beyond_rule(beyond_m, "beyond_m", m))


def reduction_from_file(op: str, body: dict[str, Any], base: Path, strict: bool,
                        warnings: list[str]) -> ReductionLaw:
    """``[reduction.<op>] file = "...", column = "...", beyond_m = ...`` (the file relative to ``base``)."""
    unknown = set(body) - set(KEYS)
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r}; expected {', '.join(KEYS)}", where=op)
    for key in ("file", "column"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise InputError(f"expected {key} = \"...\"", where=f"{op}.{key}")
    return read_gamma_table(base / body["file"], body["column"], op, strict, warnings,
                            body.get("beyond_m", "chunks"))
