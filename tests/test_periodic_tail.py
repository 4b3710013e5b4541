"""The exact shortcuts of tau-Lop size sweeps (commcost.models.taulop.dependency_sweep): a prefix run apart
and the rest folded, and a long run of identical steps priced from its first steps (.periodic). Each
equals the whole event-engine run, is taken where it applies, and refused where its checks fail."""

from __future__ import annotations

import numpy as np
import pytest

import commcost.models.taulop.dependency_sweep as engine
from commcost.collectives import Case, Collective, build, find
from commcost.io.params_file import load_params
from commcost.models import PlacedSchedule
from commcost.models.reduction import ReductionLaw
from commcost.models.taulop.model import TauLop
from commcost.models.symmetry import rank_shift_fold, repeat_fold
from commcost.models.taulop.periodic import periodic_blocks
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform

from test_collectives_priced import EX

PARAMS = load_params(EX / "params" / "illustrative.toml").for_model("taulop")


def cluster(nnodes: int, ppn: int) -> Platform:
    kind = NodeType("a", ppn)
    return Platform("c", (kind,), tuple(Node(f"n{i}", kind) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                     Channel("ib", 1, "world", ("ib",), ContentionScope.NODE)))


@pytest.fixture
def small_tails(monkeypatch):
    """Take the shortcuts in small schedules too (the defaults wait for 20,000 transmissions), and record
    how many transmissions each event-loop run has."""
    monkeypatch.setattr(engine, "PERIODIC_FROM", 0)
    monkeypatch.setattr(engine, "PERIODIC_TRIES", (20, 40))
    ran = []
    real = engine.run_prepared

    def counting(prep, nbytes, service, trace, release=None, *args, **kwargs):
        ran.append(len(nbytes))
        return real(prep, nbytes, service, trace, release, *args, **kwargs)

    monkeypatch.setattr(engine, "run_prepared", counting)
    return ran


def holds_of(model: TauLop, placed: PlacedSchedule) -> "engine.Holds":
    """The receivers' holds a size sweep of ``placed`` works with."""
    from commcost.models.taulop.floor import law_floor

    bounds = np.array([law_floor(law) if law is not None else (0.0, 0.0) for law in model.laws_for(placed)])
    return engine.Holds(model._hold_law(placed.platform), placed.channel, placed.schedule.nbytes,
                        (bounds[:, 0], bounds[:, 1]))


def no_shortcuts() -> TauLop:
    return TauLop(PARAMS, fold=False, shortcuts=False)


