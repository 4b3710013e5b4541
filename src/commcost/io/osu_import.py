"""OSU micro-benchmark outputs (osu_latency, osu_bw, osu_bcast, ...) read as measurement rows.

An OSU output is a title line, a column header and one row per size::

    # OSU MPI Broadcast Latency Test v7.3
    # Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
    1                       1.52              0.93              2.12        1000

Other ``#`` lines and lines that are not rows (launcher noise before the
title, ``DATA VALIDATION ERROR: ...`` after it) are skipped; a row that
starts with a number but does not fit the header is an error naming its
line. What OSU 7.4 adds to the table is read too: ``-z`` tail latencies
(``P50 Tail Lat(us)`` is the median; other percentiles are checked, not
stored), and ``-c`` validation (``Validation`` ``Pass``/``Fail``: a failed
row measured a wrong result and is skipped, with a note). ``-T all`` prints
one table per ``# Datatype: X.`` line; the sizes repeat, so such a file is
read only with ``datatype`` naming the table to take.

The file does not say how many ranks ran, on how many nodes, nor which
algorithm the MPI used: the caller says so (:class:`RunContext`), or a name
pattern such as ``{algorithm}_{nprocs}ranks_run{run}.out`` takes them from
the file name. Latencies are in microseconds; bandwidths (MB/s, 1 MB =
10^6 bytes as OSU computes them) are stored as the time per message
``nbytes / (MB/s * 1e6)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path

from commcost.errors import InputError
from commcost.io.measurements import Measurement
from commcost.io.text_lines import reads_as_number, refuse_binary

# ---------------------------------------------------------------- what the caller says

_NAME_FIELDS = {"algorithm": str, "collective": str, "channel": str, "mpi": str, "host": str,
                "nprocs": int, "ppn": int, "nnodes": int, "run": int}


@dataclass(frozen=True)
class RunContext:
    """What the output file does not say; None = not given."""

    collective: str | None = None
    algorithm: str | None = None
    nprocs: int | None = None
    ppn: int | None = None
    nnodes: int | None = None
    channel: str | None = None
    mpi: str | None = None
    host: str | None = None
    run: int | None = None

    def merged(self, other: dict, source: str, what: str) -> "RunContext":
        """This context with ``other``'s values filled in; a value both give differently is an error."""
        updates = {}
        for name, value in other.items():
            mine = getattr(self, name)
            if value is None:
                continue
            if mine is not None and mine != value:
                raise InputError(f"--{name.replace('_', '-')} says {mine!r} but {what} says {value!r}",
                                 source=source)
            updates[name] = value
        return replace(self, **updates)


def compile_name_pattern(pattern: str) -> re.Pattern:
    """A regular expression for a pattern like ``{algorithm}_{nprocs}ranks_run{run}.out``.

    Fields: {algorithm}, {collective}, {channel}, {mpi}, {host} (text) and
    {nprocs}, {ppn}, {nnodes}, {run} (integers); ``*`` matches anything.
    A text field takes as much as it can (``{algorithm}_*.txt`` reads
    ``split_binary_tree_2024.txt`` as algorithm ``split_binary_tree``).
    """
    parts = re.split(r"(\{[^{}]*\})", pattern)
    seen: set[str] = set()
    regex = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            if name not in _NAME_FIELDS:
                raise InputError(f"unknown field {part}; expected fields among "
                                 f"{', '.join('{' + n + '}' for n in _NAME_FIELDS)}", where="--name-pattern")
            if name in seen:
                regex.append(f"(?P={name})")
            else:
                seen.add(name)
                regex.append(rf"(?P<{name}>\d+)" if _NAME_FIELDS[name] is int else rf"(?P<{name}>[^/]+)")
        else:
            if "{" in part or "}" in part:
                raise InputError(f"unbalanced brace in {pattern!r}", where="--name-pattern")
            regex.append(".*?".join(re.escape(piece) for piece in part.split("*")))
    if not seen:
        raise InputError(f"expected at least one {{field}} in {pattern!r}", where="--name-pattern")
    return re.compile("".join(regex))


def fields_from_name(pattern: str, path: str | Path) -> dict:
    """The fields a name pattern takes from a file's name (its path's tail if the pattern has '/')."""
    regex = compile_name_pattern(pattern)
    text = Path(path).as_posix()
    depth = pattern.count("/") + 1
    tail = "/".join(text.split("/")[-depth:])
    match = regex.fullmatch(tail)
    if not match:
        raise InputError(f"the file name {tail!r} does not match --name-pattern {pattern!r}", source=str(path))
    return {name: (int(value) if _NAME_FIELDS[name] is int else value)
            for name, value in match.groupdict().items()}


