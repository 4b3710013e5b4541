"""The measurements store: one tidy CSV row per measured (or imported) point.

Columns, in this order (docs/file-formats.md, "Measurements (CSV)")::

    benchmark, collective, algorithm, nprocs, nnodes, ppn, channel, nbytes,
    segsize, tau, run, reps, time_s_mean, time_s_median, time_s_min,
    time_s_max, time_s_std, ci95_rel, converged, mpi, host, timestamp, source,
    statistic, element_bytes

An empty cell is "unknown / not applicable". A point is identified by its
:data:`KEY_COLUMNS`; the store never writes two rows with the same key, so a
run that re-measures only the points it does not have yet resumes where it
stopped.

Crash safety: :class:`MeasurementStore` appends each row with a single
``write`` of one complete line, then flushes and ``fsync``s, so a process
killed with ``kill -9`` loses no finished row. Every row ends with a newline;
a last line without one is an unfinished write: the store truncates it when
it opens the file, and :func:`read_measurements` ignores it.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Iterable, NamedTuple

import numpy as np

from commcost.errors import InputError
from commcost.io.text_lines import refuse_control
from commcost.units import MAX_NBYTES

COLUMNS = (
    "benchmark", "collective", "algorithm", "nprocs", "nnodes", "ppn", "channel", "nbytes",
    "segsize", "tau", "run", "reps", "time_s_mean", "time_s_median", "time_s_min",
    "time_s_max", "time_s_std", "ci95_rel", "converged", "mpi", "host", "timestamp", "source",
    "statistic", "element_bytes",
)
# what the times summarize over ranks (the benchmark's report): empty when unknown (files before this column)
RANK_STATISTICS = ("", "max", "mean", "min", "rank0")
KEY_COLUMNS = (
    "benchmark", "collective", "algorithm", "nprocs", "nnodes", "ppn", "channel", "nbytes",
    "segsize", "tau", "run", "mpi",
)
REQUIRED = ("benchmark", "nprocs", "nbytes", "time_s_mean")

_STRINGS = ("benchmark", "collective", "algorithm", "channel", "mpi", "host", "timestamp", "source", "statistic")
# integer columns and their minimum; those not in REQUIRED may be empty (None)
_MAX_COUNT = 2**62  # ranks, nodes, runs, repetitions: past this a cell is a typo (and no longer fits int64)
_INTEGERS = {"nprocs": 1, "nnodes": 1, "ppn": 1, "nbytes": 0, "segsize": 0, "tau": 1, "run": 0, "reps": 0,
             "element_bytes": 1}
_FLOATS = ("time_s_mean", "time_s_median", "time_s_min", "time_s_max", "time_s_std", "ci95_rel")


class MeasurementKey(NamedTuple):
    """The columns that identify a point (:data:`KEY_COLUMNS`)."""

    benchmark: str
    collective: str
    algorithm: str
    nprocs: int
    nnodes: int | None
    ppn: int | None
    channel: str
    nbytes: int
    segsize: int | None
    tau: int | None
    run: int
    mpi: str


@dataclass(frozen=True)
class Measurement:
    """One row of the store: a point and its timing statistics, times in seconds."""

    benchmark: str
    nprocs: int
    nbytes: int
    time_s_mean: float
    collective: str = ""
    algorithm: str = ""
    nnodes: int | None = None
    ppn: int | None = None
    channel: str = ""
    segsize: int | None = None
    tau: int | None = None
    run: int = 0
    reps: int | None = None
    time_s_median: float | None = None
    time_s_min: float | None = None
    time_s_max: float | None = None
    time_s_std: float | None = None
    ci95_rel: float | None = None
    converged: bool | None = None
    mpi: str = ""
    host: str = ""
    timestamp: str = ""
    source: str = ""
    statistic: str = ""  # over ranks: max (the last rank), mean (OSU's Avg), min, rank0; empty: unknown
    element_bytes: int | None = None  # the size of one element of the call's datatype; empty: the benchmark's

    def __post_init__(self) -> None:
        check_measurement(self)

    @property
    def fit_time_s(self) -> float | None:
        """The time the fits use for this row: the median over repetitions where the row has one, else the
        mean (per row, what :func:`fit_times` does for columns)."""
        return self.time_s_median or self.time_s_mean

    @property
    def rank_statistic(self) -> str:
        """What the row's times summarize over ranks: its ``statistic``, else what its benchmark reports
        (:func:`rank_statistic_of`), else the last rank's (``max``)."""
        return self.statistic or rank_statistic_of(self.benchmark, self.collective) or "max"

    @property
    def element_size(self) -> int:
        """Bytes per element of the measured call's datatype: its ``element_bytes``, else what its benchmark
        uses (:func:`element_bytes_of`)."""
        return self.element_bytes or element_bytes_of(self.benchmark, self.collective)

    @property
    def case_nbytes(self) -> int:
        """The size of the call as commcost's :class:`~commcost.collectives.Case` counts it: ``nbytes``,
        except where the benchmark reports the whole buffer of a collective commcost counts per rank
        (:func:`whole_buffer_of`: OSU's and IMB's reduce_scatter, each rank's block nbytes / P in whole
        elements)."""
        if not whole_buffer_of(self.benchmark, self.collective):
            return self.nbytes
        element = self.element_size
        return self.nbytes // element // max(self.nprocs, 1) * element

    @property
    def key(self) -> MeasurementKey:
        """The point this row measures."""
        return MeasurementKey(*(getattr(self, name) for name in KEY_COLUMNS))

    def to_row(self, columns: Iterable[str] = COLUMNS) -> list[str]:
        """The CSV cells, in :data:`COLUMNS` order (or ``columns``'s: a file an earlier version wrote)."""
        return [_cell(getattr(self, name)) for name in columns]


