"""The options of an arrangement (:func:`commcost.workflows.arrange.arrange`), by ``commcost arrange``'s
argparse names, so that the command line and a script build the same object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class ArrangeOptions:
    """What ``commcost arrange`` arranges and how (its options, by their argparse names)."""

    application: str = "mpdata"
    platform: Path | None = None
    bandwidths: Path | None = None
    bandwidths_from: str | None = None
    level: str | None = None
    ppn: int = 1
    domain: str = "512x512x64"
    halo: str = "1x1"
    value_bytes: int = 8
    initial: str = "sequential"
    initial_shape: str | None = None
    exhaustive: bool = False
    params: Path | None = None
    strict: bool = False
    model: list[str] | None = None
    out: Path | None = None
    measure: bool = False
    steps: int = 5
    repeat: int = 5
    launcher: str | None = None
    mpirun: str | None = None
    timeout: float = 300.0
