"""Process layouts (paper 000, Table 1): how many nodes of each type, and processes by size.

A layout row says how many nodes of each node type are used (the ``M``
column, e.g. ``9+7``: nine nodes of the first type, seven of the second),
how many CPU processes run with each core count (columns ``c=6`` ... ``c=2``)
and how many processes drive a GPU (each uses one dedicated core and one
GPU of its node, paper 000 section 5.3). ``P`` is their sum.

:func:`place_layout` packs those processes onto the nodes (cores and GPUs
are the capacities) and numbers ranks node by node: on each node the CPU
processes by decreasing core count, then its GPU processes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commcost.errors import InputError
from commcost.platform.mapping import Mapping, RankKind
from commcost.platform.platform import Platform


@dataclass(frozen=True)
class LayoutRow:
    """One row of a layout table: nodes per node type, CPU processes per core count, GPU processes."""

    name: str
    nodes_per_type: tuple[int, ...]
    cpu_processes: tuple[tuple[int, int], ...]  # (cores per process, number of processes)
    gpu_processes: int = 0

    @property
    def nprocs(self) -> int:
        """P: CPU processes plus GPU processes."""
        return sum(count for _, count in self.cpu_processes) + self.gpu_processes

    @property
    def nnodes(self) -> int:
        """M: nodes used, all types together."""
        return sum(self.nodes_per_type)

    @property
    def cores_used(self) -> int:
        """Cores the processes occupy (a GPU process holds one core)."""
        return sum(cores * count for cores, count in self.cpu_processes) + self.gpu_processes


def layout_nodes(platform: Platform, row: LayoutRow) -> list[int]:
    """Indices of the nodes a row uses: the first k nodes of each node type, types in platform order."""
    if len(row.nodes_per_type) > len(platform.node_types):
        raise InputError(
            f"layout {row.name!r} counts nodes of {len(row.nodes_per_type)} node types; "
            f"the platform has {len(platform.node_types)} ({[t.name for t in platform.node_types]})",
            where="M",
        )
    chosen: list[int] = []
    for node_type, wanted in zip(platform.node_types, row.nodes_per_type):
        of_type = [i for i, node in enumerate(platform.nodes) if node.type == node_type]
        if wanted > len(of_type):
            raise InputError(
                f"layout {row.name!r} wants {wanted} nodes of type {node_type.name!r}; "
                f"the platform has {len(of_type)}",
                where="M",
            )
        chosen.extend(of_type[:wanted])
    return sorted(chosen)


def place_layout(platform: Platform, row: LayoutRow) -> Mapping:
    """Pack a layout row onto its nodes; InputError when the processes cannot fit.

    Items go largest first (GPU processes, then CPU processes by decreasing
    cores) into the first node with room; when first-fit strands an item,
    a depth-first search over the remaining choices finds a packing if one
    exists (nodes with equal free capacity are tried once).
    """
    nodes = layout_nodes(platform, row)
    free_cores = [platform.nodes[i].type.cores for i in nodes]
    free_gpus = [platform.nodes[i].type.gpus for i in nodes]
    items = [(1, 1)] * row.gpu_processes + [
        (cores, 0) for cores, count in sorted(row.cpu_processes, reverse=True) for _ in range(count)
    ]
    if row.cores_used > sum(free_cores) or row.gpu_processes > sum(free_gpus):
        raise InputError(
            f"layout {row.name!r} needs {row.cores_used} cores and {row.gpu_processes} GPUs; "
            f"its {len(nodes)} nodes have {sum(free_cores)} cores and {sum(free_gpus)} GPUs",
        )
    where = [-1] * len(items)

    def fill(k: int) -> bool:
        if k == len(items):
            return True
        cores, gpus = items[k]
        tried: set[tuple[int, int]] = set()
        for slot in range(len(nodes)):
            state = (free_cores[slot], free_gpus[slot])
            if cores > state[0] or gpus > state[1] or state in tried:
                continue
            tried.add(state)
            free_cores[slot] -= cores
            free_gpus[slot] -= gpus
            where[k] = slot
            if fill(k + 1):
                return True
            free_cores[slot] += cores
            free_gpus[slot] += gpus
        return False

    if not _first_fit(items, free_cores, free_gpus, where) and not fill(0):
        raise InputError(f"layout {row.name!r}: the processes do not fit on the nodes' cores and GPUs")
    # Rank order: node by node; CPU processes by decreasing cores, then GPU processes.
    order = sorted(range(len(items)), key=lambda k: (where[k], items[k][1], -items[k][0]))
    node_of_rank = np.array([nodes[where[k]] for k in order], dtype=np.int64)
    kind = np.array([RankKind.GPU if items[k][1] else RankKind.CPU for k in order], dtype=np.int8)
    cores = np.array([items[k][0] for k in order], dtype=np.int64)
    return Mapping(node_of_rank, kind, cores, f"layout {row.name}")


def _first_fit(items: list[tuple[int, int]], free_cores: list[int], free_gpus: list[int],
               where: list[int]) -> bool:
    """First-fit in item order; on success fills ``where`` and the free lists, else leaves them as they were."""
    cores_left, gpus_left = list(free_cores), list(free_gpus)
    chosen = []
    for cores, gpus in items:
        slot = next((s for s in range(len(cores_left)) if cores <= cores_left[s] and gpus <= gpus_left[s]), -1)
        if slot < 0:
            return False
        cores_left[slot] -= cores
        gpus_left[slot] -= gpus
        chosen.append(slot)
    where[:] = chosen
    free_cores[:] = cores_left
    free_gpus[:] = gpus_left
    return True
