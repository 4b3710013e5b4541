"""Line-oriented text files: the non-blank lines with '#' comments removed, split into fields."""

from __future__ import annotations

from pathlib import Path

from commcost.errors import InputError


def data_lines(path: str | Path, what: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every line that has something left once its '#' comment is cut off."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror})", source=str(path)) from None
    out = []
    for lineno, line in enumerate(lines, start=1):
        fields = line.split("#", 1)[0].split()
        if fields:
            out.append((lineno, fields))
    return out
