"""Irregular point-to-point patterns of sparse matrix kernels (paper 001 section 5): SpMV, SpGEMM, AMG levels.

A matrix's rows are split over P ranks (contiguous blocks of equal size,
or METIS parts through pymetis); rank r owns rows R_r and the matching
entries of the vectors. The exchanges, each one phase of sends posted
together (Isend + Waitall), as a schedule every model prices:

* SpMV y = A x: rank r needs x_j for every column j of its rows owned by
  another rank q; q sends r those values, one message per (q, r), of
  ``value_bytes`` per value.
* SpGEMM C = A B: rank r needs row j of B for every such column j; q sends
  r those rows, nnz(B_j) (``value_bytes`` + ``index_bytes``) bytes each.
* AMG: a classical Ruge-Stuben hierarchy (pyamg), as paper 001 uses
  classical AMG; one pattern per level, the level's matrix split over the
  same P ranks (a rank with no rows sends and receives nothing).

All of it is vectorized over nonzeros: a million-message pattern builds in
about a second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from commcost.errors import InputError
from commcost.schedule import Schedule

PARTITIONS = ("contiguous", "metis")
PATTERNS = ("spmv", "spgemm")


MAX_MATRIX_ROWS = 100_000_000  # a matrix's rows (and its nonzeros: 10x) past which a header is taken for a typo
_NOT_ASCII = re.compile(rb"[^\t\n\r\x20-\x7e]")


def _checked_text(path: str | Path) -> bytes:
    """Refuse what scipy's reader must not see. Its compiled reader ends the process with a segmentation fault
    on some malformed files (found by the fuzz suite: a non-ASCII byte, or a last line with too many fields and
    no newline), so the text is checked first: printable ASCII only (Matrix Market is ASCII text), a header
    of at most :data:`MAX_MATRIX_ROWS` rows (its arrays would fill the memory), and every entry line with the
    number of fields its format and field ask for. Returns the file's bytes, read once, for scipy to parse."""
    import io

    import scipy.io

    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read the Matrix Market file ({exc.strerror})", source=source) from None
    bad = _NOT_ASCII.search(data)
    if bad:
        line = data.count(b"\n", 0, bad.start()) + 1
        raise InputError(f"expected ASCII text (Matrix Market), got byte 0x{data[bad.start()]:02x}", source=source,
                         where=f"line {line}")
    try:
        rows, cols, entries, layout, field, _symmetry = scipy.io.mminfo(io.BytesIO(data))
    except (ValueError, OSError, IndexError, TypeError, OverflowError) as exc:
        raise InputError(f"expected a Matrix Market file (.mtx) ({exc})", source=source) from None
    if max(rows, cols) > MAX_MATRIX_ROWS or entries > 10 * MAX_MATRIX_ROWS:
        raise InputError(f"a matrix of {rows:,} x {cols:,} with {entries:,} entries is past the limit of "
                         f"{MAX_MATRIX_ROWS:,} rows and {10 * MAX_MATRIX_ROWS:,} entries", source=source)
    expected = (2 if layout == "coordinate" else 0) + {"pattern": 0, "complex": 2}.get(field, 1)
    lines = data.split(b"\n")
    seen_size = False
    for lineno, line in enumerate(lines, start=1):
        words = line.split()
        if not words or line.lstrip().startswith(b"%"):
            continue
        if not seen_size:  # the size line (mminfo read it)
            seen_size = True
            continue
        if len(words) != expected:
            raise InputError(f"expected {expected} fields on an entry line of a {layout} {field} matrix, got "
                             f"{len(words)}", source=source, where=f"line {lineno}")
    return data


def read_matrix(path: str | Path):
    """A Matrix Market file as a square CSR matrix (scipy.io.mmread); errors name the file."""
    import io

    import scipy.io
    import scipy.sparse

    data = _checked_text(path)
    try:
        matrix = scipy.io.mmread(io.BytesIO(data))
    except (ValueError, OSError, IndexError, TypeError, OverflowError) as exc:
        raise InputError(f"expected a Matrix Market file (.mtx) ({exc})", source=str(path)) from None
    if not scipy.sparse.issparse(matrix):
        matrix = scipy.sparse.csr_matrix(matrix)
    matrix = scipy.sparse.csr_matrix(matrix)
    if matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise InputError(f"expected a square matrix with rows, got {matrix.shape[0]} x {matrix.shape[1]}",
                         source=str(path))
    if matrix.data.dtype.kind in "fc" and not np.isfinite(matrix.data).all():
        raise InputError("expected finite entries, got NaN or infinity (an SpMV of them has no cost to price "
                         "that means anything)", source=str(path))
    return matrix


