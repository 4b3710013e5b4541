"""Sizes and times at the edges: parse "4KiB", print "1.2 ms". Inside, bytes and seconds."""

from __future__ import annotations

import re

from commcost.errors import InputError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*$")


def parse_nbytes(text: str | int) -> int:
    """Parse a size such as ``65536``, ``64KiB`` or ``1.5MB`` into a whole number of bytes."""
    if isinstance(text, int):
        if text < 0:
            raise InputError(f"expected a size >= 0, got {text}")
        return text
    match = _SIZE_RE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SIZE_UNITS:
        raise InputError(f"expected a size such as 4096, 64KiB or 1MiB, got {text!r}")
    value = float(match.group(1)) * _SIZE_UNITS[unit]
    if value != int(value):
        raise InputError(f"expected a whole number of bytes, got {text!r}")
    return int(value)


def format_nbytes(nbytes: float) -> str:
    """Print a byte count with a binary unit: 1536 -> '1.5KiB'."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= factor:
            return f"{nbytes / factor:.4g}{unit}"
    return f"{nbytes:.4g}B"


def format_seconds(time_s: float) -> str:
    """Print a time with a unit a reader takes in at a glance: 1.2e-5 -> '12 us'."""
    magnitude = abs(time_s)
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if magnitude >= factor:
            return f"{time_s / factor:.4g} {unit}"
    return f"{time_s / 1e-9:.4g} ns"