def placed_of(collective: Collective, name: str, nprocs: int, nbytes: int, ppn: int,
              mapping: str = "sequential") -> PlacedSchedule:
    platform = cluster(-(-nprocs // ppn) + 1, ppn)
    placement = (Mapping.round_robin(platform, nprocs) if mapping == "round-robin"
                 else Mapping.sequential(platform, nprocs, ppn))
    return PlacedSchedule.of(build(find(collective, name), Case(collective, nprocs, nbytes)).schedule,
                             platform, placement)


FACTORS = np.array([1.0, 3.0, 64.0, 1000.0])
CASES = [  # collective, algorithm, P, ranks per node, mapping, does some size take a shortcut
    (Collective.BCAST, "scatter_allgather_ring", 128, 8, "sequential", True),  # scatter apart, ring folded
    (Collective.BCAST, "scatter_allgather_ring", 150, 4, "sequential", True),  # partial node: no fold
    (Collective.BCAST, "scatter_allgather_ring", 128, 32, "round-robin", False),  # never settles
    (Collective.ALLGATHER, "ring", 150, 8, "sequential", True),
    (Collective.ALLGATHER, "ring", 130, 4, "round-robin", True),
    (Collective.REDUCE_SCATTER, "ring", 140, 8, "sequential", True),
]


@pytest.mark.parametrize("collective,name,nprocs,ppn,mapping,shortcut", CASES,
                         ids=lambda x: getattr(x, "value", x))
def test_the_shortcuts_give_the_whole_run(small_tails, collective, name, nprocs, ppn, mapping, shortcut):
    placed = placed_of(collective, name, nprocs, nprocs, ppn, mapping)
    whole_n = placed.schedule.ntransmissions
    fast = TauLop(PARAMS).price_scaled(placed, FACTORS)
    fast_runs = list(small_tails)
    small_tails.clear()
    whole = no_shortcuts()
    slow = whole.price_scaled(placed, FACTORS)
    assert small_tails == [whole_n] * len(FACTORS)  # the reference ran in full
    np.testing.assert_allclose(fast, slow, rtol=1e-10)
    for f, t in zip(FACTORS, fast):  # and each equals pricing that size on its own
        assert t == pytest.approx(whole.total_time_s(PlacedSchedule.of(placed.schedule.scaled(f), placed.platform,
                                                                        placed.mapping)), rel=1e-10)
    if shortcut:  # some sizes never ran the whole schedule, and some ran only its first steps
        assert fast_runs.count(whole_n) < len(FACTORS) and min(fast_runs) <= 41 * nprocs
    else:  # every check refused: each size ran in full after its attempts
        assert fast_runs.count(whole_n) == len(FACTORS)


def test_reductions_extrapolate_too(small_tails):
    """A ring allreduce with the receivers' reduction times: each step's reductions are the same."""
    law = ReductionLaw("sum_double", np.array([0.0, 1024.0]), np.array([1e-6, 1e-4]))
    placed = placed_of(Collective.ALLREDUCE, "ring", 140, 140 * 64, 8)
    periodic = TauLop(PARAMS, fold=False).with_reduction(law)
    whole = no_shortcuts().with_reduction(law)
    np.testing.assert_allclose(periodic.price_scaled(placed, FACTORS), whole.price_scaled(placed, FACTORS),
                               rtol=1e-10)
    assert any(n < placed.schedule.ntransmissions for n in small_tails)


def test_the_blocks_are_found_on_the_data():
    """A ring's steps are the blocks, from its second (the first waits for the scatter, not for a ring
    step); the prefix run apart is the scatter; a last step that differs (here: one size changed) leaves
    no run of identical blocks reaching the end; a forward wait refuses."""
    placed = placed_of(Collective.BCAST, "scatter_allgather_ring", 100, 100 * 8, 4)
    s = placed.schedule
    arrays = (placed.domain, s.nbytes, s.src, s.dst)
    blocks = periodic_blocks(s.phase, arrays, s.after_ptr, s.after_idx, min_blocks=10)
    assert blocks is not None and blocks.size == 100 and blocks.count == 98
    assert blocks.first == s.ntransmissions - 98 * 100 == 99 + 100  # the binomial scatter: P - 1 transmissions
    assert engine._prefix_end(s.phase, blocks) == 99
    nbytes = s.nbytes.copy()
    nbytes[-1] += 1
    fewer = periodic_blocks(s.phase, (placed.domain, nbytes, s.src, s.dst), s.after_ptr, s.after_idx, min_blocks=10)
    assert fewer is None  # only the last block differs: no run of identical blocks reaches the end
    assert periodic_blocks(s.phase, arrays, s.after_ptr, s.after_idx, min_blocks=100) is None
    forward = s.after_idx.copy()
    forward[-1] = s.ntransmissions - 1  # the last transmission waits for itself
    assert periodic_blocks(s.phase, arrays, s.after_ptr, forward, min_blocks=10) is None


@pytest.mark.parametrize("nbytes", [150 * 64 + 7, 150 * 64 - 100])
def test_unequal_blocks_are_not_identical_steps(small_tails, nbytes):
    """With blocks of unequal sizes (n not a multiple of P) the short block moves along the ring step by
    step: no two steps are the same, so the whole schedule runs."""
    placed = placed_of(Collective.BCAST, "scatter_allgather_ring", 150, nbytes, 4)
    s = placed.schedule
    assert periodic_blocks(s.phase, (placed.domain, s.nbytes, s.src, s.dst), s.after_ptr, s.after_idx) is None
    assert np.array_equal(TauLop(PARAMS).price_scaled(placed, FACTORS), no_shortcuts().price_scaled(placed, FACTORS))
    assert all(n == s.ntransmissions for n in small_tails)


def test_a_run_that_never_settles_is_run_in_full(small_tails, monkeypatch):
    """When no step's state repeats the one before (here: the checks see every time off by a shift), the
    whole schedule runs, and the price is the engine's."""
    import commcost.models.taulop.periodic as periodic_module
    monkeypatch.setattr(periodic_module, "TIME_RTOL", -1.0)  # no two times are ever equal
    placed = placed_of(Collective.ALLGATHER, "ring", 150, 150 * 16, 8)
    periodic = TauLop(PARAMS, fold=False)
    assert np.array_equal(periodic.price_scaled(placed, FACTORS), no_shortcuts().price_scaled(placed, FACTORS))
    assert small_tails.count(placed.schedule.ntransmissions) == 2 * len(FACTORS)  # each size ran in full, twice


def test_the_scatter_runs_apart_only_when_it_ends_before_the_ring_starts():
    """On 128 ranks the binomial scatter's last step ends at one time on every rank and every first ring
    step starts then: the scatter runs alone, the ring after it, folded to one node's share. On 96 ranks
    the scatter's subtrees differ and some ring steps start while it still runs: the split is refused."""
    whole = no_shortcuts()
    for nprocs, apart in ((128, True), (96, False)):
        placed = placed_of(Collective.BCAST, "scatter_allgather_ring", nprocs, nprocs, 8)
        s = placed.schedule
        prep = engine.prepare(placed.domain, placed.channel, s.src, s.dst, s.nprocs, s.after_ptr, s.after_idx,
                              whole.laws_for(placed))
        blocks = periodic_blocks(s.phase, (prep.dom, s.nbytes, prep.src, prep.dst), prep.after_ptr, prep.after_idx)
        rest = engine._rest_after(prep, engine._prefix_end(s.phase, blocks), s.phase, 8, receivers=True,
                                  nbytes=s.nbytes)
        assert rest.first == nprocs - 1 and rest.fold is not None  # the scatter; the ring folds by a node
        holds = holds_of(whole, placed)
        for factor in FACTORS:
            total = engine._rest_last_end(prep, rest, s.nbytes * factor, None, holds, float(factor))
            assert (total is not None) == apart
            if apart:
                reference = whole.total_time_s(PlacedSchedule.of(s.scaled(factor), placed.platform, placed.mapping))
                assert total == pytest.approx(reference, rel=1e-10)


@pytest.mark.parametrize("collective,name", [(Collective.BCAST, "scatter_allgather_ring"),
                                             (Collective.ALLGATHER, "ring"), (Collective.ALLREDUCE, "ring")],
                         ids=lambda x: getattr(x, "value", x))
def test_the_fold_of_two_blocks_repeated_is_the_fold_of_the_whole(collective, name):
    """repeat_fold (the first two blocks folded, then repeated) gives the fold rank_shift_fold finds on the
    whole rest, array for array; and refuses when the second block does not fold like the first."""
    placed = placed_of(collective, name, 128, 128 * 8, 8)
    s = placed.schedule
    prep = engine.prepare(placed.domain, placed.channel, s.src, s.dst, s.nprocs, s.after_ptr, s.after_idx,
                          TauLop(PARAMS).laws_for(placed))
    blocks = periodic_blocks(s.phase, (prep.dom, prep.src, prep.dst), prep.after_ptr, prep.after_idx, min_blocks=10)
    split = engine._prefix_end(s.phase, blocks)
    rest = engine._rest_after(prep, split, s.phase, 8, receivers=False, nbytes=s.nbytes)
    assert rest.fold is not None and rest.folded_blocks.count == rest.blocks.count
    r = rest.prep
    whole = rank_shift_fold(r.src, r.dst, s.phase[split:], np.zeros(len(r.src)), r.chan_of_dom[r.dom], r.dom,
                            r.after_ptr, r.after_idx, r.nprocs, 8, receivers=False, min_transmissions=0)
    assert whole is not None
    for field in whole._fields:
        assert np.array_equal(getattr(rest.fold, field), getattr(whole, field)), field
    b = rest.blocks
    small = rank_shift_fold(r.src[:b.first + 2 * b.size], r.dst[:b.first + 2 * b.size],
                            s.phase[split:split + b.first + 2 * b.size], np.zeros(b.first + 2 * b.size),
                            r.chan_of_dom[r.dom[:b.first + 2 * b.size]], r.dom[:b.first + 2 * b.size],
                            r.after_ptr[:b.first + 2 * b.size + 1], r.after_idx[:r.after_ptr[b.first + 2 * b.size]],
                            r.nprocs, 8, receivers=False, min_transmissions=0)
    broken = small._replace(rep=small.rep.copy())
    broken.rep[-1] = broken.rep[b.first]  # the last transmission stands for another one than its block-0 twin
    assert repeat_fold(small, b.first, b.size, b.count) is not None
    assert repeat_fold(broken, b.first, b.size, b.count) is None
