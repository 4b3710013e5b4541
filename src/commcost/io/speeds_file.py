"""Speeds files: constant speeds or functional performance models (tables), per rank or per kind of process.

::

    # key    speed                 a constant speed (units per second)
    # key    size   speed          one point of an FPM table (size in units)
    core     100                   # one core; a CPU process with K cores: K x 100
    gpu      1000    4000          # GPU processes: an FPM, linear between points
    gpu      16000   9000
    3        750                   # rank 3 itself

Keys: a rank number, ``cpu:K`` (CPU processes with K cores), ``gpu``,
``core`` or ``default``; a process takes the most specific one (paper 000
section 2: s_i, or s_i(x) for an FPM). Units are the partition's blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from commcost.errors import InputError
from commcost.io.text_lines import data_lines
from commcost.partition.fpm import SpeedFunction


KEY = re.compile(r"\d+|cpu:\d+|gpu|core|default")  # what a process looks its speed up by (partition.processes)


def read_speeds(path: str | Path) -> dict[str, SpeedFunction]:
    """Speed functions by key; errors name the file, line and field."""
    source = str(path)
    points: dict[str, list[tuple[float, float]]] = {}
    constant: set[str] = set()
    for lineno, fields in data_lines(path, "speeds file"):
        where = f"line {lineno}"
        if len(fields) not in (2, 3):
            raise InputError(f"expected 'key speed' or 'key size speed', got {len(fields)} fields",
                             source=source, where=where)
        key = fields[0]
        if not KEY.fullmatch(key):
            raise InputError(f"key {key!r}: expected a rank number, cpu:K, gpu, core or default", source=source,
                             where=where)
        names = ("speed",) if len(fields) == 2 else ("size", "speed")
        values = [_number(v, name, source, where) for name, v in zip(names, fields[1:])]
        if values[-1] <= 0:
            raise InputError(f"field 'speed': expected a number > 0, got {fields[-1]!r}", source=source, where=where)
        if key in constant or (len(fields) == 2 and key in points):
            raise InputError(f"key {key!r} is given again; expected one constant speed 'key speed' "
                             "or table rows 'key size speed'", source=source, where=where)
        if len(fields) == 2:
            constant.add(key)
            points[key] = [(0.0, values[0])]
        else:
            points.setdefault(key, []).append((values[0], values[1]))
    if not points:
        raise InputError("expected at least one line 'key speed'", source=source)
    out = {}
    for key, rows in points.items():
        sizes, speeds = np.array(sorted(rows)).T
        try:
            out[key] = SpeedFunction(sizes, speeds)
        except InputError as exc:
            raise exc.located(source=source, where=f"key {key}") from None
    return out


def _number(text: str, field: str, source: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or value < 0:
        raise InputError(f"field {field!r}: expected a number >= 0, got {text!r}", source=source, where=where)
    return value
