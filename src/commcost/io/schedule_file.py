"""Schedule files (JSON or TOML): phases of (src, dst, size) transmissions, read and written.

::

    {
      "name": "SUMMA iteration k = 80",
      "nprocs": 6,
      "unit": {"name": "block", "nbytes": 8192},     # optional; sizes are in this unit
      "phases": [
        {"name": "pbc", "mode": "sequence",          # or "posted" (Isend + Waitall)
         "rank_modes": {"4": "posted"},             # optional per-rank exceptions
         "sends": [[1, 0, 134], [1, 3, 146], [4, 3, "48KiB"]]}
      ]
    }

A size is a number in the file's unit, or a string with a byte unit
("48KiB", "1.5MiB"; K and M are binary, KB and MB refused). The TOML form has the same fields (``[[phases]]``).
Errors name the file and the field path, e.g. ``phases[0].sends[2]``.

A *dependency schedule* (:mod:`commcost.schedule.schedule`: no barriers,
each transmission waits for named ones) writes a send that is waited for
or waits as an object, ``{"src": 1, "dst": 2, "size": 8, "id": "a",
"after": ["b"]}``: ``id`` is a name unique in the file, ``after`` lists
the ids of earlier sends (in file order) that the sender received
(``dst`` of that send is this ``src``) or sent (same ``src``). The top-level
``"dependencies": true`` says the file is one (implied by any ``after``);
phases are then labels, ``mode`` stays the sender's posting flag, and
``repeat`` must be 1.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from commcost.errors import InputError
from commcost.io.toml_file import read_toml
from commcost.schedule.schedule import Schedule, SendMode, SizeUnit, dependency_rows
from commcost.units import MAX_NBYTES, parse_nbytes, too_long_for_int
from commcost.io.text_lines import text_of

_TOP = ("name", "nprocs", "unit", "dependencies", "phases")
_PHASE = ("name", "mode", "repeat", "combine", "rank_modes", "sends")


def load_schedule(path: str | Path) -> Schedule:
    """Read a ``.json`` or ``.toml`` schedule; errors name the file and field."""
    source = str(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".toml":
        data: Any = read_toml(path).data
    elif suffix == ".json":
        text = text_of(path, "schedule")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=source, where=f"line {exc.lineno}") from None
    else:
        raise InputError(f"expected a .json or .toml schedule, got {suffix or 'no extension'!r}", source=source)
    try:
        return schedule_from_dict(data, default_name=Path(path).stem)
    except InputError as exc:
        raise exc.located(source=source) from None


def _fail(where: str, message: str) -> InputError:
    return InputError(message, where=where)


MAX_REPEAT = 1_000_000_000  # runs of one phase: past it a time means nothing (and numpy's int64 overflows at 2^63)


def _integer(value: Any, where: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(where, f"expected an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise _fail(where, f"expected an integer of at most {maximum:,}, got {value:,}")
    return value


def _combine(value: Any, nsends: int, where: str) -> np.ndarray:
    """A phase's ``combine``: true/false for all its sends, or one boolean per send."""
    if isinstance(value, bool):
        return np.full(nsends, value)
    if isinstance(value, list) and len(value) == nsends and all(isinstance(v, bool) for v in value):
        return np.array(value, dtype=bool)
    raise _fail(where, f"expected true, false or one boolean per send ({nsends}), got {value!r}")


def _mode(value: Any, where: str) -> SendMode:
    try:
        return SendMode(value)
    except ValueError:
        raise _fail(where, f"expected one of {[m.value for m in SendMode]}, got {value!r}") from None


