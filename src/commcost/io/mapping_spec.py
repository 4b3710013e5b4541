"""Mapping specifications: how to place ranks, written in a platform file or on the command line.

The same five kinds in both places::

    sequential:PPN            [mapping] kind = "sequential", ppn = 3
    round-robin[:NODES]       [mapping] kind = "round-robin", nodes = 4
    random:PPN:seed=N         [mapping] kind = "random", ppn = 3, seed = 7
    file:PATH                 [mapping] kind = "file", path = "ranks.txt"
    layout:PATH:ROW           [mapping] kind = "layout", path = "table1.txt", row = "M10"

A specification is built into a :class:`~commcost.platform.mapping.Mapping`
once the platform and the number of ranks are known; relative paths are
taken from the platform file's folder (from the working folder on the
command line).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from commcost.errors import InputError
from commcost.io.layout_file import read_layout_table
from commcost.io.mapping_file import load_mapping_file
from commcost.platform.layout import place_layout
from commcost.platform.mapping import Mapping
from commcost.platform.platform import Platform
from commcost.units import whole_number


class MappingKind(enum.Enum):
    """The ways commcost places ranks on nodes."""

    SEQUENTIAL = "sequential"
    ROUND_ROBIN = "round-robin"
    RANDOM = "random"
    FILE = "file"
    LAYOUT = "layout"


USAGE = "sequential:PPN, round-robin[:NODES], random:PPN:seed=N, file:PATH or layout:PATH:ROW"


@dataclass(frozen=True)
class MappingSpec:
    """A placement not yet applied: its kind and the parameters that kind takes."""

    kind: MappingKind
    ppn: int | None = None
    nodes: int | None = None
    seed: int = 0
    path: str | None = None
    row: str | None = None

    def build(self, platform: Platform, nprocs: int, base_dir: str | Path = ".") -> Mapping:
        """The mapping of ``nprocs`` ranks on ``platform``."""
        base = Path(base_dir)
        if self.kind is MappingKind.SEQUENTIAL:
            return Mapping.sequential(platform, nprocs, self.ppn or 1)
        if self.kind is MappingKind.ROUND_ROBIN:
            return Mapping.round_robin(platform, nprocs, self.nodes)
        if self.kind is MappingKind.RANDOM:
            return Mapping.random(platform, nprocs, self.ppn or 1, self.seed)
        path = base / str(self.path)
        if self.kind is MappingKind.FILE:
            mapping = load_mapping_file(path, platform)
            _check_count(mapping, nprocs, f"the mapping file {path} places")
            return mapping
        rows = read_layout_table(path)
        if self.row not in rows:
            raise InputError(f"no layout row {self.row!r}; expected one of {list(rows)}", source=str(path))
        try:
            mapping = place_layout(platform, rows[self.row])
        except InputError as exc:
            raise exc.located(source=str(path)) from None
        _check_count(mapping, nprocs, f"layout {self.row} of {path} places")
        return mapping


def _check_count(mapping: Mapping, nprocs: int, what: str) -> None:
    if mapping.nprocs != nprocs:
        raise InputError(f"{what} {mapping.nprocs} ranks; the schedule has {nprocs}")


def parse_mapping_option(text: str) -> MappingSpec:
    """Parse the command-line form (see the module docstring)."""
    kind_text, _, rest = text.partition(":")
    try:
        kind = MappingKind(kind_text)
    except ValueError:
        raise InputError(f"unknown mapping {kind_text!r}; expected {USAGE}") from None
    parts = rest.split(":") if rest else []
    try:
        if kind is MappingKind.SEQUENTIAL and len(parts) == 1:
            return MappingSpec(kind, ppn=_positive(parts[0], "PPN"))
        if kind is MappingKind.ROUND_ROBIN and len(parts) <= 1:
            return MappingSpec(kind, nodes=_positive(parts[0], "NODES") if parts else None)
        if kind is MappingKind.RANDOM and len(parts) in (1, 2):
            seed = 0
            if len(parts) == 2:
                if not parts[1].startswith("seed="):
                    raise InputError(f"expected seed=N after the PPN, got {parts[1]!r}")
                seed = _positive(parts[1][5:], "seed", minimum=0)
            return MappingSpec(kind, ppn=_positive(parts[0], "PPN"), seed=seed)
        if kind is MappingKind.FILE and rest:
            return MappingSpec(kind, path=rest)
        if kind is MappingKind.LAYOUT and len(parts) >= 2:
            return MappingSpec(kind, path=":".join(parts[:-1]), row=parts[-1])
    except InputError as exc:
        raise InputError(f"{exc.message} in {text!r}") from None
    raise InputError(f"cannot read mapping {text!r}; expected {USAGE}")


def _positive(text: str, name: str, minimum: int = 1) -> int:
    value = whole_number(text) if text == text.strip() else None
    if value is None or value < minimum:
        raise InputError(f"expected {name} as an integer >= {minimum}, got {text!r}")
    return value
