"""Reading Open MPI coll/tuned rules files back: to test what a written file decides, and to inspect a site's file.

Both formats of :mod:`commcost.io.ompi_rules`; a file whose first
non-blank character is ``{`` is JSON (Open MPI >= 6.0 tries JSON first and
falls back to classic). The classic reader follows
``ompi_coll_tuned_read_rules_config_file`` (coll_tuned_dynamic_file.c,
v5.0.x b962e8a65c): an optional ``rule-file-version-N`` at the very start,
numbers as C's ``%li`` reads them, ``#`` comments to the end of the line,
and in version 2 a fifth number on a rule's line is its max requests.
Where Open MPI would reject the file (and silently fall back to its fixed
decisions) this reader raises :class:`~commcost.errors.InputError` naming the
file, line and field. It is stricter in three places, also with errors:
words that are not numbers (Open MPI skips them character by character),
numbers after the last rule (Open MPI ignores them, so the counts are
probably wrong), and sizes out of ascending order (Open MPI's scan stops at
the first larger key, so later ones never apply).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from commcost.collectives import Collective, algorithms
from commcost.errors import InputError
from commcost.io.ompi_rules import COLLECTIVE_NAMES, OmpiBlock, OmpiRule, OmpiRules
from commcost.io.text_lines import text_of
from commcost.units import whole_number

_HEADER = re.compile(r"rule-file-version-(\d+)")
_NUMBER = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


MAX_DIGITS = 24  # the longest number a C long holds: 0x + 16 hex digits, 0 + 22 octal, or 19 decimal, signed


def _c_long(word: str) -> int:
    """A number as C's ``%li`` reads it: decimal, ``0x`` hexadecimal or ``0`` octal."""
    digits = word.lstrip("+-")
    sign = -1 if word.startswith("-") else 1
    if digits[:2].lower() == "0x":
        return sign * int(digits[2:], 16)
    return sign * int(digits, 8 if digits.startswith("0") else 10)


