"""Sizes and times at the edges: parse "4KiB", print "1.2 ms". Inside, bytes and seconds."""

from __future__ import annotations

import re
import sys

from commcost.errors import InputError

_SIZE_UNITS = {
    "": 1, "b": 1,
    # binary, as OSU and most HPC users read 1K and 1M
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_DECIMAL_UNITS = {"kb", "mb", "gb", "tb"}  # refused: some read 1000, some 1024
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*$")
MAX_NBYTES = 1 << 50  # 1 PiB: no message is larger; a bigger size is a typo or an overflow


def parse_nbytes(text: str | int) -> int:
    """Parse a size such as ``65536``, ``64KiB``, ``64K`` or ``1.5MiB`` into a whole number of bytes.

    K, M, G and T are binary (1K = 1024 bytes, as OSU prints sizes); KB, MB, GB and TB are refused with
    a hint, since readers disagree on them. Sizes above :data:`MAX_NBYTES` are refused.
    """
    if isinstance(text, int) and text < 0:
        raise InputError(f"expected a size >= 0, got {text}")
    match = _SIZE_RE.match(str(text))
    unit = match.group(2).lower() if match else None
    if unit in _DECIMAL_UNITS:
        number, prefix = match.group(1), unit[0].upper()
        raise InputError(f"{text!r} is ambiguous (1000 or 1024?): write {number}{prefix}iB (or {number}{prefix}, "
                         f"binary as in OSU) or the number of bytes")
    if not match or unit not in _SIZE_UNITS:
        raise InputError(f"expected a size such as 4096, 64KiB or 1MiB, got {text!r}")
    value = float(match.group(1)) * _SIZE_UNITS[unit]
    if value > MAX_NBYTES:
        raise InputError(f"expected a size of at most 1 PiB ({MAX_NBYTES} bytes), got {text!r}")
    if value != int(value):
        raise InputError(f"expected a whole number of bytes, got {text!r}")
    return int(value)


MAX_DIGITS = 18  # a whole number written with more digits is past any count this tool takes (and int() of a line
# of more than 4,300 digits raises ValueError: a traceback, not a one-line refusal)


def whole_number(text: str) -> int | None:
    """``text`` (spaces around it ignored) as a whole number >= 0 of at most :data:`MAX_DIGITS` digits; None
    for anything else, which the caller refuses in its own words."""
    text = str(text).strip()
    return int(text) if text.isdigit() and text.isascii() and len(text) <= MAX_DIGITS else None


def too_long_for_int(text: str) -> bool:
    """Whether int() would refuse ``text`` for its length (Python limits decimal strings to 4,300 digits by
    default, with a ValueError): a reader that keeps its own bounds on larger numbers refuses these first."""
    limit = sys.get_int_max_str_digits()
    return bool(limit) and len(text.strip()) > limit


def format_nbytes(nbytes: float) -> str:
    """Print a byte count with a binary unit: 1536 -> '1.5KiB'."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= factor:
            return f"{nbytes / factor:.4g}{unit}"
    return f"{nbytes:.4g}B"


TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}  # --unit: one unit per table (OSU prints microseconds)


def format_seconds(time_s: float, unit: str | None = None) -> str:
    """Print a time: in ``unit`` (``us``, ``ms`` or ``s``: every cell of a table in the same one, e.g.
    '12.00 us'), or without one in the unit a reader takes in at a glance: 1.2e-5 -> '12 us'."""
    if unit is not None:  # two decimals, as OSU prints; below 0.1 of the unit three significant digits, not 0.00
        value = time_s / TIME_UNITS[unit]
        return f"{value:.2f} {unit}" if value == 0 or abs(value) >= 0.1 else f"{value:.3g} {unit}"
    magnitude = abs(time_s)
    for name, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if magnitude >= factor:
            return f"{time_s / factor:.4g} {name}"
    return f"{time_s / 1e-9:.4g} ns"
