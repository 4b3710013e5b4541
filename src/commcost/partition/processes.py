"""The processes a partition is for: host, kind (CPU process with k cores, or GPU process), and their FPMs.

Paper 000 section 1 and Fig. 1: a process layout gives each process's node
and processing unit; a GPU process holds a dedicated core and one GPU.
Speeds are looked up per process, most specific first: its rank number,
its kind (``cpu:K`` for a CPU process with K cores, ``gpu``), ``core`` (one
core's speed, times K for a K-core CPU process), ``default``.
"""

from __future__ import annotations

from collections.abc import Mapping as TMapping
from dataclasses import dataclass

import numpy as np

from commcost.errors import InputError
from commcost.partition.fpm import SpeedFunction
from commcost.platform import Mapping, Platform, RankKind

GPU = "gpu"
CPU = "cpu"


@dataclass(frozen=True)
class Process:
    """One process of a layout: the host it runs on, ``cpu`` or ``gpu``, and its cores (1 for a GPU process)."""

    host: str
    kind: str
    cores: int = 1

    @property
    def label(self) -> str:
        """``cpu:K`` or ``gpu``: the key a speeds file gives its kind's speed under."""
        return GPU if self.kind == GPU else f"{CPU}:{self.cores}"


def processes_of_mapping(platform: Platform, mapping: Mapping) -> list[Process]:
    """The processes of a placed layout (e.g. a paper 000 Table 1 row), in rank order."""
    return [Process(platform.nodes[int(node)].name, GPU if kind == RankKind.GPU else CPU,
                    1 if kind == RankKind.GPU else int(cores))
            for node, kind, cores in zip(mapping.node_of_rank, mapping.kind, mapping.cores)]


def speeds_of(processes: list[Process], table: TMapping[str, SpeedFunction]) -> list[SpeedFunction]:
    """The FPM of every process from a speeds table (keys: rank, cpu:K / gpu, core, default)."""
    out = []
    for rank, proc in enumerate(processes):
        for key in (str(rank), proc.label):
            if key in table:
                out.append(table[key])
                break
        else:
            if proc.kind == CPU and "core" in table:
                core = table["core"]
                out.append(SpeedFunction(core.sizes, core.speeds * proc.cores))
            elif "default" in table:
                out.append(table["default"])
            else:
                raise InputError(f"no speed for rank {rank} ({proc.label} on {proc.host}); expected an entry "
                                 f"{rank}, {proc.label}{', core' if proc.kind == CPU else ''} or default",
                                 where=f"rank {rank}")
    return out


def kinds(processes: list[Process]) -> np.ndarray:
    """1 for GPU processes, 0 for CPU processes."""
    return np.array([p.kind == GPU for p in processes], dtype=np.int8)
