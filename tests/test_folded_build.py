"""A schedule built folded by one node's ranks (commcost.collectives.rank_shift, build_folded,
PlacedSchedule.of_folded) prices as the whole one under the models without contention, every rank's
figure included; where the schedule or its placement is not invariant under the shift, nothing is folded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build, build_folded, find
from commcost.collectives.rank_shift import shift_invariant
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.models.symmetry import fold_shift
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
from commcost.selection.folded_place import FOLD_BUILD_FROM, placed_folded
from commcost.selection.grid import price_sizes

EX = Path(__file__).resolve().parent.parent / "examples"
PLATFORM = load_platform(EX / "cluster" / "platform.toml")[0]
PARAMS = load_params(EX / "params" / "illustrative.toml")
FOLDING = ("hockney", "loggp", "loggph", "taulop")
RINGS = {("allreduce", "ompi.ring"), ("allreduce", "ompi.segmented_ring"), ("allgather", "ompi.ring"),
         ("reduce_scatter", "ompi.ring")}


def _values(algorithm, segsize):
    names = {p.name for p in algorithm.params}
    return algorithm.resolve_params({"segsize": segsize} if "segsize" in names else {})


@pytest.mark.parametrize("nprocs", [16, 24])
@pytest.mark.parametrize("ppn", [4, 1])
def test_every_algorithm_folded_prices_as_the_whole_or_is_not_folded(nprocs, ppn):
    """Every registered algorithm at 16 and 24 ranks (4 per node, shifted by a node; 1 per node, shifted by
    two: fold_shift), sizes that divide into P blocks and sizes that do not, segments or not: where it
    folds, the last rank's end, the mean and the least over ranks under Hockney, LogGP, LogGPH and tau-Lop
    equal the whole schedule's to 1e-12; the rings fold wherever their blocks are equal."""
    mapping = Mapping.sequential(PLATFORM, nprocs, ppn)
    shift = fold_shift(mapping.node_of_rank)
    models = {m: MODELS[m](PARAMS.for_model(m)) for m in FOLDING}
    folded_rings = set()
    for algorithm in algorithms():
        if not algorithm.supports(nprocs) or any(p.name == "ppn" for p in algorithm.params):
            continue
        for nbytes in (nprocs * 64, nprocs * 1000, nprocs * 1000 + 7):
            for segsize in (0, 256):
                values = _values(algorithm, segsize)
                case = Case(algorithm.collective, nprocs, nbytes, 0)
                got = build_folded(algorithm, case, shift, values)
                if got is None:
                    continue
                placed = PlacedSchedule.of_folded(got[0].schedule, got[1], nprocs, PLATFORM, mapping, True)
                assert placed is not None  # identical nodes, sequential, node-wide domains: invariant
                assert placed.schedule.nprocs == shift
                whole = PlacedSchedule.of(build(algorithm, case, values).schedule, PLATFORM, mapping)
                assert placed.schedule.ntransmissions * (nprocs // shift) == whole.schedule.ntransmissions
                for name, model in models.items():
                    for statistic in ("max", "mean", "min"):
                        assert model.statistic_s(placed, statistic) == pytest.approx(
                            model.statistic_s(whole, statistic), rel=1e-12), (algorithm.key, nbytes, name)
                if nbytes % nprocs == 0:
                    folded_rings.add((algorithm.collective.value, algorithm.key))
    assert RINGS <= folded_rings


def test_unequal_ring_blocks_and_asymmetric_batches_are_not_folded():
    """A ring allreduce of 1,000 + 7 bytes per rank has blocks one byte apart: no fold. A binomial tree's
    first batch (the root alone) is no invariant batch either."""
    ring = find(Collective.ALLREDUCE, "ompi.ring")
    assert build_folded(ring, Case(Collective.ALLREDUCE, 16, 16 * 1000 + 7, 0), 4) is None
    assert build_folded(ring, Case(Collective.ALLREDUCE, 16, 16 * 1000, 0), 4) is not None
    assert build_folded(find(Collective.BCAST, "ompi.binomial"), Case(Collective.BCAST, 16, 4096, 0), 4) is None
    assert build_folded(ring, Case(Collective.ALLREDUCE, 18, 18 * 1000, 0), 4) is None  # 4 does not divide 18
    src = np.arange(8)
    assert shift_invariant(src, (src + 1) % 8, np.ones(8), np.zeros(8, bool), np.zeros(8, np.int64), 8, 4)
    assert not shift_invariant(src, (src + 4) % 8, np.ones(8), np.zeros(8, bool), np.zeros(8, np.int64), 8, 4)
    sizes = np.ones(8)
    sizes[5] = 2
    assert not shift_invariant(src, (src + 1) % 8, sizes, np.zeros(8, bool), np.zeros(8, np.int64), 8, 4)


def test_a_placement_the_shift_does_not_preserve_is_not_folded():
    """Nodes of two types in turn: a ring's share of one node is no fold of the whole (None)."""
    a, b = NodeType("a", 4), NodeType("b", 4)
    platform = Platform("mixed", (a, b), tuple(Node(f"n{i}", a if i % 2 else b) for i in range(8)),
                        (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                         Channel("ib", 1, "world", ("ib",), ContentionScope.NODE)))
    ring = find(Collective.ALLREDUCE, "ompi.ring")
    got = build_folded(ring, Case(Collective.ALLREDUCE, 32, 32 * 64, 0), 4)
    assert got is not None
    assert PlacedSchedule.of_folded(got[0].schedule, got[1], 32, platform, Mapping.sequential(platform, 32, 4)) \
        is None
    uniform = Platform("one", (a,), tuple(Node(f"n{i}", a) for i in range(8)), platform.channels)
    assert PlacedSchedule.of_folded(got[0].schedule, got[1], 32, uniform, Mapping.sequential(uniform, 32, 4)) \
        is not None


@pytest.mark.parametrize("model_name", ["hockney", "taulop"])
def test_select_prices_a_large_ring_folded_as_built_whole(model_name):
    """price_sizes builds a ring on 128 ranks folded (a 32nd of its transmissions) and prices every size as
    the whole schedule (tau-Lop: its one-pass size sweep on the fold; the example's channels contend per
    node, so each node's port holds one node's transmissions only)."""
    nprocs = FOLD_BUILD_FROM
    mapping = Mapping.sequential(PLATFORM, nprocs, 4)
    model = MODELS[model_name](PARAMS.for_model(model_name))
    for key, segsize in (("ompi.ring", 0), ("ompi.segmented_ring", 1024)):
        algorithm = find(Collective.ALLREDUCE, key)
        values = _values(algorithm, segsize)
        sizes = [nprocs * 4096, nprocs * 65536]
        case = Case(Collective.ALLREDUCE, nprocs, sizes[0], 0)
        assert placed_folded(algorithm, case, values, PLATFORM, mapping, model).schedule.nprocs == 4
        got = price_sizes(algorithm, values, nprocs, sizes, PLATFORM, mapping, model)
        for price, nbytes in zip(got, sizes):
            whole = build(algorithm, Case(Collective.ALLREDUCE, nprocs, nbytes, 0), values).schedule
            assert price == pytest.approx(model.total_time_s(PlacedSchedule.of(whole, PLATFORM, mapping)), rel=1e-12)


def test_a_contention_domain_the_shift_does_not_keep_apart_is_no_fold_for_tau_lop():
    """A network contended as a whole channel (every node's transmissions in one domain): no fold where
    domains count (tau-Lop), a fold where they do not (Hockney). Contended at the receiving node, a ring
    folds (each node's port takes what one other node sends) and tau-Lop prices it as the whole."""
    kind = NodeType("a", 4)
    ring = find(Collective.ALLREDUCE, "ompi.ring")
    got = build_folded(ring, Case(Collective.ALLREDUCE, 32, 32 * 4096, 0), 4)
    taulop = MODELS["taulop"](PARAMS.for_model("taulop"))
    for scope in (ContentionScope.CHANNEL, ContentionScope.RECEIVER_NODE):
        platform = Platform("p", (kind,), tuple(Node(f"n{i}", kind) for i in range(8)),
                            (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                             Channel("ib", 1, "world", ("ib",), scope)))
        mapping = Mapping.sequential(platform, 32, 4)
        folded = PlacedSchedule.of_folded(got[0].schedule, got[1], 32, platform, mapping, domains=True)
        assert PlacedSchedule.of_folded(got[0].schedule, got[1], 32, platform, mapping) is not None
        if scope is ContentionScope.CHANNEL:
            assert folded is None
            continue
        whole = PlacedSchedule.of(build(ring, Case(Collective.ALLREDUCE, 32, 32 * 4096, 0)).schedule, platform,
                                  mapping)
        for statistic in ("max", "mean"):
            assert taulop.statistic_s(folded, statistic) == pytest.approx(taulop.statistic_s(whole, statistic),
                                                                          rel=1e-12)


def test_the_fit_holds_ring_points_folded_and_prices_them_as_whole():
    """collective_points(fold=True), as `commcost fit --model hockney|loggp|loggph` calls it: OSU-style rows
    (4-byte floats) of the ring allreduce and allgather on 64 ranks of 4 per node are held folded (a 16th of
    their transmissions) and priced as the whole schedules, for the rows' mean over ranks."""
    from commcost.calibration.fit_from_collectives import collective_points
    from commcost.io.measurements import Measurement

    rows = [Measurement(f"osu_{c}", 64, n, 1e-4, collective=c, algorithm="ring", ppn=4)
            for c in ("allreduce", "allgather") for n in (64 * 256, 64 * 4096)]
    whole_points, whole, _ = collective_points(rows, PLATFORM)
    points, folded, _ = collective_points(rows, PLATFORM, fold=True)
    assert points == whole_points
    assert all(f.schedule.nprocs == 4 and 16 * f.schedule.ntransmissions == w.schedule.ntransmissions
               for f, w in zip(folded, whole))
    for name in FOLDING:
        model = MODELS[name](PARAMS.for_model(name))
        for f, w in zip(folded, whole):
            assert model.statistic_s(f, "mean") == pytest.approx(model.statistic_s(w, "mean"), rel=1e-12)
