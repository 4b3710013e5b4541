"""Folding by a shift of ranks (commcost.models.symmetry): the folded tau-Lop run gives every
transmission exactly the times of the whole run, and the fold is refused wherever the shift is not a
symmetry of the placed schedule."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.io.params_file import load_params
from commcost.models import PlacedSchedule
from commcost.models.reduction import ReductionLaw
from commcost.models.taulop.model import TauLop
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform

from test_collectives_priced import EX

PARAMS = load_params(EX / "params" / "illustrative.toml").for_model("taulop")


def cluster(nnodes: int, ppn: int, scope: ContentionScope = ContentionScope.NODE,
            kinds: tuple[str, ...] = ("a",)) -> Platform:
    types = tuple(NodeType(k, ppn) for k in kinds)
    nodes = tuple(Node(f"n{i}", types[i % len(types)]) for i in range(nnodes))
    return Platform("c", types, nodes, (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                                        Channel("ib", 1, "world", ("ib",), scope)))


def models() -> tuple[TauLop, TauLop]:
    folded, whole = TauLop(PARAMS), TauLop(PARAMS, fold=False)
    folded.fold_from = 0
    return folded, whole


def fold_of(placed: PlacedSchedule):
    """The fold tau-Lop uses, at any size."""
    return models()[0]._fold(placed)


RINGS = [(Collective.ALLGATHER, "ring"), (Collective.REDUCE_SCATTER, "ring"), (Collective.ALLREDUCE, "ring"),
         (Collective.ALLREDUCE, "segmented_ring"), (Collective.ALLTOALL, "pairwise"), (Collective.ALLTOALL, "linear")]


@pytest.mark.parametrize("collective,name", RINGS, ids=lambda x: getattr(x, "value", x))
@pytest.mark.parametrize("scope", [ContentionScope.NODE, ContentionScope.RECEIVER_NODE, ContentionScope.CHANNEL])
def test_a_folded_ring_is_priced_exactly_like_the_whole_ring(collective, name, scope):
    ppn, nnodes = 4, 6
    platform = cluster(nnodes, ppn, scope)
    folded, whole = models()
    for nprocs in (8, 24):
        placed = PlacedSchedule.of(build(find(collective, name), Case(collective, nprocs, 40 * nprocs)).schedule,
                                   platform, Mapping.sequential(platform, nprocs, ppn))
        fold = fold_of(placed)
        if scope is ContentionScope.CHANNEL or (collective is Collective.ALLTOALL and nprocs > ppn):
            # one ib domain for all nodes: no node's share stands alone; an alltoall sends from rank r to
            # r + ppn, which the shift would fold onto one rank that receives what it sends (receptions queue
            # at their receivers: refused)
            assert fold is None
        else:
            assert fold is not None and len(fold.keep) * (nprocs // ppn) == placed.schedule.ntransmissions
        assert np.array_equal(folded.end_times(placed), whole.end_times(placed))
        factors = np.array([1.0, 7.0, 4096.0])
        assert np.array_equal(folded.price_scaled(placed, factors), whole.price_scaled(placed, factors))
        a, b = folded.price(placed), whole.price(placed)
        assert a.time_s == b.time_s and np.array_equal(a.rank_time_s, b.rank_time_s)


def test_reductions_fold_too():
    """With reduction costs each folded rank reduces what the rank it stands for receives."""
    platform = cluster(4, 4)
    folded, whole = models()
    law = ReductionLaw("sum_double", np.array([0.0, 1024.0]), np.array([1e-6, 1e-4]))
    folded, whole = folded.with_reduction(law), whole.with_reduction(law)
    for name in ("ring", "segmented_ring"):
        placed = PlacedSchedule.of(build(find(Collective.ALLREDUCE, name), Case(Collective.ALLREDUCE, 16, 16 * 96))
                                   .schedule, platform, Mapping.sequential(platform, 16, 4))
        assert fold_of(placed) is not None
        assert np.array_equal(folded.end_times(placed), whole.end_times(placed))
        assert folded.price(placed).time_s > TauLop(PARAMS).price(placed).time_s
    # rank r receiving what r + 4 sends it would fold onto one rank: refused (receptions queue)
    placed = PlacedSchedule.of(build(find(Collective.ALLTOALL, "pairwise"), Case(Collective.ALLTOALL, 16, 96))
                               .schedule, platform, Mapping.sequential(platform, 16, 4))
    assert fold_of(placed) is None


@pytest.mark.parametrize("what", ["round-robin", "partial node", "two node types", "unequal blocks",
                                  "scatter first", "recursive doubling"])
def test_the_fold_is_refused_where_the_shift_is_no_symmetry(what):
    ppn = 4
    platform = cluster(6, ppn, kinds=("a", "b") if what == "two node types" else ("a",))
    collective, name, nprocs, nbytes = Collective.ALLGATHER, "ring", 16, 40
    if what == "partial node":
        nprocs = 14
    if what == "unequal blocks":
        collective, nbytes = Collective.ALLREDUCE, 16 * 40 + 5
    if what == "scatter first":
        collective, name, nbytes = Collective.BCAST, "scatter_allgather_ring", 16 * 40
    if what == "recursive doubling":
        name = "recursive_doubling"
    mapping = (Mapping.round_robin(platform, nprocs) if what == "round-robin"
               else Mapping.sequential(platform, nprocs, ppn))
    placed = PlacedSchedule.of(build(find(collective, name), Case(collective, nprocs, nbytes)).schedule,
                               platform, mapping)
    folded, whole = models()
    if what != "two node types":  # node types do not enter the placed schedule: channels and domains do
        assert fold_of(placed) is None
    assert np.array_equal(folded.end_times(placed), whole.end_times(placed))