assert {f.name for f in fields(Measurement)} == set(COLUMNS)


def rank_statistic_of(benchmark: str, collective: str = "") -> str:
    """What a benchmark's times summarize over ranks, where a row does not say: OSU's and IMB's collective
    tests the mean over ranks of each rank's own time (Avg Latency, t_avg); commcost's ``collective``
    benchmark the last rank (rank 0 between two barriers); empty for the others (one message, or rank 0's
    own experiment)."""
    name = benchmark.lower()
    if collective and (name.startswith("osu_") or name.startswith("imb_")):
        return "mean"
    return "max" if name == "collective" else ""


REDUCING = ("reduce", "allreduce", "reduce_scatter", "reduce_scatter_block")


def element_bytes_of(benchmark: str, collective: str = "") -> int:
    """Bytes per element a benchmark's calls use, where a row does not say: OSU's and IMB's reductions
    count 4-byte floats (``MPI_FLOAT``: osu_allreduce passes size / sizeof(float) elements, its sizes start
    at 4 bytes), everything else bytes (``MPI_CHAR``/``MPI_BYTE``). Open MPI's algorithms count elements:
    the ring allreduce runs recursive doubling while count < P, so which algorithm runs at a size depends
    on it."""
    name = benchmark.lower()
    if collective in REDUCING and (name.startswith("osu_") or name.startswith("imb_")):
        return 4
    return 1


def whole_buffer_of(benchmark: str, collective: str) -> bool:
    """Whether a benchmark's size is the whole buffer where commcost counts one rank's block: OSU's
    ``osu_reduce_scatter`` passes recvcounts[i] = (size / sizeof(float)) / P (the last rank the remainder),
    IMB's Reduce_scatter splits its #bytes over the ranks the same way; commcost's reduce_scatter Case is
    one rank's block (Open MPI's recvcounts[i])."""
    name = benchmark.lower()
    return collective == "reduce_scatter" and (name.startswith("osu_") or name.startswith("imb_"))


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def check_measurement(m: Measurement) -> None:
    """Raise :class:`InputError` (where = the column) unless every field has its type and range."""
    for name in _STRINGS:
        value = getattr(m, name)
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            raise InputError(f"expected a one-line string, got {value!r}", where=name)
    if not m.benchmark:
        raise InputError("expected a benchmark name, got an empty one", where="benchmark")
    for name, minimum in _INTEGERS.items():
        value = getattr(m, name)
        if value is None and name not in REQUIRED and name != "run":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise InputError(f"expected an integer >= {minimum}, got {value!r}", where=name)
    for name in _FLOATS:
        value = getattr(m, name)
        if value is None and name not in REQUIRED:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise InputError(f"expected a finite number >= 0, got {value!r}", where=name)
    if m.converged is not None and not isinstance(m.converged, bool):
        raise InputError(f"expected true/false, got {m.converged!r}", where="converged")
    if m.statistic not in RANK_STATISTICS:
        raise InputError(f"expected one of {', '.join(repr(v) for v in RANK_STATISTICS[1:])} or empty, got "
                         f"{m.statistic!r}", where="statistic")