def file_timestamp(path: str | Path) -> str:
    """The file's modification time, ISO 8601 in UTC (when the benchmark wrote it, near enough)."""
    try:
        mtime = Path(path).stat().st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat(timespec="seconds")


def finish_row(row: dict, context: RunContext, source: str) -> Measurement:
    """A Measurement from a parsed row and what the caller said (nnodes from ppn, channel for 2 ranks)."""
    nprocs = context.nprocs
    nnodes = context.nnodes
    if nnodes is None and context.ppn is not None:
        nnodes = math.ceil(nprocs / context.ppn)
    channel = context.channel
    if channel is None and not row.get("collective") and nprocs == 2 and nnodes is not None:
        channel = "shm" if nnodes == 1 else "net"
    values = dict(row)
    values.update(algorithm=context.algorithm or "", nprocs=nprocs, nnodes=nnodes, ppn=context.ppn,
                  channel=channel or "", mpi=context.mpi or "", host=context.host or "",
                  run=context.run or 0, source=source)
    try:
        return Measurement(**values)
    except InputError as exc:  # a caller's value out of range
        raise exc.located(source=source) from None


def check_context(context: RunContext) -> None:
    """The caller's integers in range (the name pattern only yields digits; options may be anything)."""
    for name, minimum in (("nprocs", 1), ("ppn", 1), ("nnodes", 1), ("run", 0)):
        value = getattr(context, name)
        if value is not None and value < minimum:
            raise InputError(f"expected an integer >= {minimum}, got {value}", where=f"--{name}")


# ---------------------------------------------------------------- the OSU formats

_TITLE = re.compile(r"^#\s*OSU\s+(?:MPI|OpenSHMEM|UPC\+\+|UPC|NCCL)\S*\s+(?P<what>.+?)\s+Test"
                    r"(?:\s+v(?P<version>\S+))?\s*$")
_POINT_TO_POINT = {
    "Latency": "osu_latency",
    "Bandwidth": "osu_bw",
    "Bi-Directional Bandwidth": "osu_bibw",
    "Multiple Bandwidth / Message Rate": "osu_mbw_mr",
    "Multi Latency": "osu_multi_lat",
    "Latency Multi-threaded": "osu_latency_mt",
}
_PAIR_ONLY = {"osu_latency", "osu_bw", "osu_bibw"}  # they stop unless run on 2 ranks
_COLLECTIVES = {
    "Broadcast": "bcast", "Allreduce": "allreduce", "Allgather": "allgather", "Allgatherv": "allgatherv",
    "Alltoall": "alltoall", "Alltoallv": "alltoallv", "Alltoallw": "alltoallw", "Reduce": "reduce",
    "Reduce_scatter": "reduce_scatter", "Reduce_scatter_block": "reduce_scatter_block",
    "Scatter": "scatter", "Scatterv": "scatterv", "Gather": "gather", "Gatherv": "gatherv",
    "Barrier": "barrier",
}
# titles of OSU before 5.7 (e.g. 5.6.2: "OSU MPI All-to-All Personalized Exchange Latency Test")
_OLD_TITLES = {"All-to-All Personalized Exchange Latency": "Alltoall Latency",
               "All-to-Allv Personalized Exchange Latency": "Alltoallv Latency"}
_LABELS = re.compile(
    r"(?P<size>\bSize\b)|(?P<avg>Avg\s+Latency\s*\(us\))|(?P<min>Min\s+Latency\s*\(us\))"
    r"|(?P<max>Max\s+Latency\s*\(us\))|(?P<tail>\bP(?P<percent>\d{1,2})\s+Tail\s+Lat\s*\(us\))"
    r"|(?P<latency>Latency\s*\(us\))"
    r"|(?P<bandwidth>Bandwidth\s*\(MB/s\)|\bMB/s)|(?P<rate>Messages/s)"
    r"|(?P<iterations>\bIterations\b)|(?P<validation>\bValidation\b)"
)
_COLUMN_HEADER = re.compile(r"^#\s*(Size\b|Avg\s+Latency)")
_DATATYPE = re.compile(r"^#\s*Datatype:\s*(?P<name>\S+?)\.?\s*$")
_VALIDATION = ("Pass", "Fail")


