"""IMB-MPI1 (Intel MPI Benchmarks) outputs read as measurement rows.

An IMB-MPI1 output has one block per benchmark and process count::

    #----------------------------------------------------------------
    # Benchmarking Allreduce
    # #processes = 4
    #----------------------------------------------------------------
           #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
                0         1000         0.03         0.04         0.03
                4         1000         0.91         1.02         0.97

The block says the benchmark and the number of active ranks (``-multi``
blocks, ``# Benchmarking Multi-PingPong``, where several groups run at
once, are refused); the algorithm, ranks per node and nodes come from the
caller or a file-name pattern, as for OSU outputs. Times are in microseconds: ``t[usec]`` (PingPong: half the
round trip) or ``t_avg`` give time_s_mean, ``t_min``/``t_max`` (over ranks)
give time_s_min/time_s_max, ``#repetitions`` gives reps. Uniband and Biband,
which report only rates, are stored as the time per message 1 / (Msg/sec).
The header's ``# Date : Mon Nov 23 19:08:17 2026`` (the machine's local
time) is the rows' timestamp; without it, the file's modification time.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from commcost.errors import InputError
from commcost.io.measurements import Measurement
from commcost.io.text_lines import refuse_binary
from commcost.units import MAX_DIGITS, whole_number
from commcost.io.osu_import import (RunContext, cell_number, check_context, fields_from_name, file_timestamp,
                                    finish_row, is_table_row)

_BENCHMARKING = re.compile(r"^#\s*Benchmarking\s+(?P<multi>Multi-)?(?P<name>\S+)")
_PROCESSES = re.compile(r"^#\s*#processes\s*=\s*(?P<n>\d+)")
_DATE = re.compile(r"^#\s*Date\s*:\s*(?P<date>.+?)\s*$")
_COLLECTIVES = {
    "Bcast", "Allreduce", "Reduce", "Reduce_local", "Reduce_scatter", "Reduce_scatter_block",
    "Allgather", "Allgatherv", "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Barrier",
}
_POINT_TO_POINT = {"PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband",
                   "PingPongSpecificSource", "PingPingSpecificSource", "PingPongAnySource", "PingPingAnySource"}
_COLUMNS = {
    "#bytes": "nbytes", "#repetitions": "reps", "t[usec]": "t", "t_min[usec]": "t_min",
    "t_max[usec]": "t_max", "t_avg[usec]": "t_avg", "Mbytes/sec": "mbps", "Msg/sec": "msgs", "defects": "defects",
}


def _header(tokens: list[str], source: str, line: int) -> list[str]:
    unknown = [t for t in tokens if t not in _COLUMNS]
    if unknown:
        raise InputError(f"unknown column {unknown[0]!r} in the IMB table header; expected columns among "
                         f"{', '.join(_COLUMNS)}", source=source, where=f"line {line}")
    names = [_COLUMNS[t] for t in tokens]
    if not any(n in names for n in ("t", "t_avg", "msgs")):
        raise InputError("expected a t[usec], t_avg[usec] or Msg/sec column", source=source, where=f"line {line}")
    return names


def _row(names: list[str], tokens: list[str], source: str, line: int) -> dict:
    if len(tokens) != len(names):
        raise InputError(f"expected {len(names)} values as in the table header, got {len(tokens)}",
                         source=source, where=f"line {line}")
    labels = {v: k for k, v in _COLUMNS.items()}
    cell = {name: cell_number(tok, labels[name], source, line, name in ("nbytes", "reps", "defects"))
            for name, tok in zip(names, tokens)}
    out: dict = {"nbytes": int(cell.get("nbytes", 0))}
    if "reps" in cell:
        out["reps"] = int(cell["reps"])
    if "t" in cell or "t_avg" in cell:
        out["time_s_mean"] = cell["t" if "t" in cell else "t_avg"] / 1e6
        if "t_avg" in cell:  # the mean over ranks of each rank's time (t_min and t_max its extremes)
            out["statistic"] = "mean"
    else:
        if cell["msgs"] <= 0:
            raise InputError("Msg/sec: a rate of 0 gives no time per message", source=source, where=f"line {line}")
        out["time_s_mean"] = 1.0 / cell["msgs"]
    if "t_min" in cell:
        out["time_s_min"] = cell["t_min"] / 1e6
    if "t_max" in cell:
        out["time_s_max"] = cell["t_max"] / 1e6
    return out


def _iso_date(text: str) -> str:
    """IMB's header date (C ``asctime``: ``Mon Nov 23 19:08:17 2026``) as ISO 8601, or '' if it is not one."""
    try:
        return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y").isoformat(timespec="seconds")
    except ValueError:
        return ""


