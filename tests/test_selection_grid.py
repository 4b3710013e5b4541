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

OMPI_BCAST = [a for a in algorithms(Collective.BCAST) if a.library == "ompi" and a.id is not None]  # coll/tuned


def cluster(nnodes: int, ppn: int) -> Platform:
    kind = NodeType("n", ppn)
    return Platform("c", (kind,), tuple(Node(f"n{i}", kind) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                     Channel("ib", 1, "world", ("ib",), ContentionScope.NODE)))


@pytest.mark.parametrize("algorithm", [a for a in algorithms() if a.scales is not None], ids=lambda a: a.key)
def test_scale_units_are_true(algorithm):
    """Whenever an algorithm names a size n0, the schedule for n is the n0 schedule with sizes times n / n0."""
    for values in ({}, {"segsize": 1000}, {"segsize": 8}, {"segsize": 1},
                   {"bcast": 4, "gather": 3, "reduce": 2, "max_requests": 3, "fanout": 2},
                   {"bcast": 9, "gather": 2, "reduce": 7}):
        values = {k: v for k, v in values.items() if any(p.name == k for p in algorithm.params)}
        for nprocs in (2, 3, 7, 12, 32, 33):
            if not algorithm.supports(nprocs):
                continue
            root = nprocs // 2
            for nbytes in (1, 2, 3, 5, 6, 8, 31, 32, 64, 66, 96, 120, 1000, 1024, 1344, 4096, 3 * 33 * 64,
                           1 << 20):
                unit = algorithm.scale_unit(algorithm.resolve_params(values), nprocs, nbytes)
                if unit is None:
                    continue
                base = build(algorithm, Case(algorithm.collective, nprocs, unit, root), values).schedule
                s = build(algorithm, Case(algorithm.collective, nprocs, nbytes, root), values).schedule
                for field in ("src", "dst", "phase", "posted", "repeat"):
                    assert np.array_equal(getattr(s, field), getattr(base, field)), (nprocs, nbytes, field)
                assert np.array_equal(s.nbytes, base.nbytes * (nbytes // unit)), (nprocs, nbytes)


def test_every_open_mpi_bcast_scales_somewhere():
    """The grid's fast path covers every Open MPI bcast at power-of-two sizes and process counts."""
    for algorithm in OMPI_BCAST:
        for nprocs in (2, 64, 2048):
            for nbytes in (1 << k for k in range(1, 21)):
                assert algorithm.scale_unit(algorithm.resolve_params(), nprocs, nbytes) is not None


@pytest.mark.parametrize("model", [TauLop(two_channel_params()), LogGP(LogGPParams(1e-6, 5e-7, 6e-7, 3e-10))],
                         ids=["taulop", "loggp"])
@pytest.mark.parametrize("params", [None, {"segsize": 8192}], ids=["defaults", "segsize"])
def test_sweep_equals_case_by_case(model, params):
    platform = cluster(8, 4)
    sizes = [1, 100, 4096, 65536, 1 << 20]
    procs = [2, 5, 16, 32]
    mapping_of = lambda p: Mapping.sequential(platform, p, 4)  # noqa: E731
    fast = price_grid(OMPI_BCAST, procs, sizes, platform, mapping_of, model, params=params)
    slow = price_grid(OMPI_BCAST, procs, sizes, platform, mapping_of, model, params=params, sweep=False)
    assert np.allclose(fast.time_s, slow.time_s, rtol=1e-12)
    assert fast.time_s.shape == (9, 4, 5) and np.all(fast.time_s > 0)
    assert np.array_equal(fast.best(), slow.best())


def test_an_algorithm_open_mpi_refuses_is_never_the_fastest():
    """allgather two_proc runs on 2 ranks only: priced there, inf on any other P."""
    platform = cluster(2, 4)
    two_proc = next(a for a in algorithms(Collective.ALLGATHER) if a.name == "two_proc")
    ring = next(a for a in algorithms(Collective.ALLGATHER) if a.name == "ring")
    mapping_of = lambda p: Mapping.sequential(platform, p, 4)  # noqa: E731
    grid = price_grid([two_proc, ring], [2, 3, 8], [8, 4096], platform, mapping_of, TauLop(two_channel_params()))
    assert np.all(np.isfinite(grid.time_s[:, 0])) and np.all(np.isinf(grid.time_s[0, 1:]))
    assert np.all(np.isfinite(grid.time_s[1]))


def test_a_sweep_without_price_scaled_prices_each_size_on_one_build_scaled_fold_kept():
    """Hockney has no one-pass size sweep: the sizes of one scale unit are priced on one build, scaled
    (PlacedSchedule.scaled), which keeps the fold by a node's ranks found at the second pricing; each size
    gets what building and pricing it alone gives. A ring allgather on 160 ranks (25,440 transmissions,
    past the fold's threshold)."""
    from pathlib import Path

    from commcost.io.params_file import load_params
    from commcost.models import MODELS
    from commcost.models import PlacedSchedule
    from commcost.models.symmetry import FOLD_KEY
    from commcost.selection.grid import price_sizes

    ex = Path(__file__).resolve().parent.parent / "examples"
    model = MODELS["hockney"](load_params(ex / "params" / "illustrative.toml").for_model("hockney"))
    platform = cluster(40, 4)
    mapping = Mapping.sequential(platform, 160, 4)
    ring = next(a for a in algorithms(Collective.ALLGATHER) if a.key == "ompi.ring")
    sizes = [160 * k for k in (1, 2, 7, 64, 1000, 1 << 16)]
    fast = price_sizes(ring, {}, 160, sizes, platform, mapping, model)
    slow = price_sizes(ring, {}, 160, sizes, platform, mapping, model, sweep=False)
    assert np.allclose(fast, slow, rtol=1e-12) and np.all(np.diff(fast) > 0)
    unit = PlacedSchedule.of(build(ring, Case(Collective.ALLGATHER, 160, 160, 0), {}).schedule, platform, mapping)
    for factor in (1.0, 2.0, 3.0):  # the fold is looked for at the second pricing and carried to the next copy
        one = unit.scaled(factor)
        model.total_time_s(one)
        unit.keep_derived(one)
    assert unit.__dict__.get(FOLD_KEY) is not None
    assert model.total_time_s(unit.scaled(5.0)) == pytest.approx(model.total_time_s(PlacedSchedule.of(
        build(ring, Case(Collective.ALLGATHER, 160, 800, 0), {}).schedule, platform, mapping)), rel=1e-12)