def _benchmark(what: str, source: str, line: int) -> tuple[str, str]:
    """(benchmark, collective) from the title's middle: 'Broadcast Latency' -> ('osu_bcast', 'bcast')."""
    if what in _POINT_TO_POINT:
        return _POINT_TO_POINT[what], ""
    what = _OLD_TITLES.get(what, what)
    match = re.fullmatch(r"(\w+)\s+Latency", what)
    if match and match.group(1) in _COLLECTIVES:
        collective = _COLLECTIVES[match.group(1)]
        return f"osu_{collective}", collective
    known = [*(f"{w} Test" for w in _POINT_TO_POINT), *(f"{c} Latency Test" for c in _COLLECTIVES)]
    raise InputError(f"not an OSU test this reader knows ({what!r}); it reads the blocking ones: "
                     f"{', '.join(known)}", source=source, where=f"line {line}")


def _columns(header: str, source: str, line: int) -> list[str]:
    text = header.lstrip("#")
    names = []
    rest = text
    for match in _LABELS.finditer(text):
        names.append(f"p{match.group('percent')}" if match.group("tail") else match.lastgroup)
        rest = rest.replace(match.group(0), " ", 1)
    if rest.strip():
        raise InputError(f"unknown column {rest.strip()!r} in the OSU header", source=source, where=f"line {line}")
    if not any(n in names for n in ("avg", "latency", "bandwidth")):
        raise InputError("expected a latency or bandwidth column in the OSU header", source=source,
                         where=f"line {line}")
    return names


def cell_number(token: str, column: str, source: str, line: int, integer: bool = False) -> float:
    """A table cell as a finite number >= 0 (an integer if asked); errors name the file, line and column."""
    try:
        value = int(token) if integer else float(token)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise InputError(f"{column}: expected {kind}, got {token!r}", source=source, where=f"line {line}") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{column}: expected a finite number >= 0, got {token!r}", source=source,
                         where=f"line {line}")
    return value


def is_table_row(line: str, names: list[str] | None) -> bool:
    """Whether a line under a table's header is one of its rows, to be read or refused: it starts with a
    digit, or it has the header's count of fields and every field after the first reads as a number (NaN and
    infinity included): a row whose size became ``inf`` or a word is broken, not launcher noise to skip. A
    line with a word after its first field is noise (``srun: Job 12 step creation ...``)."""
    if names is None or not line or line.startswith("#"):
        return False
    if line[0].isdigit():
        return True
    tokens = line.split()
    return len(tokens) == len(names) and len(tokens) >= 2 and all(reads_as_number(t) for t in tokens[1:])


def _row(names: list[str], tokens: list[str], source: str, line: int) -> dict | None:
    """A table row's values in seconds and bytes; None for a row whose validation failed."""
    if len(tokens) != len(names):
        raise InputError(f"expected {len(names)} values as in the header ({', '.join(names)}), got {len(tokens)}",
                         source=source, where=f"line {line}")
    cell = dict(zip(names, tokens))
    if "validation" in cell and cell["validation"] not in _VALIDATION:
        raise InputError(f"Validation: expected Pass or Fail, got {cell['validation']!r}", source=source,
                         where=f"line {line}")
    for name, token in cell.items():  # tail percentiles: checked; only the median (P50) has a column
        if name.startswith("p") and name[1:].isdigit():
            cell_number(token, f"P{name[1:]} Tail Lat(us)", source, line)
    if cell.get("validation") == "Fail":
        return None
    nbytes = int(cell_number(cell["size"], "Size", source, line, integer=True)) if "size" in cell else 0
    out: dict = {"nbytes": nbytes}
    if "bandwidth" in cell:
        mbps = cell_number(cell["bandwidth"], "MB/s", source, line)
        if mbps <= 0 or nbytes == 0:
            raise InputError(f"MB/s: a bandwidth of {cell['bandwidth']} for {nbytes} bytes gives no time "
                             "per message", source=source, where=f"line {line}")
        out["time_s_mean"] = nbytes / (mbps * 1e6)
    else:
        label = "avg" if "avg" in cell else "latency"
        out["time_s_mean"] = cell_number(cell[label], "Latency(us)", source, line) / 1e6
        if label == "avg":  # each rank times its own call between barriers; OSU prints their mean
            out["statistic"] = "mean"
    if "min" in cell:
        out["time_s_min"] = cell_number(cell["min"], "Min Latency(us)", source, line) / 1e6
    if "max" in cell:
        out["time_s_max"] = cell_number(cell["max"], "Max Latency(us)", source, line) / 1e6
    if "p50" in cell:
        out["time_s_median"] = cell_number(cell["p50"], "P50 Tail Lat(us)", source, line) / 1e6
    if "iterations" in cell:
        out["reps"] = int(cell_number(cell["iterations"], "Iterations", source, line, integer=True))
    return out


