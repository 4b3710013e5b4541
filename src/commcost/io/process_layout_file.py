"""Process layout files (paper 000 Fig. 1): the host and processing unit of each process, in rank order.

::

    # host   kind    count (optional, default 1)
    node0    cpu:4
    node0    gpu
    node1    cpu:2   3

``kind`` is ``cpu:K`` (a CPU process running on K cores) or ``gpu`` (a
process driving one GPU from a dedicated core). ``count`` repeats the
line. A layout table (paper 000 Table 1, ``Name M c=6 ...``) is read with
:func:`commcost.io.layout_file.read_layout_table` instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from commcost.errors import InputError
from commcost.io.text_lines import data_lines
from commcost.partition.processes import CPU, GPU, Process
from commcost.units import MAX_DIGITS, whole_number

MAX_PROCESSES = 10_000_000  # a layout past this is a typo; models price 1,000,000-rank collectives
_KIND = re.compile(r"^(?:cpu:(\d+)|gpu)$")


def read_process_layout(path: str | Path) -> list[Process]:
    """The processes of a layout file, rank 0 first; errors name the file, line and field."""
    source = str(path)
    processes: list[Process] = []
    for lineno, fields in data_lines(path, "layout file"):
        where = f"line {lineno}"
        if len(fields) not in (2, 3):
            raise InputError(f"expected 'host kind [count]', got {len(fields)} fields", source=source, where=where)
        match = _KIND.match(fields[1])
        if not match or (match.group(1) is not None and (whole_number(match.group(1)) or 0) < 1):
            raise InputError(f"field 'kind': expected cpu:K (K >= 1 cores) or gpu, got {fields[1]!r}",
                             source=source, where=where)
        count = fields[2] if len(fields) == 3 else "1"
        if count.isdigit() and count.isascii() and len(count) > MAX_DIGITS:  # past the limit; int() would raise
            raise InputError(f"field 'count': a layout holds at most {MAX_PROCESSES:,} processes, this line asks for "
                             f"a count of {len(count):,} digits", source=source, where=where)
        if (whole_number(count) or 0) < 1:
            raise InputError(f"field 'count': expected an integer >= 1, got {count!r}", source=source, where=where)
        if len(processes) + int(count) > MAX_PROCESSES:
            raise InputError(f"field 'count': a layout holds at most {MAX_PROCESSES:,} processes, this line brings "
                             f"it to {len(processes) + int(count):,}", source=source, where=where)
        proc = Process(fields[0], CPU, int(match.group(1))) if match.group(1) else Process(fields[0], GPU)
        processes.extend([proc] * int(count))
    if not processes:
        raise InputError("expected at least one process line 'host kind [count]'", source=source)
    return processes


def is_layout_table(path: str | Path) -> bool:
    """True when the file's first non-comment line is a layout table header (``Name M ...``)."""
    try:
        lines = data_lines(path, "layout file")
    except InputError:
        return False
    return bool(lines) and lines[0][1][:2] == ["Name", "M"]
