"""Paper 003's two findings, reproduced with the registered algorithms and the models.

1. (Section 4, Tables 1-2, eq. 1-4.) On one shared-memory channel whose
   transfer time L(S, tau) grows with the concurrency tau, tau-Lop prices
   the recursive-doubling allgather at more than twice the binomial scatter
   of the same data (P blocks of m/P bytes) for P = 32, 64, 128, while LogGP
   prices them equal: both move the sizes m/2, m/4, ..., m/P one stage at a
   time, one message per rank per stage.
2. (Section 5, eq. 5-8.) The ring allgather on M = 4 nodes under round-robin
   mapping: every transmission crosses the network, Q of them leave each node
   at once, so tau-Lop's cost per stage grows with the ranks per node Q,
   while LogGP(H)'s cost per stage does not depend on Q.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.models import PlacedSchedule
from commcost.models.loggp import LogGP, LogGPH, LogGPHParams, LogGPParams
from commcost.models.taulop.model import TauLop
from commcost.models.taulop.params import TauLopChannel, TauLopParams
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform

SIZES = np.array([0, 1024, 8192, 65536, 1 << 20, 1 << 24], dtype=float)


def growing_table(latency_s: float, s_per_byte: float, growth: float, tau_max: int = 128) -> TauLopChannel:
    """L(m, tau) = L(m, 1) (1 + growth (tau - 1)): grows with tau, within L(m,1) <= L(m,tau) <= tau L(m,1)."""
    L1 = latency_s + SIZES * s_per_byte
    L = np.stack([L1 * (1 + growth * (t - 1)) for t in range(1, tau_max + 1)], axis=1)
    return TauLopChannel(SIZES, np.full(len(SIZES), 3e-7), L)


SHM = growing_table(2e-7, 2.5e-10, 0.12)
NET = growing_table(5e-6, 8e-9, 0.9, tau_max=16)
LOGGP = LogGPParams(L_s=5e-7, o_s=3e-7, g_s=4e-7, G_s_per_byte=2.5e-10)


def one_node(cores: int) -> Platform:
    kind = NodeType("smp", cores)
    return Platform("smp", (kind,), (Node("n0", kind),), (Channel("shm", 0, "node", ("shm", "shm")),))


@pytest.mark.parametrize("nprocs", [32, 64, 128])
def test_recursive_doubling_allgather_costs_over_twice_the_binomial_scatter_under_taulop(nprocs):
    platform = one_node(nprocs)
    mapping = Mapping.sequential(platform, nprocs, nprocs)
    taulop = TauLop(TauLopParams({"shm": SHM}))
    loggp = LogGP(LOGGP)
    for m in (64 * 1024, 1 << 20, 8 << 20):
        block = m // nprocs
        scatter = build(find(Collective.SCATTER, "binomial"), Case(Collective.SCATTER, nprocs, block)).schedule
        allgather = build(find(Collective.ALLGATHER, "recursive_doubling"),
                          Case(Collective.ALLGATHER, nprocs, block)).schedule
        # the stage sizes of Tables 1-2: scatter m/2, m/4, ..., m/P; allgather m/P, 2m/P, ..., m/2
        assert sorted(set(scatter.nbytes)) == sorted(set(allgather.nbytes)) == [
            block * 2**i for i in range(int(np.log2(nprocs)))]
        sc = PlacedSchedule.of(scatter, platform, mapping)
        ag = PlacedSchedule.of(allgather, platform, mapping)
        assert loggp.price(ag).time_s == pytest.approx(loggp.price(sc).time_s, rel=1e-12)
        assert taulop.price(ag).time_s > 2 * taulop.price(sc).time_s


def ring_case(q: int, mapping_kind: str):
    nodes = 4
    kind = NodeType("node", 64)
    platform = Platform("metropolis", (kind,), tuple(Node(f"n{i}", kind) for i in range(nodes)), (
        Channel("shm", 0, "node", ("shm", "shm")),
        Channel("tcp", 1, "world", ("shm", "tcp", "shm"), ContentionScope.NODE),
    ))
    nprocs = q * nodes
    mapping = (Mapping.round_robin(platform, nprocs) if mapping_kind == "round-robin"
               else Mapping.sequential(platform, nprocs, q))
    schedule = build(find(Collective.ALLGATHER, "ring"), Case(Collective.ALLGATHER, nprocs, 256 * 1024)).schedule
    return PlacedSchedule.of(schedule, platform, mapping), nprocs


def per_stage(model, placed, nprocs) -> float:
    return model.price(placed).time_s / (nprocs - 1)


def test_ring_allgather_round_robin_cost_per_stage_grows_with_ranks_per_node_under_taulop_only():
    taulop = TauLop(TauLopParams({"shm": SHM, "tcp": NET}))
    loggph = LogGPH(LogGPHParams({"shm": LOGGP, "tcp": LogGPParams(5e-5, 5e-6, 6e-6, 8e-9)}))
    tau_cost, loggp_cost = [], []
    for q in (2, 4, 8):
        placed, nprocs = ring_case(q, "round-robin")
        assert set(placed.channel.tolist()) == {1}  # eq. 6: every message crosses the network
        tau_cost.append(per_stage(taulop, placed, nprocs))
        loggp_cost.append(per_stage(loggph, placed, nprocs))
    assert tau_cost[0] < tau_cost[1] < tau_cost[2]
    assert loggp_cost == pytest.approx([loggp_cost[0]] * 3, rel=1e-12)
    # eq. 7 vs eq. 8: with Q = 8 sequential mapping is far cheaper than round robin under tau-Lop
    placed, nprocs = ring_case(8, "sequential")
    assert per_stage(taulop, placed, nprocs) < tau_cost[2] / 2
