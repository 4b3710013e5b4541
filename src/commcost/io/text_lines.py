"""Line-oriented text files: the non-blank lines with '#' comments removed, split into fields."""

from __future__ import annotations

import re
from pathlib import Path

from commcost.errors import InputError
from commcost.units import whole_number


CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")  # control characters no text format of ours holds
NOT_TEXT = re.compile("[\x00\ufffd]")  # a NUL, or a byte that was not UTF-8 (decoded as the replacement character)


def _refuse_first(text: str, pattern: re.Pattern, message, source: str) -> str:
    """``text`` itself, or an InputError naming the file and the line of the first match of ``pattern``,
    ``message(match)`` saying what was found."""
    found = pattern.search(text)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        raise InputError(message(found), source=source, where=f"line {line}")
    return text


def refuse_control(text: str, what: str, source: str) -> str:
    """``text`` itself, or an InputError naming the file and the line of its first control character (a NUL
    or another C0 code besides tab, newline, carriage return and form feeds): binary bytes that happen to be
    valid UTF-8 are not a name or a number, and a reader that split on them read a name with NULs in it."""
    return _refuse_first(text, CONTROL, lambda found: f"the {what} holds a control character ({found.group()!r}); "
                                                      "expected text", source)


def reads_as_number(text: str) -> bool:
    """Whether Python's float() takes ``text`` (NaN and infinity included: a broken number is still one)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def refuse_binary(text: str, what: str, source: str) -> str:
    """``text`` (decoded with invalid bytes replaced), or an InputError naming the line of its first NUL or
    replaced byte: a benchmark's output may carry a launcher's escape codes around its tables, but bytes that
    are not text mean a file damaged or not an output at all (a row with them would be skipped unread)."""
    return _refuse_first(text, NOT_TEXT, lambda _: f"the {what} holds bytes that are not text; expected UTF-8 text",
                         source)


def text_of(path: str | Path, what: str) -> str:
    """The file's text; InputError naming the file and ``what`` it should be where it cannot be read, is not
    UTF-8 or holds control characters (:func:`refuse_control`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror})", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError(f"the {what} is not UTF-8 text", source=str(path)) from None
    return refuse_control(text, what, str(path))


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
    if len(parts) != 2 or parts[0].rstrip(":") not in keys or (whole_number(parts[1]) or 0) < 1:
        raise InputError(f"expected '{keys[0]} <count>' with a count >= 1, got {line.strip()!r}",
                         source=source, where=f"line {lineno}")
    return int(parts[1])
