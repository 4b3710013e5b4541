"""Small platforms and tau-Lop tables shared by the tau-Lop tests (built in code, not read from files)."""

from __future__ import annotations

import numpy as np

from commcost.models.taulop.params import TauLopChannel, TauLopParams
from commcost.platform import Channel, Mapping, Node, NodeType, Platform

SIZES = np.array([0, 64, 1024, 8192, 65536, 1 << 20], dtype=float)


def linear_table(latency_s: float, s_per_byte: float, share: float, o_s: float, tau_max: int = 8) -> TauLopChannel:
    """L(m, tau) = (latency + m*s_per_byte) * (1 + share*(tau-1)): within the model's bounds for 0 <= share <= 1."""
    L1 = latency_s + SIZES * s_per_byte
    L = np.stack([L1 * (1 + share * (t - 1)) for t in range(1, tau_max + 1)], axis=1)
    return TauLopChannel(SIZES, o_s + SIZES * 1e-12, L)


def two_channel_params() -> TauLopParams:
    """shm (c = 0) and ib (c = 1) tables whose L grows with tau."""
    return TauLopParams({
        "shm": linear_table(2e-7, 2e-10, 0.5, 3e-7),
        "ib": linear_table(1.5e-6, 3e-10, 0.9, 1e-6),
    })


def two_node_platform(cores: int = 16) -> Platform:
    """Two nodes; shm inside a node (id 0), ib between nodes (id 1)."""
    kind = NodeType("x", cores)
    return Platform(
        "two-node", (kind,), (Node("node0", kind), Node("node1", kind)),
        (Channel("shm", 0, "node", ("shm", "shm")), Channel("ib", 1, "world", ("ib",))),
    )


def sequential(platform: Platform, nprocs: int, ppn: int) -> Mapping:
    """Rank p on node p div ppn."""
    return Mapping.sequential(platform, nprocs, ppn)
