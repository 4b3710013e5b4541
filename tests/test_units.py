"""Sizes mean one thing (issue 16 item 2): K and M are binary as in OSU, KB and MB are refused with a hint,
and a table prints every time in one unit."""

from __future__ import annotations

import pytest

from commcost.errors import InputError
from commcost.units import MAX_NBYTES, format_seconds, parse_nbytes


@pytest.mark.parametrize("text, nbytes", [
    ("0", 0), ("65536", 65536), ("1K", 1024), ("1k", 1024), ("64K", 65536), ("1M", 1 << 20), ("4M", 4 << 20),
    ("1G", 1 << 30), ("1KiB", 1024), ("1.5KiB", 1536), ("1.5MiB", 3 << 19), ("2 KiB", 2048), ("8B", 8),
    (4096, 4096),
])
def test_sizes_are_binary(text, nbytes):
    assert parse_nbytes(text) == nbytes


@pytest.mark.parametrize("text, message", [
    ("1KB", "'1KB' is ambiguous (1000 or 1024?): write 1KiB (or 1K"),
    ("1.5MB", "write 1.5MiB"), ("2kb", "write 2KiB"), ("1GB", "write 1GiB"),
    ("-1", "expected a size such as"), ("1e400", "expected a size such as"), ("1.5", "whole number of bytes"),
    ("0.3K", "whole number of bytes"), ("", "expected a size such as"), ("1XB", "expected a size such as"),
    ("2048T", "at most 1 PiB"), (-1, "expected a size >= 0"), (MAX_NBYTES + 1, "at most 1 PiB"),
    ("nan", "expected a size such as"), ("inf", "expected a size such as"),
])
def test_bad_or_ambiguous_sizes_are_refused_with_the_reason(text, message):
    with pytest.raises(InputError) as info:
        parse_nbytes(text)
    assert message in str(info.value)


def test_a_table_unit_prints_every_cell_in_it():
    assert format_seconds(1.25e-5, "us") == "12.50 us"
    assert format_seconds(1.25e-5, "ms") == "0.0125 ms"  # below 0.1 of the unit: three digits, never 0.00
    assert format_seconds(0.0, "ms") == "0.00 ms" and format_seconds(0.25, "s") == "0.25 s"
    assert format_seconds(2.0, "us") == "2000000.00 us"
    assert format_seconds(1.25e-5) == "12.5 us" and format_seconds(2.5e-3) == "2.5 ms"  # no unit: each its own
