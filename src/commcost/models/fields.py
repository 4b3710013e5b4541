"""Readers the point-to-point parameter classes share: numbers finite and >= 0, required keys
present, unknown keys rejected, every error naming its field path inside the model's section."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, TypeVar

import numpy as np

from commcost.errors import InputError

T = TypeVar("T")


def read_number(value: Any, unit: str, where: str | None = None) -> float:
    """A finite number >= 0, or InputError saying so in ``unit``."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    try:
        ok = ok and math.isfinite(float(value)) and value >= 0
    except OverflowError:  # an integer too large for a float
        ok = False
    if not ok:
        raise InputError(f"expected a number >= 0 ({unit}), got {value!r}", where=where)
    return float(value)


def read_numbers(data: Any, units: dict[str, str]) -> dict[str, float]:
    """Exactly the fields ``units`` names (field -> unit), each a finite number >= 0."""
    expected = ", ".join(units)
    if not isinstance(data, dict):
        raise InputError(f"expected a table with {expected}, got {data!r}")
    for key in data:
        if key not in units:
            raise InputError(f"unknown key {key!r}; expected {expected}", where=str(key))
    for key, unit in units.items():
        if key not in data:
            raise InputError(f"missing {key}; expected a number >= 0 ({unit})", where=key)
    return {key: read_number(data[key], unit, key) for key, unit in units.items()}


def within(prefix: str, error: InputError) -> InputError:
    """The same error, its field path put under ``prefix``."""
    return InputError(error.message, where=f"{prefix}.{error.where}" if error.where else prefix)


def read_tables(data: Any, read: Callable[[dict], T], what: str, example: str) -> dict[str, T]:
    """``{name: table}`` read table by table; ``example`` shows a user what one entry looks like."""
    if not isinstance(data, dict):
        raise InputError(f"expected tables of {what}, e.g. {example}, got {data!r}")
    tables = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise InputError(f"expected a table of {what} for {name!r}, e.g. {example}, got {entry!r}",
                             where=str(name))
        try:
            tables[str(name)] = read(entry)
        except InputError as exc:
            raise within(str(name), exc) from None
    return tables


def channel_arrays(rows: list[Any], fields: tuple[str, ...], channel: np.ndarray) -> list[np.ndarray]:
    """Per-transmission arrays of the named fields, from per-channel rows (None rows -> NaN)."""
    nan = float("nan")
    return [np.array([nan if row is None else getattr(row, f) for row in rows], dtype=np.float64)[channel]
            for f in fields]
