"""Line-oriented text files: the non-blank lines with '#' comments removed, split into fields."""

from __future__ import annotations

from pathlib import Path

from commcost.errors import InputError


def text_of(path: str | Path, what: str) -> str:
    """The file's text; InputError naming the file and ``what`` it should be where it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror})", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError(f"the {what} is not UTF-8 text", source=str(path)) from None


def data_lines(path: str | Path, what: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every line that has something left once its '#' comment is cut off."""
    lines = text_of(path, what).splitlines()
    out = []
    for lineno, line in enumerate(lines, start=1):
        fields = line.split("#", 1)[0].split()
        if fields:
            out.append((lineno, fields))
    return out


def count_header(line: str, keys: tuple[str, ...], source: str, lineno: int) -> int:
    """The count of a ``#key <count>`` header line (libtaulop's tables; a key may end in ':'), one of ``keys``;
    InputError naming the file and line otherwise."""
    parts = line.split()
    if len(parts) != 2 or parts[0].rstrip(":") not in keys or not parts[1].isdigit() or int(parts[1]) < 1:
        raise InputError(f"expected '{keys[0]} <count>' with a count >= 1, got {line.strip()!r}",
                         source=source, where=f"line {lineno}")
    return int(parts[1])
