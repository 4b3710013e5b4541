"""2D distribution files in the FuPerMod style: a partition of an N x N block matrix, one process per line.

::

    #size 6
    #N 256
    #kb 32
    # host  rank_intra  i  j  x    y    w    h
    node0   0           1  0  124  0    97   134
    node0   1           0  0  0    0    124  146

``#size`` is P, ``#N`` the matrix side in blocks, ``#kb`` the block side b
in elements. Line k (k = 0, 1, ...) after the header is rank k: its host
(node name), its index among the ranks of that host, the column i of its
rectangle and its place j in that column, then x, y (first block column
and row) and w, h (width and height in blocks): paper 000 Fig. 2's
partition table (X, Y, Width, Height). Fields after h are ignored, and i,
j and rank_intra are recomputed from the rectangles on reading.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from commcost.errors import InputError
from commcost.kernels.partition2d import Partition2D
from commcost.io.text_lines import text_of

HEADER = ("size", "N", "kb")
FIELDS = ("host", "rank_intra", "i", "j", "x", "y", "w", "h")


def read_partition(path: str | Path) -> Partition2D:
    """The partition in a 2D distribution file; errors name the file, line and field."""
    source = str(path)
    lines = text_of(path, "partition file").splitlines()
    header: dict[str, int] = {}
    hosts: list[str] = []
    rects: list[list[int]] = []
    for lineno, line in enumerate(lines, start=1):
        where = f"line {lineno}"
        text = line.strip()
        if text.startswith("#"):
            key, _, value = text[1:].partition(" ")
            if key in HEADER:
                header[key] = _integer(value.strip(), f"#{key}", source, where, minimum=1)
            continue
        if not text:
            continue
        fields = text.split()
        if len(fields) < len(FIELDS):
            raise InputError(f"expected {len(FIELDS)} fields ({' '.join(FIELDS)}), got {len(fields)}",
                             source=source, where=where)
        hosts.append(fields[0])
        rects.append([_integer(value, name, source, where, minimum=0)
                      for name, value in zip(FIELDS[1:], fields[1:len(FIELDS)])][3:])
    missing = [f"#{key}" for key in HEADER if key not in header]
    if missing:
        raise InputError(f"missing header line(s) {', '.join(missing)}; expected #size P, #N blocks, #kb block size",
                         source=source)
    if len(hosts) != header["size"]:
        raise InputError(f"#size is {header['size']}, but {len(hosts)} process lines follow", source=source)
    x, y, w, h = np.array(rects, dtype=np.int64).T
    try:
        return Partition2D(header["N"], header["kb"], tuple(hosts), x, y, w, h)
    except InputError as exc:
        raise exc.located(source=source) from None


MAX_FIELD = 2**31 - 1  # blocks and coordinates: their products (areas, N x N) stay exact in 64 bits


def _integer(text: str, field: str, source: str, where: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not minimum <= value <= MAX_FIELD:
        raise InputError(f"field {field!r}: expected an integer from {minimum} to {MAX_FIELD:,}, got {text!r}",
                         source=source, where=where)
    return value


def format_partition(part: Partition2D) -> str:
    """The text of a 2D distribution file for ``part`` (what :func:`read_partition` reads back)."""
    i, j = part.columns()
    intra = part.rank_intra()
    out = [f"#size {part.nprocs}", f"#N {part.n}", f"#kb {part.block}", "# " + " ".join(FIELDS)]
    for r in range(part.nprocs):
        out.append(f"{part.hosts[r]} {intra[r]} {i[r]} {j[r]} {part.x[r]} {part.y[r]} {part.w[r]} {part.h[r]}")
    return "\n".join(out) + "\n"


def write_partition(part: Partition2D, path: str | Path) -> None:
    """Write ``part`` as a 2D distribution file."""
    Path(path).write_text(format_partition(part), encoding="utf-8")
