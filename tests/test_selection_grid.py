"""The selection grid: the one-pass size sweep equals building and pricing every case."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build
from commcost.models.loggp import LogGP, LogGPParams
from commcost.models.taulop.model import TauLop
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
from commcost.selection.grid import price_grid
from taulop_fixtures import two_channel_params

OMPI_BCAST = [a for a in algorithms(Collective.BCAST) if a.library == "ompi"]


def cluster(nnodes: int, ppn: int) -> Platform:
    kind = NodeType("n", ppn)
    return Platform("c", (kind,), tuple(Node(f"n{i}", kind) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                     Channel("ib", 1, "world", ("ib",), ContentionScope.NODE)))


@pytest.mark.parametrize("algorithm", [a for a in OMPI_BCAST if a.scales_with_size(a.resolve_params())],
                         ids=lambda a: a.key)
def test_scaling_algorithms_really_scale(algorithm):
    for nprocs in (1, 2, 7, 33):
        unit = build(algorithm, Case(Collective.BCAST, nprocs, 1, nprocs // 2)).schedule
        for nbytes in (3, 1000, 1 << 20):
            s = build(algorithm, Case(Collective.BCAST, nprocs, nbytes, nprocs // 2)).schedule
            for field in ("src", "dst", "phase", "posted"):
                assert np.array_equal(getattr(s, field), getattr(unit, field))
            assert np.array_equal(s.nbytes, unit.nbytes * nbytes)


@pytest.mark.parametrize("model", [TauLop(two_channel_params()), LogGP(LogGPParams(1e-6, 5e-7, 6e-7, 3e-10))],
                         ids=["taulop", "loggp"])
def test_sweep_equals_case_by_case(model):
    platform = cluster(8, 4)
    sizes = [1, 100, 4096, 65536, 1 << 20]
    procs = [2, 5, 16, 32]
    mapping_of = lambda p: Mapping.sequential(platform, p, 4)  # noqa: E731
    fast = price_grid(OMPI_BCAST, procs, sizes, platform, mapping_of, model)
    slow = price_grid(OMPI_BCAST, procs, sizes, platform, mapping_of, model, sweep=False)
    assert np.allclose(fast.time_s, slow.time_s, rtol=1e-12)
    assert fast.time_s.shape == (9, 4, 5) and np.all(fast.time_s > 0)
    assert np.array_equal(fast.best(), slow.best())
