"""TOML files read with places: syntax errors name the line, field errors name line and key.

``tomllib`` (``tomli`` before Python 3.11) parses; :class:`Table` wraps a
parsed table and hands out typed fields, so a reader says what it expects
and a bad value becomes one line such as
``platform.toml:line 14: nodes[1].count: expected an integer >= 1, got 'two'``.
"""

from __future__ import annotations

import math

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commcost.errors import InputError
from commcost.io.text_lines import refuse_control

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_MISSING: Any = object()
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"']+)\s*=")


@dataclass(frozen=True)
class TomlDocument:
    """A parsed TOML file and its lines, to find where a field was written."""

    source: str
    data: dict[str, Any]
    lines: tuple[str, ...] = field(repr=False)

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        """Best-effort line number of the value at ``path`` (e.g. ("nodes", 1, "count"))."""
        if not path:
            return None
        *table, key = path
        wanted = tuple(table)
        current: tuple[str | int, ...] = ()
        counts: dict[str, int] = {}
        header_line = None
        for number, text in enumerate(self.lines, start=1):
            head = _HEADER.match(text)
            if head:
                dotted = tuple(part.strip().strip('"') for part in head.group(2).split("."))
                if head.group(1) == "[[":
                    name = ".".join(dotted)
                    counts[name] = counts.get(name, -1) + 1
                    current = (*dotted, counts[name])
                else:
                    current = dotted
                if current == tuple(path):  # the path is a table: its header
                    return number
                if current == wanted:
                    header_line = number
                continue
            match = _KEY.match(text)
            if match and current == wanted and match.group(1).strip("\"'") == key:
                return number
        if header_line is None:  # a whole table or array of tables: its first header
            for number, text in enumerate(self.lines, start=1):
                head = _HEADER.match(text)
                if head and tuple(p.strip().strip('"') for p in head.group(2).split(".")) == tuple(path):
                    return number
        if isinstance(key, int):  # an element of an inline array: the array's line
            return self.line_of(wanted)
        return header_line


def read_toml(path: str | Path) -> TomlDocument:
    """Parse a TOML file; a syntax error becomes an InputError naming the file and line."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", source=source) from None
    except UnicodeDecodeError:
        raise InputError("expected UTF-8 text", source=source) from None
    refuse_control(text, "file", source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        line = re.search(r"line (\d+)", message)
        brief = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise InputError(f"not valid TOML: {brief}", source=source,
                         where=f"line {line.group(1)}" if line else None) from None
    return TomlDocument(source, data, tuple(text.splitlines()))


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Table:
    """One TOML table and where it sits; typed getters raise located InputErrors."""

    doc: TomlDocument
    data: dict[str, Any]
    path: tuple[str | int, ...] = ()

    @classmethod
    def root(cls, doc: TomlDocument) -> "Table":
        """The whole document as a table."""
        return cls(doc, doc.data, ())

    def error(self, key: str | int | None, message: str) -> InputError:
        """An InputError placed at ``key`` of this table (or the table itself)."""
        path = self.path if key is None else (*self.path, key)
        line = self.doc.line_of(path) if path else None
        where = ": ".join(part for part in (f"line {line}" if line else "", _dotted(path)) if part)
        return InputError(message, source=self.doc.source, where=where or None)

    def has(self, key: str) -> bool:
        """Whether ``key`` is present."""
        return key in self.data

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        """The value at ``key`` as parsed; missing without default is an error."""
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise self.error(None, f"missing field {key!r}")
        return default

    def text(self, key: str, default: Any = _MISSING, choices: list[str] | None = None) -> str:
        """A string field, optionally one of ``choices``."""
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {_kind(value)} {value!r}")
        if choices is not None and value not in choices:
            raise self.error(key, f"expected one of {choices}, got {value!r}")
        return value

    def integer(self, key: str, default: Any = _MISSING, minimum: int | None = None) -> int:
        """An integer field, at least ``minimum`` (absent: ``default``, which may be None)."""
        value = self.raw(key, default)
        if value is default and default is None:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer{_at_least(minimum)}, got {_kind(value)} {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"expected an integer{_at_least(minimum)}, got {value}")
        return value

    def positive(self, key: str, default: Any = _MISSING) -> float:
        """A finite number > 0 (an integer is taken as a float)."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise self.error(key, f"expected a finite number > 0, got {_kind(value)} {value!r}")
        return float(value)

    def strings(self, key: str, default: Any = _MISSING, nonempty: bool = True) -> tuple[str, ...]:
        """An array of strings."""
        value = self.raw(key, default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"expected an array of strings, got {value!r}")
        if nonempty and not value:
            raise self.error(key, "expected at least one string")
        return tuple(value)

    def table(self, key: str, default: Any = _MISSING) -> "Table | None":
        """A sub-table (``[a.b]`` or inline); ``None`` when missing and ``default`` is None."""
        value = self.raw(key, default)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"expected a table, got {_kind(value)}")
        return Table(self.doc, value, (*self.path, key))

    def tables(self, key: str, default: Any = _MISSING) -> list["Table"]:
        """An array of tables (``[[key]]``)."""
        value = self.raw(key, default)
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.error(key, f"expected an array of tables ([[{key}]]), got {_kind(value)}")
        return [Table(self.doc, item, (*self.path, key, i)) for i, item in enumerate(value)]

    def only(self, *allowed: str) -> None:
        """Reject keys other than ``allowed`` (catches typos such as ``ppm``)."""
        for key in self.data:
            if key not in allowed:
                raise self.error(key, f"unknown field {key!r}; expected one of {sorted(allowed)}")


def _at_least(minimum: int | None) -> str:
    return "" if minimum is None else f" >= {minimum}"
