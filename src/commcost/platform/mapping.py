"""Where each rank runs: rank -> node (and whether it is a CPU or a GPU process).

Builders follow the usual placements: sequential (rank p on node p div Q),
round-robin (rank p on node p mod M), a seeded random placement, and an
explicit node per rank (from a file). Layout tables (paper 000, Table 1)
are in :mod:`commcost.platform.layout`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from commcost.errors import InputError
from commcost.platform.platform import Platform


class RankKind(enum.IntEnum):
    """What a rank computes with: CPU cores, or a GPU with one dedicated core (paper 000, Fig. 1)."""

    CPU = 0
    GPU = 1


@dataclass(frozen=True, eq=False)
class Mapping:
    """Rank -> node index, kind (CPU/GPU) and number of cores, as arrays indexed by rank."""

    node_of_rank: np.ndarray
    kind: np.ndarray
    cores: np.ndarray
    description: str = ""

    def __post_init__(self) -> None:
        node = np.asarray(self.node_of_rank, dtype=np.int64)
        object.__setattr__(self, "node_of_rank", node)
        object.__setattr__(self, "kind", np.asarray(self.kind, dtype=np.int8))
        object.__setattr__(self, "cores", np.asarray(self.cores, dtype=np.int64))
        if not (len(node) == len(self.kind) == len(self.cores)):
            raise ValueError("node_of_rank, kind and cores must have one entry per rank")

    @property
    def nprocs(self) -> int:
        """Number of ranks placed."""
        return len(self.node_of_rank)

    def nodes_of_first(self, nprocs: int) -> int:
        """How many nodes ranks 0..nprocs-1 sit on (a communicator of the first ``nprocs`` ranks)."""
        return len(np.unique(self.node_of_rank[:nprocs]))

    @classmethod
    def on_nodes(cls, node_of_rank: np.ndarray | list[int], description: str = "") -> "Mapping":
        """CPU ranks of one core each on the given node indices."""
        node = np.asarray(node_of_rank, dtype=np.int64)
        return cls(node, np.zeros(len(node), np.int8), np.ones(len(node), np.int64), description)

    @classmethod
    def sequential(cls, platform: Platform, nprocs: int, ppn: int) -> "Mapping":
        """Rank p on node p div ppn: consecutive ranks fill a node before the next."""
        _check_positive(nprocs=nprocs, ppn=ppn)
        nodes_needed = -(-nprocs // ppn)
        _check_fits(platform, nodes_needed, f"{nprocs} ranks at {ppn} per node")
        return cls.on_nodes(np.arange(nprocs) // ppn, f"sequential, {ppn} per node")

    @classmethod
    def round_robin(cls, platform: Platform, nprocs: int, nnodes: int | None = None) -> "Mapping":
        """Rank p on node p mod M: consecutive ranks on consecutive nodes."""
        nnodes = len(platform.nodes) if nnodes is None else nnodes
        _check_positive(nprocs=nprocs, nnodes=nnodes)
        _check_fits(platform, nnodes, f"round-robin over {nnodes} nodes")
        return cls.on_nodes(np.arange(nprocs) % nnodes, f"round-robin over {nnodes} nodes")

    @classmethod
    def random(cls, platform: Platform, nprocs: int, ppn: int, seed: int) -> "Mapping":
        """A seeded random permutation of the sequential placement (same ranks per node)."""
        base = cls.sequential(platform, nprocs, ppn)
        rng = np.random.default_rng(seed)
        return cls.on_nodes(rng.permutation(base.node_of_rank), f"random (seed {seed}), {ppn} per node")

    @classmethod
    def from_node_names(cls, platform: Platform, names: list[str]) -> "Mapping":
        """Rank p on the node named ``names[p]``."""
        lookup = {node.name: index for index, node in enumerate(platform.nodes)}
        nodes = []
        for rank, name in enumerate(names):
            if name not in lookup:
                raise InputError(
                    f"rank {rank} is placed on node {name!r}, which the platform does not have; "
                    f"expected one of {sorted(lookup)[:8]}"
                )
            nodes.append(lookup[name])
        return cls.on_nodes(nodes, "from a file")

    def ranks_per_node(self, nnodes: int) -> np.ndarray:
        """How many ranks each node holds."""
        return np.bincount(self.node_of_rank, minlength=nnodes)


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise InputError(f"{name} must be >= 1, got {value}", where=name)


def _check_fits(platform: Platform, nodes_needed: int, what: str) -> None:
    if nodes_needed > len(platform.nodes):
        raise InputError(
            f"{what} needs {nodes_needed} nodes; the platform has {len(platform.nodes)}",
            where="mapping",
        )


def largest_buffer(platform: Platform, mapping: Mapping) -> tuple[int, int, int] | None:
    """The largest buffer each rank of ``mapping`` can hold where the nodes it uses state their memory
    (:attr:`NodeType.memory_bytes`): over those nodes, the least of memory // ranks on it, as (bytes, that
    node's index, its ranks); None where no node used states its memory. A collective's rank holds at least
    the nbytes it is called with (its send or receive buffer), so a size past this cannot run there."""
    node, ranks = np.unique(mapping.node_of_rank, return_counts=True)
    best = None
    for n, q in zip(node.tolist(), ranks.tolist()):
        memory = platform.nodes[n].type.memory_bytes
        if memory is not None and (best is None or memory // q < best[0]):
            best = (memory // q, n, q)
    return best
