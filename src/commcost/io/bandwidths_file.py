"""Bandwidth tables between groups of processes (TOML), for the 2D arrangement of paper 002.

::

    unit = "GB/s"                     # or "MB/s", "B/s" (default)
    groups = ["Grimoire", "Parasilo"] # the platform's group names at the chosen level (or node names)
    horizontal = [[0.0396, 0.00007], [0.00007, 0.0388]]   # b_H(row group, column group)
    vertical = [[0.481, 0.00056], [0.00056, 0.489]]       # b_V

Errors name the file, the field and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from commcost.errors import InputError
from commcost.io.toml_file import read_toml

UNITS = {"B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9}


@dataclass(frozen=True)
class Bandwidths:
    """b_H and b_V in bytes per second between groups, indexed as ``groups``."""

    groups: tuple[str, ...]
    horizontal: np.ndarray
    vertical: np.ndarray


def load_bandwidths(path: str | Path) -> Bandwidths:
    doc = read_toml(path)
    data, source = doc.data, doc.source

    def fail(where: str, message: str) -> InputError:
        line = doc.line_of((where,))
        return InputError(message, source=source, where=f"line {line}: {where}" if line else where)

    unknown = set(data) - {"unit", "groups", "horizontal", "vertical"}
    if unknown:
        key = sorted(unknown)[0]
        raise fail(key, f"unknown key {key!r}; expected unit, groups, horizontal and vertical")
    unit = data.get("unit", "B/s")
    if unit not in UNITS:
        raise fail("unit", f"expected one of {list(UNITS)}, got {unit!r}")
    groups = data.get("groups")
    if not (isinstance(groups, list) and groups and all(isinstance(g, str) and g for g in groups)
            and len(set(groups)) == len(groups)):
        raise fail("groups", "expected a list of distinct group names")
    tables = {}
    for key in ("horizontal", "vertical"):
        if key not in data:
            raise fail(key, f"missing {key}; expected a {len(groups)} x {len(groups)} table of bandwidths")
        try:
            table = np.asarray(data[key], dtype=np.float64)
        except (TypeError, ValueError):
            raise fail(key, f"expected a {len(groups)} x {len(groups)} table of numbers") from None
        if table.shape != (len(groups), len(groups)):
            raise fail(key, f"expected a {len(groups)} x {len(groups)} table (one row and column per group), "
                            f"got shape {list(table.shape)}")
        if not np.all(np.isfinite(table)) or np.any(table <= 0):
            raise fail(key, "expected bandwidths > 0")
        tables[key] = table * UNITS[unit]
    return Bandwidths(tuple(groups), tables["horizontal"], tables["vertical"])
