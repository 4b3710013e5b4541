"""The tau-Lop channel tables of the authors' C++ library, read and written.

Format (tab- or space-separated text, times in seconds)::

    #m 4
    #tau 3
    # m   o(m)   L(m,1)   L(m,2)   L(m,3)
    0     1e-6   2e-7     3e-7     4e-7
    ...

The first line gives the number of rows, the second the largest
concurrency; further lines starting with ``#`` are comments; then one row
per size m: ``m o(m) L(m,1) ... L(m,tau)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from commcost.errors import InputError
from commcost.io.text_lines import count_header, reads_as_number, text_of
from commcost.models.taulop.params import TauLopChannel


def read_taulop_table(path: str | Path, strict: bool = True, warnings: list[str] | None = None) -> TauLopChannel:
    """Load one channel's table; errors name the file, the line and what was expected.

    A table that breaks the model's constraints (measured noise: L(m, 2)
    below L(m, 1), o dropping as m grows) is refused when ``strict``;
    otherwise it loads as measured and one line on it (how many cells, the
    worst, its line) goes to ``warnings``.
    """
    source = str(path)
    lines = text_of(path, "tau-Lop table").splitlines()
    if len(lines) < 2:
        raise InputError("expected '#m <count>' and '#tau <max>' on the first two lines", source=source)
    nrows = count_header(lines[0], ("#m",), source, 1)
    tau_max = count_header(lines[1], ("#tau",), source, 2)
    rows, linenos = [], []
    for lineno, line in enumerate(lines[2:], start=3):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        if len(fields) != 2 + tau_max:
            raise InputError(
                f"expected {2 + tau_max} columns (m, o(m), L(m,1)..L(m,{tau_max})), got {len(fields)}",
                source=source, where=f"line {lineno}",
            )
        try:
            rows.append([float(f) for f in fields])
        except ValueError:
            bad = next(f for f in fields if not reads_as_number(f))
            column = fields.index(bad) + 1
            raise InputError(f"column {column}: expected a number, got {bad!r}",
                             source=source, where=f"line {lineno}") from None
        linenos.append(lineno)
    if len(rows) != nrows:
        raise InputError(f"the header announces {nrows} rows ('#m {nrows}') but the file has {len(rows)}",
                         source=source, where="line 1")
    table = np.array(rows)
    channel = TauLopChannel(table[:, 0], table[:, 1], table[:, 2:])
    line_of = lambda row: f"line {linenos[min(row, len(linenos) - 1)]}"  # noqa: E731
    problems = channel.problems()
    if problems:
        row, what = problems[0]
        raise InputError(what, source=source, where=line_of(row))
    if strict:
        found = channel.constraint_violations()
        if found:
            raise InputError(f"{found[0].what} (and {len(found) - 1} more cells; without strict the table loads "
                             "with a warning)" if len(found) > 1 else found[0].what,
                             source=source, where=line_of(found[0].row))
    elif warnings is not None:
        summary = channel.constraint_summary(line_of)
        if summary:
            warnings.append(f"{source}: {summary}")
    return channel


def write_taulop_table(channel: TauLopChannel, path: str | Path) -> None:
    """Write a channel's table in the same format (full precision)."""
    lines = [f"#m {len(channel.m)}", f"#tau {channel.tau_max}",
             "# m\to(m)\t" + "\t".join(f"L(m,{k})" for k in range(1, channel.tau_max + 1))]
    for m, o, L in zip(channel.m, channel.o_s, channel.L_s):
        size = str(int(m)) if float(m).is_integer() else repr(float(m))
        lines.append("\t".join([size, repr(float(o)), *(repr(float(x)) for x in L)]))
    Path(path).write_text("\n".join(lines) + "\n")