def _unit(value: Any) -> SizeUnit:
    if value is None:
        return SizeUnit()
    if not isinstance(value, dict) or set(value) - {"name", "nbytes"} or "nbytes" not in value:
        raise _fail("unit", f'expected {{"name": ..., "nbytes": ...}}, got {value!r}')
    nbytes = value["nbytes"]
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not nbytes >= 1 \
            or not float(nbytes).is_integer() or nbytes > MAX_NBYTES:
        raise _fail("unit.nbytes", f"expected a whole number of bytes, 1 to {MAX_NBYTES:,}, got {nbytes!r}")
    name = value.get("name", f"{nbytes:g}B")
    if not isinstance(name, str):
        raise _fail("unit.name", f"expected a string, got {name!r}")
    return SizeUnit(name, int(nbytes))


_SEND = ("src", "dst", "size", "id", "after")


@dataclass(frozen=True)
class _Link:
    """The id and the waits of one send written as an object (file position ``index``, all phases counted)."""

    index: int
    where: str
    id: str | None
    after: tuple[str, ...]


def _sends(rows: Any, where: str, nprocs: int, unit: SizeUnit, links: list[_Link], base: int) -> np.ndarray:
    """An (n, 3) float array of src, dst, nbytes, every row checked; sends written as objects add to ``links``."""
    if not isinstance(rows, list):
        raise _fail(where, f"expected an array of [src, dst, size] rows, got {type(rows).__name__}")
    try:
        table = np.array(rows) if rows else np.zeros((0, 3))
        numeric = table.dtype.kind in "iuf" and table.shape == (len(rows), 3)
    except (ValueError, TypeError):  # ragged rows
        numeric = False
    if numeric:
        table = table.astype(np.float64)
        table[:, 2] *= unit.nbytes
    else:
        parsed = []
        for i, row in enumerate(rows):
            values, link = _row(row, f"{where}[{i}]", unit, base + i)
            parsed.append(values)
            if link is not None:
                links.append(link)
        table = np.array(parsed, dtype=np.float64).reshape(len(rows), 3)
    checks = (
        (~np.isfinite(table[:, 0]) | (table[:, 0] != np.round(table[:, 0])) | (table[:, 0] < 0)
         | (table[:, 0] >= nprocs), f"src must be a rank in 0..{nprocs - 1}"),
        (~np.isfinite(table[:, 1]) | (table[:, 1] != np.round(table[:, 1])) | (table[:, 1] < 0)
         | (table[:, 1] >= nprocs), f"dst must be a rank in 0..{nprocs - 1}"),
        (table[:, 0] == table[:, 1], "src and dst must differ (a rank does not send to itself)"),
        (~np.isfinite(table[:, 2]) | (table[:, 2] < 0), "the size must be a finite number >= 0"),
    )
    for bad, expected in checks:
        if np.any(bad):
            i = int(np.argmax(bad))
            raise _fail(f"{where}[{i}]", f"{expected}; got {_show(rows[i])}")
    return table