def parse_osu(text: str, source: str, context: RunContext = RunContext(), timestamp: str = "",
              datatype: str | None = None, notes: list[str] | None = None) -> list[Measurement]:
    """The rows of an OSU output's text; ``source`` names it in errors and in the ``source`` column.

    ``datatype`` (e.g. ``MPI_INT``) takes only that ``# Datatype:`` table; it
    is needed when the file has several (``-T all``). Rows skipped for a
    failed validation are told in ``notes``, one line each, when given.
    """
    check_context(context)
    rows: list[Measurement] = []
    benchmark = collective = None
    names: list[str] | None = None
    ctx = context
    current_type: str | None = None  # the table's datatype, None before any '# Datatype:' line
    seen_types: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        title = _TITLE.match(line)
        if title:
            benchmark, collective = _benchmark(title.group("what"), source, number)
            names = None
            ctx = context
            if collective and context.collective is not None and context.collective != collective:
                raise InputError(f"--collective says {context.collective!r} but the title says "
                                 f"{collective!r}", source=source, where=f"line {number}")
            if not collective and context.collective:
                raise InputError(f"--collective {context.collective!r} given but {benchmark} is point-to-point",
                                 source=source, where=f"line {number}")
            if ctx.nprocs is None and not collective:
                ctx = replace(ctx, nprocs=2)
            if benchmark in _PAIR_ONLY and ctx.nprocs != 2:
                raise InputError(f"{benchmark} runs on exactly 2 ranks, but nprocs is {ctx.nprocs}",
                                 source=source, where=f"line {number}")
            if ctx.nprocs is None:
                raise InputError(f"{benchmark} does not say how many ranks ran; give --nprocs or a "
                                 "--name-pattern with {nprocs}", source=source)
            continue
        if line.startswith("#"):
            kind = _DATATYPE.match(line)
            if kind:
                current_type, names = kind.group("name"), None
                if current_type not in seen_types:
                    seen_types.append(current_type)
                if datatype is None and len(seen_types) > 1:
                    raise InputError(f"a second datatype table ({current_type} after {seen_types[0]}, as "
                                     "osu_* -T all prints): their sizes repeat; give --datatype to import one",
                                     source=source, where=f"line {number}")
            elif benchmark and _COLUMN_HEADER.match(line):
                names = _columns(line, source, number)
            continue
        if not is_table_row(line, names):
            continue  # launcher noise, or text around the table
        row = _row(names, line.split(), source, number)
        if datatype is not None and current_type != datatype:
            continue
        if row is None:
            if notes is not None:
                notes.append(f"{source}:line {number}: validation Fail, row skipped")
            continue
        row.update(benchmark=benchmark, collective=collective, timestamp=timestamp)
        rows.append(finish_row(row, ctx, source))
    if benchmark is None:
        raise InputError("no OSU title line ('# OSU MPI ... Test vX.Y') found; is this an OSU output?",
                         source=source)
    if datatype is not None and datatype not in seen_types:
        found = ", ".join(seen_types) or "no '# Datatype:' line"
        raise InputError(f"--datatype {datatype}: no such table; the file has {found}", source=source)
    if not rows:
        raise InputError(f"no rows found under the {benchmark} header", source=source)
    return rows


def read_osu(path: str | Path, context: RunContext = RunContext(), name_pattern: str | None = None,
             datatype: str | None = None, notes: list[str] | None = None) -> list[Measurement]:
    """Read one OSU output file; a name pattern fills in what the context leaves out (see :func:`parse_osu`)."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the OSU output ({exc.strerror})", source=source) from None
    refuse_binary(text, "OSU output", source)
    if name_pattern:
        context = context.merged(fields_from_name(name_pattern, path), source, "the file name")
    return parse_osu(text, source, context, file_timestamp(path), datatype, notes)


assert set(_NAME_FIELDS) == {f.name for f in fields(RunContext)}