# ---------------------------------------------------------------- reading


def _parse_cell(name: str, text: str):
    text = text.strip()
    if name == "timestamp" and text:
        try:
            datetime.fromisoformat(text)
        except ValueError:
            raise InputError(f"expected an ISO 8601 date and time (2026-11-25T03:15:21+00:00), got {text!r}",
                             where=name) from None
    if name in _STRINGS:
        return text
    if text == "":
        if name in REQUIRED:
            raise InputError("expected a value, got an empty cell", where=name)
        return 0 if name == "run" else None
    if name in _INTEGERS:
        minimum = _INTEGERS[name]
        maximum = MAX_NBYTES if name in ("nbytes", "segsize") else _MAX_COUNT
        try:
            value = int(text)
        except ValueError:
            raise InputError(f"expected an integer >= {minimum}, got {text!r}", where=name) from None
        if value < minimum:
            raise InputError(f"expected an integer >= {minimum}, got {text!r}", where=name)
        if value > maximum:
            raise InputError(f"expected an integer of at most {maximum:,}, got {text!r}", where=name)
        return value
    if name == "converged":
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise InputError(f"expected 1 or 0, got {text!r}", where=name)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InputError(f"expected a finite number >= 0, got {text!r}", where=name)
    return value


def _check_header(header: list[str], source: str) -> None:
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        raise InputError(f"unknown column {unknown[0]!r}; expected columns among {', '.join(COLUMNS)}",
                         source=source, where="line 1")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"missing column {missing[0]!r}; the columns {', '.join(REQUIRED)} are required",
                         source=source, where="line 1")
    if len(set(header)) != len(header):
        twice = next(c for c in header if header.count(c) > 1)
        raise InputError(f"column {twice!r} appears twice", source=source, where="line 1")


