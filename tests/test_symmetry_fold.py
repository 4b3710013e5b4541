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


# --- the point-to-point models' timelines (Hockney, LogGP, LogGPH, HLogGP), folded the same way -----------------

def _p2p_models():
    from commcost.io.platform_file import load_platform
    from commcost.models import MODELS
    from commcost.models.hockney import Hockney, HockneyParams

    params = load_params(EX / "params" / "illustrative.toml")
    out = {name: MODELS[name](params.for_model(name)).with_reduction(params.reduction())
           for name in ("hockney", "loggp", "loggph", "hloggp")}
    shares = {"alpha_s": 1.0e-6, "beta_s_per_byte": 0.2e-9, "send_alpha_s": 0.4e-6, "send_beta_s_per_byte": 0.1e-9,
              "recv_alpha_s": 0.3e-6, "recv_beta_s_per_byte": 0.15e-9, "eager_limit_bytes": 4096,
              "rendezvous_alpha_s": 3.0e-6, "rendezvous_beta_s_per_byte": 0.1e-9,
              "rendezvous_send_alpha_s": 0.5e-6, "rendezvous_send_beta_s_per_byte": 0.02e-9,
              "rendezvous_recv_alpha_s": 0.8e-6, "rendezvous_recv_beta_s_per_byte": 0.09e-9}
    network = {k: 3 * v if k.endswith("_s") else v for k, v in shares.items()}  # (per-byte values kept)
    out["hockney-protocol"] = Hockney(HockneyParams.from_dict({"shm": {**shares, "backpressure_from_bytes": 0},
                                                               "ib": network})).with_reduction(params.reduction())
    return load_platform(EX / "cluster" / "platform.toml")[0], out


P2P_CASES = [("allreduce", "ring", 64, 4, 4096), ("allreduce", "segmented_ring", 64, 8, 1 << 20),
             ("allgather", "ring", 128, 16, 65536), ("reduce_scatter", "ring", 64, 8, 1 << 20),
             ("allgather", "neighbor", 64, 4, 8192), ("allgather", "han", 64, 8, 1 << 20)]


@pytest.mark.parametrize("collective,algorithm,nprocs,ppn,nbytes", P2P_CASES)
def test_a_folded_point_to_point_timeline_gives_every_transmission_the_whole_runs_times(collective, algorithm,
                                                                                           nprocs, ppn, nbytes):
    """The fold by one node's ranks (``symmetry.placed_fold``) under Hockney (classic, and with eager and
    rendezvous shares and backpressure), LogGP, LogGPH and HLogGP: every transmission's send completion and
    end equal the whole run's, to the last bit."""
    from commcost.models.symmetry import FOLD_KEY, placed_fold

    platform, models = _p2p_models()
    kind = Collective(collective)
    schedule = build(find(kind, algorithm), Case(kind, nprocs, nbytes)).schedule
    mapping = Mapping.sequential(platform, nprocs, ppn)
    whole = PlacedSchedule.of(schedule, platform, mapping)
    whole.__dict__[FOLD_KEY] = None
    folded = PlacedSchedule.of(schedule, platform, mapping)
    placed_fold(folded)  # the first pricing: no search
    fold = placed_fold(folded, min_transmissions=1)
    assert fold is not None and len(fold.fold.keep) * (nprocs // ppn) == schedule.ntransmissions
    for name, model in models.items():
        for a, b in zip(model.completions(whole), model.completions(folded)):
            assert np.array_equal(a, b), name


def test_the_fold_is_looked_for_at_the_second_pricing_only():
    """One pricing (a select) runs whole: the search would cost more than it saves; a fit's repeated
    pricings of the same placed schedule fold from the second on."""
    from commcost.models.symmetry import FOLD_KEY, placed_fold

    platform, _ = _p2p_models()
    kind = Collective.ALLGATHER
    schedule = build(find(kind, "ring"), Case(kind, 64, 4096)).schedule
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 64, 4))
    assert placed_fold(placed, min_transmissions=1) is None and FOLD_KEY not in placed.__dict__
    assert placed_fold(placed, min_transmissions=1) is not None and placed.__dict__[FOLD_KEY] is not None
