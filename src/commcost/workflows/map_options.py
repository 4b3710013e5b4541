"""The options of a placement search (:func:`commcost.workflows.mapping_search.search_mapping`), by
``commcost map``'s argparse names, so that the command line and a script build the same object."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class MapOptions:
    """What ``commcost map`` places and how it searches (its options, by their argparse names)."""

    schedule: Path | None = None
    collective: str | None = None
    kernel: str | None = None
    pattern: str | None = None
    platform: Path | None = None
    params: Path | None = None
    model: str | None = None
    ppn: int | None = None
    nodes: int | None = None
    start: list[str] | None = None
    time_limit: float = 10.0
    seed: int = 0
    out: Path | None = None
    measure: bool = False
    repeat: int = 5
    launcher: str | None = None
    mpirun: str | None = None
    timeout: float = 300.0
    strict: bool = False
    algorithm: str | None = None
    procs: int | None = None
    nbytes: str | None = None
    root: int = 0
    param: list[str] = field(default_factory=list)
    dims: str | None = None
    domain: str = "512x512x64"
    halo: str = "1x1"
    value_bytes: int = 8
    bandwidths: Path | None = None
    level: str | None = None
    partition: Path | None = None
    steps: int = 1
    matrix: Path | None = None
    rows: str = "contiguous"
    amg_level: int = 0
