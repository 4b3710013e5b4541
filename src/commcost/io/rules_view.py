"""Any collective rules file as rows a person reads: Open MPI coll/tuned (classic or JSON), coll/han, MPICH JSON.

What for: ``commcost rules show`` prints what a file (ours or written by
hand) decides without knowing its format, and ``rules diff`` compares two
Open MPI tuned files. The kind is told by the content: a JSON object with
``collectives`` is Open MPI's (6.0+), one with ``collective=...`` keys is
MPICH's (``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``); a text file is
coll/tuned's classic format when its second number is a collective id, and
coll/han's when that word is a collective's name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from commcost.collectives import Collective
from commcost.errors import InputError
from commcost.io.text_lines import data_lines, text_of

KINDS = ("ompi", "han", "mpich")


@dataclass(frozen=True)
class RuleRow:
    """One rule: for ``collective`` on communicators ``procs`` and messages ``nbytes`` (ranges as text, in the
    file's own measure of a message), run ``algorithm`` with ``params``; ``level`` for han, ``where`` the
    file's place of the rule."""

    collective: str
    procs: str
    nbytes: str
    algorithm: str
    params: dict[str, int | str] = field(default_factory=dict)
    level: str = ""
    where: str = ""


def detect_kind(path: str | Path) -> str:
    """``ompi``, ``han`` or ``mpich`` from the file's content (module docstring); InputError otherwise."""
    source = str(path)
    text = text_of(path, "rules file")
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"not valid JSON: {error.msg}", source=source, where=f"line {error.lineno}") from None
        if isinstance(document, dict) and "collectives" in document:
            return "ompi"
        if isinstance(document, dict) and any(str(k).startswith("collective=") for k in document):
            return "mpich"
        raise InputError("a JSON rules file is Open MPI's (a \"collectives\" object) or MPICH's "
                         "(\"collective=...\" keys); found neither", source=source)
    words = [w for _, fields in data_lines(path, "rules file") for w in fields]
    if words and words[0].startswith("rule-file-version"):
        return "ompi"
    if len(words) >= 2 and not words[1].lstrip("-").isdigit():
        return "han"
    if len(words) >= 2:
        return "ompi"
    raise InputError("expected an Open MPI (classic or JSON), coll/han or MPICH rules file; the file is empty",
                     source=source)


def _span(lo: int, hi: int | None) -> str:
    return f"{lo}.." if hi is None else (str(lo) if hi == lo else f"{lo}..{hi}")


def tuned_name(collective: str, alg: int) -> str:
    """``7 knomial`` for a coll/tuned id commcost knows, the bare id otherwise; 0 is the fixed decision."""
    if alg == 0:
        return "0 (Open MPI's fixed decision)"
    from commcost.collectives import find

    try:
        return f"{alg} {find(Collective(collective), str(alg)).name}"
    except (InputError, ValueError):
        return str(alg)


def rule_params(rule) -> dict[str, int | str]:
    """The tunables a coll/tuned rule sets: faninout and segsize where non-zero, max_requests where the rule
    has the field (None: the MCA parameter decides)."""
    fields = (("faninout", rule.faninout or None), ("segsize", rule.segsize or None), ("max_requests", rule.max_requests))
    return {name: value for name, value in fields if value is not None}


def ompi_rows(path: str | Path) -> tuple[str, list[RuleRow]]:
    """An Open MPI coll/tuned file's rules: (``classic`` or ``json``, rows). Classic ranges end where the next
    rule begins (lower bounds); JSON ranges are the file's inclusive min..max, first match wins."""
    from commcost.io.ompi_rules_read import read_ompi_rules

    rules = read_ompi_rules(path)
    rows = []
    for name, blocks in rules.collectives.items():
        for b_index, block in enumerate(blocks):
            comm_hi = block.comm_hi
            if rules.format == "classic" and comm_hi is None and b_index + 1 < len(blocks):
                comm_hi = blocks[b_index + 1].comm_lo - 1
            for r_index, rule in enumerate(block.rules):
                msg_hi = rule.msg_hi
                if rules.format == "classic" and msg_hi is None and r_index + 1 < len(block.rules):
                    msg_hi = block.rules[r_index + 1].msg_lo - 1
                rows.append(RuleRow(name, _span(block.comm_lo, comm_hi), _span(rule.msg_lo, msg_hi),
                                    tuned_name(name, rule.alg), rule_params(rule),
                                    where=f"line {rule.line}" if rule.line else f"{name}[{b_index}].rules[{r_index}]"))
    return rules.format, rows


def han_rows(path: str | Path) -> list[RuleRow]:
    """A coll/han dynamic rules file's rules, per level (lower bounds: a range ends where the next begins)."""
    from commcost.io.han_rules_read import read_han_rules

    rules = read_han_rules(path)
    rows = []
    for name, levels in rules.collectives.items():
        for level, configs in levels.items():
            for c_index, config in enumerate(configs):
                comm_hi = configs[c_index + 1].comm_lo - 1 if c_index + 1 < len(configs) else None
                for r_index, rule in enumerate(config.rules):
                    msg_hi = config.rules[r_index + 1].msg_lo - 1 if r_index + 1 < len(config.rules) else None
                    what = rule.component + (f" @{rule.algorithm}" if rule.algorithm else "")
                    rows.append(RuleRow(name, _span(config.comm_lo, comm_hi), _span(rule.msg_lo, msg_hi), what,
                                        level=level, where=f"line {rule.line}" if rule.line else ""))
    return rows


def mpich_rows(path: str | Path) -> list[RuleRow]:
    """An MPICH selection file's leaves: the conditions on the way (``comm_size<=8``, ``avg_msg_size=any``,
    ...) in the order MPICH tries them, and the algorithm with its parameters."""
    from commcost.io.mpich_json import read_mpich_json

    document = read_mpich_json(path)
    rows: list[RuleRow] = []

    def walk(node, trail: list[str], collective: str) -> None:
        if not isinstance(node, dict):
            raise InputError(f"expected an object under {' / '.join(trail) or 'the top level'}", source=str(path),
                             where="/".join(trail))
        for key, child in node.items():
            key = str(key)
            if key.startswith("collective="):
                walk(child, [], key.partition("=")[2])
            elif key.startswith(("algorithm=", "composition=")):
                params = {k.partition("=")[0]: k.partition("=")[2] for k in (child or {})}
                conditions = [t for t in trail if not t.startswith("comm_type")]
                procs = " ".join(t for t in conditions if t.startswith("comm_size")) or "any"
                sizes = " ".join(t for t in conditions if not t.startswith("comm_size")) or "any"
                kind = next((t.partition("=")[2] for t in trail if t.startswith("comm_type")), "")
                rows.append(RuleRow(collective, procs, sizes, key.partition("=")[2], params, level=kind,
                                    where="/".join([f"collective={collective}", *trail, key])))
            else:
                walk(child, [*trail, key], collective)

    walk(document, [], "")
    return rows


def rows_of(path: str | Path, kind: str | None = None) -> tuple[str, list[RuleRow]]:
    """(the file's kind, with ``/classic`` or ``/json`` for Open MPI; its rows)."""
    kind = kind or detect_kind(path)
    if kind == "ompi":
        fmt, rows = ompi_rows(path)
        return f"ompi/{fmt}", rows
    if kind == "han":
        return "han", han_rows(path)
    if kind == "mpich":
        return "mpich", mpich_rows(path)
    raise InputError(f"expected a kind among {', '.join(KINDS)}, got {kind!r}", where="--kind")