def parse_imb(text: str, source: str, context: RunContext = RunContext(), timestamp: str = "") -> list[Measurement]:
    """The rows of an IMB-MPI1 output's text; the block's #processes is the row's nprocs.

    ``timestamp`` is used when the header has no ``# Date`` line.
    """
    check_context(context)
    rows: list[Measurement] = []
    name: str | None = None
    nprocs: int | None = None
    names: list[str] | None = None
    ctx = context
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            names = None  # a blank line ends a table
            continue
        match = _DATE.match(line)
        if match and name is None:
            timestamp = _iso_date(match.group("date")) or timestamp
            continue
        match = _BENCHMARKING.match(line)
        if match:
            name, nprocs, names = match.group("name"), None, None
            if match.group("multi"):
                raise InputError(f"IMB -multi output (Multi-{name}: groups of ranks running at once) is not "
                                 "read: no column holds the number of groups; run IMB-MPI1 without -multi",
                                 source=source, where=f"line {number}")
            if name not in _COLLECTIVES and name not in _POINT_TO_POINT:
                raise InputError(f"IMB benchmark {name!r} is not one this reader knows; it reads "
                                 f"{', '.join(sorted(_POINT_TO_POINT | _COLLECTIVES))}",
                                 source=source, where=f"line {number}")
            continue
        match = _PROCESSES.match(line)
        if match and name:
            nprocs = whole_number(match.group("n"))
            if nprocs is None:
                raise InputError(f"#processes: a count of {len(match.group('n')):,} digits; expected at most "
                                 f"{MAX_DIGITS}", source=source, where=f"line {number}")
            collective = name.lower() if name in _COLLECTIVES else ""
            if context.collective is not None and context.collective != collective:
                raise InputError(f"--collective says {context.collective!r} but the block is {name}",
                                 source=source, where=f"line {number}")
            ctx = context.merged({"nprocs": nprocs}, source, f"the block at line {number}")
            ctx = replace(ctx, collective=collective)
            continue
        tokens = line.split()
        if tokens[0] in ("#bytes", "#repetitions"):
            if name is None or nprocs is None:
                raise InputError("a table before any '# Benchmarking NAME' / '# #processes = N' lines",
                                 source=source, where=f"line {number}")
            names = _header(tokens, source, number)
            continue
        if not is_table_row(line, names):
            continue  # comments, launcher noise, text around the tables
        row = _row(names, tokens, source, number)
        row.update(benchmark=f"imb_{name.lower()}", collective=ctx.collective, timestamp=timestamp)
        rows.append(finish_row(row, ctx, source))
    if name is None:
        raise InputError("no '# Benchmarking NAME' block found; is this an IMB-MPI1 output?", source=source)
    if not rows:
        raise InputError("no table rows found in the IMB blocks", source=source)
    return rows


def read_imb(path: str | Path, context: RunContext = RunContext(), name_pattern: str | None = None) -> list[Measurement]:
    """Read one IMB-MPI1 output file; a name pattern fills in what the context leaves out."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the IMB output ({exc.strerror})", source=source) from None
    refuse_binary(text, "IMB output", source)
    if name_pattern:
        fields = fields_from_name(name_pattern, path)
        if "nprocs" in fields:
            raise InputError("an IMB output says its #processes; --name-pattern cannot set {nprocs}",
                             where="--name-pattern")
        context = context.merged(fields, source, "the file name")
    return parse_imb(text, source, context, timestamp=file_timestamp(path))