def _complete_text(path: Path) -> tuple[str, int]:
    """The file's text up to its last newline, and the byte length of that part."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the measurements ({exc.strerror})", source=str(path)) from None
    end = data.rfind(b"\n") + 1
    try:
        text = data[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError("not UTF-8 text", source=str(path), where=f"line {line}") from None
    return refuse_control(text, "measurements file", str(path)), end


def _cells(line: str, source: str, number: int) -> list[str]:
    """One CSV line's cells; a cell past the csv module's field limit (131,072 characters) is an error
    naming the file and line, not a csv.Error."""
    try:
        return next(csv.reader([line]))
    except csv.Error as exc:
        raise InputError(f"not a CSV line this reader takes ({exc}; expected short cells)", source=source,
                         where=f"line {number}") from None


def _parse(text: str, source: str) -> list[Measurement]:
    lines = text.splitlines()
    if not lines:
        return []
    header = [c.strip() for c in _cells(lines[0], source, 1)]
    _check_header(header, source)
    rows: list[Measurement] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = _cells(line, source, number)
        if len(cells) != len(header):
            raise InputError(f"expected {len(header)} cells as in the header, got {len(cells)}",
                             source=source, where=f"line {number}")
        try:
            values = {name: _parse_cell(name, cell) for name, cell in zip(header, cells)}
            rows.append(Measurement(**values))
        except InputError as exc:
            raise InputError(exc.message, source=source, where=f"line {number}: {exc.where}") from None
    return rows


def read_some_measurements(path: str | Path) -> list[Measurement]:
    """:func:`read_measurements`, refusing a file with no rows (what a fit or an import takes as input; a run's
    own file may be empty, cut short before its first line)."""
    rows = read_measurements(path)
    if not rows:
        raise InputError("no measurements in the file", source=str(path))
    return rows


def read_measurements(path: str | Path) -> list[Measurement]:
    """Read a measurements CSV. A last line without its newline (a write cut short) is ignored.

    Columns may come in any order and optional ones may be missing; errors
    name the file, the line and the column:
    ``m.csv:line 7: nbytes: expected an integer >= 0, got 'x'``.
    """
    text, _ = _complete_text(Path(path))
    return _parse(text, str(path))


def measurement_columns(rows: Iterable[Measurement]) -> dict[str, np.ndarray]:
    """The rows as numpy columns: strings as str arrays, numbers as float64 (NaN = empty).

    Integer columns with no empty cell come as int64; ``converged`` as float (1, 0, NaN).
    """
    rows = list(rows)
    out: dict[str, np.ndarray] = {}
    for name in COLUMNS:
        values = [getattr(r, name) for r in rows]
        if name in _STRINGS:
            out[name] = np.array(values, dtype=str)
        elif name in _INTEGERS and all(v is not None for v in values):
            out[name] = np.array(values, dtype=np.int64)
        else:
            out[name] = np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    return out


STATISTICS = ("median", "mean")


def fit_times(columns: dict[str, np.ndarray], statistic: str = "median") -> dict[str, np.ndarray]:
    """The columns with ``time_s_mean`` replaced by the per-point time the fits should use.

    ``median``: the median over repetitions where a row has one, else its
    mean. The median is the robust choice on a shared machine: a few
    repetitions preempted by another process (a whole scheduler time slice,
    milliseconds) move a mean by orders of magnitude and a median not at
    all. ``mean``: the columns unchanged. The fits read ``time_s_mean``.
    """
    if statistic not in STATISTICS:
        raise InputError(f"expected one of {', '.join(STATISTICS)}, got {statistic!r}", where="--statistic")
    if statistic == "mean":
        return columns
    median = columns["time_s_median"]
    return {**columns, "time_s_mean": np.where(np.isfinite(median) & (median > 0), median, columns["time_s_mean"])}


# ---------------------------------------------------------------- the store


class MeasurementStore:
    """An append-only measurements CSV that survives ``kill -9`` and resumes without duplicates.

    Opening creates the file with its header, or reads the rows already
    there (truncating a last line cut short by a crash). :meth:`append`
    writes one row, flushed and fsynced before it returns; a row whose key
    is already stored is not written again.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._rows: list[Measurement] = []
        self._keys: set[MeasurementKey] = set()
        self._columns: tuple[str, ...] = COLUMNS
        header = _line(COLUMNS)
        if self.path.exists() and self.path.stat().st_size > 0:
            text, end = _complete_text(self.path)
            if text and text.splitlines()[0] != header.rstrip("\n"):
                first = [c.strip() for c in next(csv.reader([text.splitlines()[0]]))]
                _check_header(first, str(self.path))
                if tuple(first) != COLUMNS[:len(first)]:
                    raise InputError("the columns are not in the order this version writes; expected "
                                     f"{header.strip()!r}", source=str(self.path), where="line 1")
                self._columns = tuple(first)  # an earlier version's file: rows go on in its columns
            self._rows = _parse(text, str(self.path))
            if end != self.path.stat().st_size:  # a crash cut the last line short
                with open(self.path, "r+b") as f:
                    f.truncate(end)
                    f.flush()
                    os.fsync(f.fileno())
            if not text:  # even the header was cut short
                self._write(header)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write(header)
        self._keys = {r.key for r in self._rows}

    def _write(self, line: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = line.encode("utf-8")
            written = os.write(fd, data)
            while written < len(data):  # a short write: finish it before the fsync
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)

    def has(self, key: MeasurementKey | Measurement) -> bool:
        """Whether the point (a key, or the key of a row) is already stored."""
        return (key.key if isinstance(key, Measurement) else MeasurementKey(*key)) in self._keys

    def keys(self) -> set[MeasurementKey]:
        """The keys of every stored row."""
        return set(self._keys)

    def rows(self) -> list[Measurement]:
        """Every stored row, in file order."""
        return list(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def append(self, m: Measurement) -> bool:
        """Write one row, durably; return False (and write nothing) if its key is already stored."""
        if m.key in self._keys:
            return False
        self._write(_line(m.to_row(self._columns)))
        self._rows.append(m)
        self._keys.add(m.key)
        return True

    def extend(self, rows: Iterable[Measurement]) -> tuple[int, int]:
        """Append rows one at a time; return (written, skipped as already stored)."""
        written = skipped = 0
        for m in rows:
            if self.append(m):
                written += 1
            else:
                skipped += 1
        return written, skipped


def _line(cells: Iterable[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(list(cells))
    return buffer.getvalue()


def now_timestamp() -> str:
    """The current time, ISO 8601 with seconds and the UTC offset (the ``timestamp`` column's form)."""
    return datetime.now().astimezone().isoformat(timespec="seconds")