def partition_rows(matrix, nprocs: int, how: str = "contiguous", seed: int = 0) -> np.ndarray:
    """The owner rank of every row: ``contiguous`` blocks (the first n mod P ranks one row more), or
    ``metis`` (pymetis' k-way partition of the matrix's graph, edge cut minimized; a matrix of fewer than
    2 P rows, a coarse AMG level, is split in contiguous blocks: METIS cannot give every part a row)."""
    n = matrix.shape[0]
    if nprocs < 1:
        raise InputError(f"expected P >= 1, got {nprocs}", where="--procs")
    if how == "contiguous":
        return (np.arange(n, dtype=np.int64) * nprocs) // n
    if how == "metis" and n >= 2 * nprocs:
        try:
            import pymetis
        except ImportError:
            raise InputError("--partition metis needs pymetis (pip install pymetis)", where="--partition") from None
        if nprocs == 1:
            return np.zeros(n, dtype=np.int64)
        graph = (matrix + matrix.T).tocsr()
        graph.setdiag(0)
        graph.eliminate_zeros()
        options = pymetis.Options(seed=seed)
        adjacency = pymetis.CSRAdjacency(adj_starts=graph.indptr, adjacent=graph.indices)
        _, parts = pymetis.part_graph(nprocs, adjacency, options=options)
        return np.asarray(parts, dtype=np.int64)
    if how == "metis":
        return (np.arange(n, dtype=np.int64) * nprocs) // n
    raise InputError(f"expected one of {list(PARTITIONS)}, got {how!r}", where="--partition")


def _needed(matrix, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (receiver, column) pairs: a rank's rows reference a column another rank owns."""
    coo = matrix.tocoo()
    dst = owner[coo.row]
    col = coo.col.astype(np.int64)
    off = owner[col] != dst
    n = matrix.shape[0]
    key = np.unique(dst[off] * n + col[off])
    return key // n, key % n


def exchange_schedule(nprocs: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, name: str) -> Schedule:
    """One phase, one message per (src, dst) carrying the summed ``weight`` bytes, sends posted together
    and listed by sender."""
    key = src * nprocs + dst
    uniq, inverse = np.unique(key, return_inverse=True)
    nbytes = np.bincount(inverse, weights=weight, minlength=len(uniq))
    n = len(uniq)
    return Schedule(nprocs, uniq // nprocs, uniq % nprocs, nbytes, np.zeros(n, np.int64), np.ones(n, bool),
                    ("exchange",), name=name, checked=False)


def spmv_schedule(matrix, owner: np.ndarray, nprocs: int, value_bytes: int = 8, name: str = "spmv") -> Schedule:
    """The SpMV halo exchange: q sends r the x values of the columns r's rows use and q owns."""
    dst, col = _needed(matrix, owner)
    return exchange_schedule(nprocs, owner[col], dst, np.full(len(col), float(value_bytes)), name)


def spgemm_schedule(a, owner: np.ndarray, nprocs: int, b=None, value_bytes: int = 8, index_bytes: int = 4,
                    name: str = "spgemm") -> Schedule:
    """The SpGEMM exchange of C = A B (B = A by default, as an AMG level's A A): q sends r the rows of B
    that r's columns of A name and q owns, nnz(B_j) (value + index) bytes each."""
    import scipy.sparse

    b = a if b is None else scipy.sparse.csr_matrix(b)
    dst, col = _needed(a, owner)
    row_nnz = np.diff(b.indptr).astype(np.float64)
    return exchange_schedule(nprocs, owner[col], dst, row_nnz[col] * (value_bytes + index_bytes), name)


@dataclass(frozen=True)
class Level:
    """One level of a pattern: its matrix's size and the exchange's schedule."""

    index: int
    rows: int
    nnz: int
    schedule: Schedule


def amg_matrices(matrix, max_levels: int = 25, max_coarse: int = 10) -> list:
    """The operators of a classical Ruge-Stuben AMG hierarchy (pyamg.ruge_stuben_solver), finest first."""
    try:
        import pyamg
    except ImportError:
        raise InputError("--amg-levels needs pyamg (pip install pyamg)", where="--amg-levels") from None
    solver = pyamg.ruge_stuben_solver(matrix.tocsr(), max_levels=max_levels, max_coarse=max_coarse)
    return [level.A.tocsr() for level in solver.levels]


def pattern_levels(matrix, pattern: str, nprocs: int, partition: str = "contiguous", amg: bool = False,
                   value_bytes: int = 8, index_bytes: int = 4) -> list[Level]:
    """The pattern's schedule per level: the matrix alone, or every level of its AMG hierarchy, each split
    over the same ``nprocs`` ranks by ``partition``."""
    if pattern not in PATTERNS:
        raise InputError(f"expected one of {list(PATTERNS)}, got {pattern!r}", where="--pattern")
    matrices = amg_matrices(matrix) if amg else [matrix.tocsr()]
    out = []
    for k, a in enumerate(matrices):
        owner = partition_rows(a, nprocs, partition)
        name = f"{pattern} level {k}"
        if pattern == "spmv":
            schedule = spmv_schedule(a, owner, nprocs, value_bytes, name)
        else:
            schedule = spgemm_schedule(a, owner, nprocs, None, value_bytes, index_bytes, name)
        out.append(Level(k, int(a.shape[0]), int(a.nnz), schedule))
    return out