class _Tokens:
    """The numbers of a classic file with their line numbers, read the way Open MPI's getnext does."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.version = 1
        match = _HEADER.match(text)
        if match:
            version = whole_number(match.group(1))
            if version is None:
                raise InputError(f"rule-file-version-N: a version of {len(match.group(1)):,} digits; expected a "
                                 "version number such as 1 or 2", source=source, where="line 1")
            self.version = version
            text = text[match.end():]
        self.items: list[tuple[int, int]] = []  # (line, value)
        for number, line in enumerate(text.split("\n"), start=1):
            for word in line.split("#", 1)[0].split():
                if not _NUMBER.fullmatch(word):
                    raise InputError(f"{word[:40]!r} is not a number (Open MPI would skip it, which hides "
                                     "mistakes)", source=source, where=f"line {number}")
                if len(word) > MAX_DIGITS:  # past a C long anyway; and Python refuses 4,300 digits
                    raise InputError(f"a number of {len(word):,} characters; expected at most {MAX_DIGITS} "
                                     "(a C long)", source=source, where=f"line {number}")
                self.items.append((number, _c_long(word)))
        self.position = 0

    def next(self, field: str) -> tuple[int, int]:
        """The next number, >= 0, with its line; ``field`` names it in errors."""
        if self.position >= len(self.items):
            last = self.items[-1][0] if self.items else 1
            raise InputError(f"the file ends where {field} was expected", source=self.source, where=f"line {last}")
        line, value = self.items[self.position]
        self.position += 1
        if value < 0:
            raise InputError(f"{field} must be >= 0, got {value}", source=self.source, where=f"line {line}")
        return line, value

    def on_line(self, line: int) -> bool:
        """Whether the next number is on ``line`` (version 2 then reads it as max requests)."""
        return self.position < len(self.items) and self.items[self.position][0] == line


def _ascending(keys: list[tuple[int, int]], what: str, source: str) -> None:
    for (_, before), (line, key) in zip(keys, keys[1:]):
        if key <= before:
            raise InputError(f"{what} {key} is not above the previous {before}; Open MPI scans in file order and "
                             "stops at the first larger one", source=source, where=f"line {line}")


def _read_classic(text: str, source: str) -> OmpiRules:
    tokens = _Tokens(text, source)
    _, count = tokens.next("the number of collectives")
    collectives: dict[str, tuple[OmpiBlock, ...]] = {}
    for _ in range(count):
        line, colid = tokens.next("a collective id")
        if colid >= len(COLLECTIVE_NAMES):
            raise InputError(f"collective id {colid} is not one of Open MPI's 0..{len(COLLECTIVE_NAMES) - 1}",
                             source=source, where=f"line {line}")
        name = COLLECTIVE_NAMES[colid]
        if name in collectives:
            raise InputError(f"collective id {colid} ({name}) appears twice", source=source, where=f"line {line}")
        _, nblocks = tokens.next(f"the number of communicator sizes of {name}")
        heads: list[tuple[int, int, list[OmpiRule]]] = []
        for _ in range(nblocks):
            block_line, comm = tokens.next(f"a communicator size of {name}")
            _, nrules = tokens.next(f"the number of rules of {name} communicator size {comm}")
            rules: list[OmpiRule] = []
            for index in range(nrules):
                where = f"{name} communicator size {comm} rule {index + 1}"
                rule_line, msg = tokens.next(f"the message size of {where}")
                if index == 0 and msg != 0:
                    raise InputError(f"the first rule of {name} communicator size {comm} must be for 0 bytes, "
                                     f"got {msg}", source=source, where=f"line {rule_line}")
                _, alg = tokens.next(f"the algorithm of {where}")
                _, faninout = tokens.next(f"the fan-in/out of {where}")
                seg_line, segsize = tokens.next(f"the segment size of {where}")
                max_requests = None
                if tokens.version > 1 and tokens.on_line(seg_line):
                    _, max_requests = tokens.next(f"the max requests of {where}")
                rules.append(OmpiRule(msg, None, alg, faninout, segsize, max_requests, rule_line))
            _ascending([(r.line, r.msg_lo) for r in rules], "message size", source)
            heads.append((block_line, comm, rules))
        _ascending([(line, comm) for line, comm, _ in heads], "communicator size", source)
        blocks = []
        for index, (block_line, comm, rules) in enumerate(heads):
            comm_hi = heads[index + 1][1] - 1 if index + 1 < len(heads) else None
            bounded = tuple(OmpiRule(r.msg_lo, rules[i + 1].msg_lo - 1 if i + 1 < len(rules) else None, r.alg,
                                     r.faninout, r.segsize, r.max_requests, r.line) for i, r in enumerate(rules))
            blocks.append(OmpiBlock(comm, comm_hi, bounded, block_line))
        collectives[name] = tuple(blocks)
    if tokens.position < len(tokens.items):
        line = tokens.items[tokens.position][0]
        raise InputError("numbers after the last rule (Open MPI ignores them: do the counts match?)",
                         source=source, where=f"line {line}")
    return OmpiRules("classic", collectives, tokens.version)


def _integer(entry: dict, key: str, default: int | None, where: str, source: str) -> int | None:
    value = entry.get(key, default)
    if isinstance(value, str) and value.lower() == "inf":
        return None
    if isinstance(value, bool) or not (value is None or isinstance(value, int)) or (value is not None and value < 0):
        raise InputError(f"{key} must be an integer >= 0 or \"inf\", got {value!r}", source=source,
                         where=f"{where}.{key}")
    return value


def _algorithm(value: Any, name: str, where: str, source: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    known = {c.value: c for c in Collective}
    if isinstance(value, str) and name in known:
        hits = [a.id for a in algorithms(known[name]) if a.library == "ompi" and a.name == value]
        if hits and hits[0] is not None:
            return hits[0]
    raise InputError(f"alg must be an algorithm id or an Open MPI {name} algorithm name, got {value!r}",
                     source=source, where=f"{where}.alg")


TOP_KEYS = ("rule_file_version", "module", "collectives", "$schema")  # Open MPI's schema: no other properties
BLOCK_KEYS = ("comm_size_min", "comm_size_max", "comm_rank_distribution", "rules")
RULE_KEYS = ("msg_size_min", "msg_size_max", "alg", "faninout", "seg_size", "reqs")


def _known_keys(entry: dict, known: tuple[str, ...], where: str, source: str) -> None:
    """An InputError naming the first key of ``entry`` not in ``known`` (a misspelt or misplaced key would be
    dropped without a word: a rule meant for 7 ranks read as one for any)."""
    for key in entry:
        if key not in known:
            raise InputError(f"unknown key {key!r}; expected one of {', '.join(known)}", source=source,
                             where=f"{where}.{key}" if where else key)


def _read_json(text: str, source: str) -> OmpiRules:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"not valid JSON: {error.msg}", source=source, where=f"line {error.lineno}") from None
    table = document.get("collectives") if isinstance(document, dict) else None
    if not isinstance(table, dict):
        raise InputError("the top level must be an object with a \"collectives\" object", source=source,
                         where="collectives")
    _known_keys(document, TOP_KEYS, "", source)
    collectives: dict[str, tuple[OmpiBlock, ...]] = {}
    for name, entries in table.items():
        if name not in COLLECTIVE_NAMES:
            raise InputError(f"unknown collective {name!r}; Open MPI's names: {', '.join(COLLECTIVE_NAMES)}",
                             source=source, where=f"collectives.{name}")
        if not isinstance(entries, list):
            raise InputError("expected a list of communicator-size rules", source=source, where=f"collectives.{name}")
        blocks = []
        for b_index, entry in enumerate(entries):
            where = f"collectives.{name}[{b_index}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("rules"), list):
                raise InputError("expected an object with a \"rules\" list", source=source, where=where)
            _known_keys(entry, BLOCK_KEYS, where, source)
            if entry.get("comm_rank_distribution", "any") != "any":
                raise InputError("commcost reads only comm_rank_distribution \"any\"", source=source,
                                 where=f"{where}.comm_rank_distribution")
            rules = []
            for r_index, item in enumerate(entry["rules"]):
                at = f"{where}.rules[{r_index}]"
                if not isinstance(item, dict) or "alg" not in item:
                    raise InputError("expected an object with an \"alg\"", source=source, where=at)
                _known_keys(item, RULE_KEYS, at, source)
                rules.append(OmpiRule(_integer(item, "msg_size_min", 0, at, source) or 0,
                                      _integer(item, "msg_size_max", None, at, source),
                                      _algorithm(item["alg"], name, at, source),
                                      _integer(item, "faninout", 0, at, source) or 0,
                                      _integer(item, "seg_size", 0, at, source) or 0,
                                      _integer(item, "reqs", None, at, source)))
            blocks.append(OmpiBlock(_integer(entry, "comm_size_min", 0, where, source) or 0,
                                    _integer(entry, "comm_size_max", None, where, source), tuple(rules)))
        collectives[name] = tuple(blocks)
    version = document.get("rule_file_version", 3)
    return OmpiRules("json", collectives, version if isinstance(version, int) else 3)


def read_ompi_rules(path: str | Path) -> OmpiRules:
    """The rules of an Open MPI coll/tuned rules file, classic or JSON."""
    source = str(path)
    text = text_of(path, "rules file")
    if text.lstrip().startswith("{"):
        return _read_json(text, source)
    return _read_classic(text, source)