def _row(row: Any, where: str, unit: SizeUnit, index: int) -> tuple[list[float], _Link | None]:
    """One send, ``[src, dst, size]`` or ``{"src", "dst", "size", "id", "after"}``; the object's id and waits."""
    link = None
    if isinstance(row, dict):
        for key in row:
            if key not in _SEND:
                raise _fail(f"{where}.{key}", f"unknown field {key!r}; expected one of {list(_SEND)}")
        missing = [key for key in ("src", "dst", "size") if key not in row]
        if missing:
            raise _fail(where, f"expected the fields src, dst and size; {', '.join(missing)} missing")
        ident = row.get("id")
        if ident is not None and (not isinstance(ident, str) or not ident):
            raise _fail(f"{where}.id", f"expected a non-empty string, got {_show(ident)}")
        after = row.get("after", [])
        if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
            raise _fail(f"{where}.after", f'expected a list of ids such as ["a", "b"], got {_show(after)}')
        link = _Link(index, where, ident, tuple(after))
        src, dst, size = row["src"], row["dst"], row["size"]
    elif isinstance(row, list):
        if len(row) != 3:
            raise _fail(where, f"expected [src, dst, size], got {_show(row)}")
        src, dst, size = row
    else:
        raise _fail(where, f"expected [src, dst, size] or an object with src, dst, size, id, after; got {_show(row)}")
    for name, value in (("src", src), ("dst", dst)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(where, f"{name} must be an integer rank, got {value!r}")
    if isinstance(size, str):
        try:
            nbytes = float(parse_nbytes(size))
        except (InputError, ValueError) as exc:
            raise _fail(where, f"size: {getattr(exc, 'message', exc)}") from None
    elif isinstance(size, (int, float)) and not isinstance(size, bool):
        nbytes = float(size) * unit.nbytes
    else:
        raise _fail(where, f"size must be a number (in {unit.name}) or a string such as '64KiB', got {size!r}")
    return [float(src), float(dst), nbytes], link


def _dependencies(links: list[_Link], src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(after_ptr, after_idx)`` from the sends' ids and ``after`` lists, each wait checked.

    A send waits only for an earlier send (file order) that its sender
    received or sent (see :mod:`commcost.schedule.schedule`)."""
    ids: dict[str, _Link] = {}
    for link in links:
        if link.id is not None:
            if link.id in ids:
                raise _fail(f"{link.where}.id", f"{link.id!r} is already the id of {ids[link.id].where}; "
                                                "expected ids unique in the file")
            ids[link.id] = link
    waiter: list[int] = []
    waited: list[int] = []
    for link in links:
        i = link.index
        for k, name in enumerate(link.after):
            where = f"{link.where}.after[{k}]"
            target = ids.get(name)
            if target is None:
                raise _fail(where, f"unknown id {name!r}; expected the id of an earlier send")
            j = target.index
            if j >= i:
                what = "this send itself" if j == i else f"a later send ({target.where})"
                raise _fail(where, f"{name!r} is {what}; expected an earlier send (a send waits only for what "
                                   "comes before it in the file)")
            me = int(src[i])
            if dst[j] != me and src[j] != me:
                raise _fail(where, f"{name!r} ({target.where}: src {int(src[j])}, dst {int(dst[j])}) is neither "
                                   f"received nor sent by rank {me}, this send's sender; expected a send to or "
                                   f"from rank {me}")
            waiter.append(i)
            waited.append(j)
    return dependency_rows(len(src), np.array(waiter, np.int64), np.array(waited, np.int64))


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def schedule_from_dict(data: Any, default_name: str = "schedule") -> Schedule:
    """A schedule from parsed JSON/TOML data (see the module docstring)."""
    if not isinstance(data, dict):
        raise _fail("", "expected an object with nprocs and phases")
    for key in data:
        if key not in _TOP:
            raise _fail(str(key), f"unknown field {key!r}; expected one of {list(_TOP)}")
    if "nprocs" not in data or "phases" not in data:
        raise _fail("", "expected the fields nprocs and phases")
    nprocs = _integer(data["nprocs"], "nprocs", 1)
    name = data.get("name", default_name)
    if not isinstance(name, str):
        raise _fail("name", f"expected a string, got {name!r}")
    unit = _unit(data.get("unit"))
    phases = data["phases"]
    if not isinstance(phases, list) or not all(isinstance(p, dict) for p in phases):
        raise _fail("phases", "expected an array of phase objects")
    dependencies = data.get("dependencies")
    if dependencies is not None and not isinstance(dependencies, bool):
        raise _fail("dependencies", f"expected true or false, got {_show(dependencies)}")
    names, tables, posted_parts, repeats, combines = [], [], [], [], []
    links: list[_Link] = []
    count = 0
    for k, phase in enumerate(phases):
        where = f"phases[{k}]"
        for key in phase:
            if key not in _PHASE:
                raise _fail(f"{where}.{key}", f"unknown field {key!r}; expected one of {list(_PHASE)}")
        pname = phase.get("name", f"phase {k}")
        if not isinstance(pname, str):
            raise _fail(f"{where}.name", f"expected a string, got {pname!r}")
        mode = _mode(phase.get("mode", SendMode.SEQUENCE.value), f"{where}.mode")
        table = _sends(phase.get("sends", []), f"{where}.sends", nprocs, unit, links, count)
        count += len(table)
        posted = np.full(len(table), mode is SendMode.POSTED)
        rank_modes = phase.get("rank_modes", {})
        if not isinstance(rank_modes, dict):
            raise _fail(f"{where}.rank_modes", 'expected an object such as {"3": "posted"}')
        for rank_text, value in rank_modes.items():
            if not str(rank_text).isdigit() or too_long_for_int(str(rank_text)) or int(rank_text) >= nprocs:
                raise _fail(f"{where}.rank_modes", f"expected rank keys in 0..{nprocs - 1}, got {rank_text!r}")
            posted[table[:, 0] == int(rank_text)] = _mode(value, f"{where}.rank_modes.{rank_text}") is SendMode.POSTED
        names.append(pname)
        repeats.append(_integer(phase.get("repeat", 1), f"{where}.repeat", 1, MAX_REPEAT))
        combines.append(_combine(phase.get("combine", False), len(table), f"{where}.combine"))
        tables.append(table)
        posted_parts.append(posted)
    table = np.concatenate(tables) if tables else np.zeros((0, 3))
    src, dst = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    waits = next((link for link in links if link.after), None)
    if dependencies is False and waits is not None:
        raise _fail(f"{waits.where}.after", "the file says dependencies = false; expected no after lists, "
                                            "or dependencies = true")
    after_ptr = after_idx = None
    if dependencies or waits is not None:
        for k, times in enumerate(repeats):
            if times != 1:
                raise _fail(f"phases[{k}].repeat", f"a schedule with dependencies runs every send once; "
                                                   f"expected repeat = 1, got {times}")
        after_ptr, after_idx = _dependencies(links, src, dst)
    phase_index = np.repeat(np.arange(len(tables)), [len(t) for t in tables])
    return Schedule(nprocs, src, dst, table[:, 2],
                    phase_index, np.concatenate(posted_parts) if posted_parts else np.zeros(0, bool),
                    tuple(names), name, unit, np.array(repeats, dtype=np.int64),
                    np.concatenate(combines) if combines else np.zeros(0, bool), after_ptr, after_idx)


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    """The file form of a schedule; :func:`schedule_from_dict` reads it back unchanged.

    In a dependency schedule a send that is waited for gets the id ``t<i>``,
    i its position in the file (all phases counted, from 0), and a send
    that waits lists those ids in ``after``; both are written as objects."""
    dependencies = schedule.has_dependencies
    waited = np.zeros(schedule.ntransmissions, bool)
    if dependencies:
        if np.any(np.diff(schedule.phase) < 0):
            raise ValueError("a schedule file lists sends phase by phase; expected transmissions ordered by phase")
        waited[schedule.after_idx] = True
    phases = []
    for k, part in enumerate(schedule.phase_slices()):
        posted = schedule.posted[part]
        src = schedule.src[part]
        default_posted = bool(posted.size) and bool(posted.mean() > 0.5)
        exceptions = {str(r): (SendMode.POSTED if not default_posted else SendMode.SEQUENCE).value
                      for r in np.unique(src[posted != default_posted])}
        sizes = schedule.nbytes[part] / schedule.unit.nbytes
        sends: list[Any] = [[int(s), int(d), int(m) if float(m).is_integer() else float(m)]
                            for s, d, m in zip(src, schedule.dst[part], sizes)]
        if dependencies:
            for i in range(part.start, part.stop):
                after = schedule.after(i)
                if waited[i] or len(after):
                    s, d, m = sends[i - part.start]
                    send: dict[str, Any] = {"src": s, "dst": d, "size": m}
                    if waited[i]:
                        send["id"] = f"t{i}"
                    if len(after):
                        send["after"] = [f"t{j}" for j in after.tolist()]
                    sends[i - part.start] = send
        entry: dict[str, Any] = {"name": schedule.phase_names[k],
                                 "mode": (SendMode.POSTED if default_posted else SendMode.SEQUENCE).value}
        if schedule.repeat[k] > 1:
            entry["repeat"] = int(schedule.repeat[k])
        combine = schedule.combine[part]
        if combine.any():
            entry["combine"] = True if combine.all() else [bool(c) for c in combine]
        if exceptions:
            entry["rank_modes"] = exceptions
        entry["sends"] = sends
        phases.append(entry)
    data: dict[str, Any] = {"name": schedule.name, "nprocs": schedule.nprocs,
                            "unit": {"name": schedule.unit.name, "nbytes": schedule.unit.nbytes}}
    if dependencies:
        data["dependencies"] = True
    data["phases"] = phases
    return data


def dump_schedule(schedule: Schedule, path: str | Path) -> None:
    """Write a schedule as ``.json`` or ``.toml`` (by the file's extension)."""
    data = schedule_to_dict(schedule)
    if Path(path).suffix.lower() == ".toml":
        Path(path).write_text(_toml_text(data), encoding="utf-8")
    else:
        Path(path).write_text(_json_text(data), encoding="utf-8")


def _json_text(data: dict[str, Any]) -> str:
    """JSON with one send per line, so a schedule file diffs and reads well."""
    lines = ["{"]
    head = {k: v for k, v in data.items() if k != "phases"}
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines.append('  "phases": [')
    for k, phase in enumerate(data["phases"]):
        lines.append("    {")
        for key, value in phase.items():
            if key != "sends":
                lines.append(f"      {json.dumps(key)}: {json.dumps(value)},")
        rows = ",\n".join(f"        {json.dumps(row)}" for row in phase["sends"])
        lines.append('      "sends": [' + (f"\n{rows}\n      ]" if rows else "]"))
        lines.append("    }" + ("," if k < len(data["phases"]) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def _toml_string(value: Any) -> str:
    """A TOML basic string (JSON's escapes, but characters beyond the BMP written as themselves)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_text(data: dict[str, Any]) -> str:
    unit = data["unit"]
    lines = [f"name = {_toml_string(data['name'])}", f"nprocs = {data['nprocs']}",
             f"unit = {{ name = {_toml_string(unit['name'])}, nbytes = {unit['nbytes']} }}"]
    if data.get("dependencies"):
        lines.append("dependencies = true")
    for phase in data["phases"]:
        lines += ["", "[[phases]]", f"name = {_toml_string(phase['name'])}", f"mode = {_toml_string(phase['mode'])}"]
        if "repeat" in phase:
            lines.append(f"repeat = {phase['repeat']}")
        if "combine" in phase:
            lines.append(f"combine = {json.dumps(phase['combine'])}")
        if "rank_modes" in phase:
            modes = ", ".join(f"{_toml_string(r)} = {_toml_string(m)}" for r, m in phase["rank_modes"].items())
            lines.append(f"rank_modes = {{ {modes} }}")
        lines.append("sends = [")
        lines += [f"  {_toml_send(row)}," for row in phase["sends"]]
        lines.append("]")
    return "\n".join(lines) + "\n"


def _toml_send(row: list[Any] | dict[str, Any]) -> str:
    """One send in TOML: ``[src, dst, size]``, or an inline table with its id and waits."""
    if isinstance(row, list):
        return json.dumps(row)
    fields = []
    for key, value in row.items():
        if isinstance(value, str):
            text = _toml_string(value)
        elif isinstance(value, list):
            text = "[" + ", ".join(_toml_string(v) for v in value) + "]"
        else:
            text = json.dumps(value)
        fields.append(f"{key} = {text}")
    return "{ " + ", ".join(fields) + " }"
