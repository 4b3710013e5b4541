"""Open MPI 5's coll/han reduce, allreduce, gather, scatter and allgather as schedules (issue 12 item 1):
the data-flow checker on many layouts, hand-worked transmissions and waits read from han's tasks, libnbc's
ireduce choice, the fallbacks, and a Hockney price worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from collective_helpers import edges_of, waited_by
from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check
from commcost.collectives.ompi_han import default_name, tuned_fixed
from commcost.collectives.ompi_han_reduce import libnbc_ireduce

COLLECTIVES = (Collective.REDUCE, Collective.ALLREDUCE, Collective.GATHER, Collective.SCATTER, Collective.ALLGATHER)
HAN = {c: find(c, "ompi.han") for c in COLLECTIVES}
SIMPLE = {c: find(c, "ompi.han_simple") for c in COLLECTIVES}


@pytest.mark.parametrize("collective", COLLECTIVES, ids=lambda c: c.value)
@pytest.mark.parametrize("nprocs,ppn", [(4, 2), (6, 2), (6, 3), (8, 4), (12, 3), (12, 4), (16, 4), (24, 8),
                                        (10, 2), (7, 2), (9, 3), (5, 5), (8, 1)])
def test_data_flow_checker_passes_both_versions_every_root_and_several_segments(collective, nprocs, ppn):
    for algorithm in (HAN[collective], SIMPLE[collective]):
        segmented = any(p.name == "segsize" for p in algorithm.params)
        for root in sorted({0, nprocs // 2, nprocs - 1}) if collective.rooted else [0]:
            for nbytes, segsize in ((1, 65536), (70_000, 65536), (7, 2), (1000, 300)):
                params = {"ppn": ppn, **({"segsize": segsize} if segmented else {})}
                check(build(algorithm, Case(collective, nprocs, nbytes, root), params, data=True))


def test_reduce_three_segments_on_two_nodes_of_two_by_hand():
    """P = 4 on 2 nodes of 2, root 0, 3 one-byte segments: leaders 0 and 2. From mca_coll_han_reduce_intra:
    t0 is low(0); then per segment s a leader posts ireduce(s), runs low(s + 1) and waits for the ireduce.
    So ireduce(s) at leader 2 waits for its low(s) and ireduce(s - 1); low(s + 1) at rank 1 or 3 for its
    low(s). libnbc's ireduce on 2 ranks of 1 byte is the binomial tree: one message 2 -> 0."""
    cs = build(HAN[Collective.REDUCE], Case(Collective.REDUCE, 4, 3), {"ppn": 2, "segsize": 1}, data=True)
    assert edges_of(cs) == [(1, 0, 1.0), (3, 2, 1.0),  # 0, 1: low 0
                          (2, 0, 1.0), (1, 0, 1.0), (3, 2, 1.0),  # 2: up 0; 3, 4: low 1
                          (2, 0, 1.0), (1, 0, 1.0), (3, 2, 1.0),  # 5: up 1; 6, 7: low 2
                          (2, 0, 1.0)]  # 8: up 2
    assert list(cs.payload) == [((0, 1),)] * 3 + [((1, 2),)] * 3 + [((2, 3),)] * 3
    assert waited_by(cs) == {0: set(), 1: set(), 2: {1}, 3: {0}, 4: {1}, 5: {2, 4}, 6: {3}, 7: {4}, 8: {5, 7}}


def test_allreduce_two_segments_on_two_nodes_of_two_by_hand():
    """P = 4 on 2 nodes of 2, 2 one-byte segments: local rank 0 leads, node 0's leader is the up root.
    Tasks of mca_coll_han_allreduce_intra: t0 lr(0); t1 ur(0) posted, lr(1), wait; t2 ub(0) and ur(1)
    posted, wait; t3(0) ub(1) posted, lb(0), wait; t3(1) lb(1). Leader 0 posts ub(0) only after lr(0), lr(1)
    and ur(0) are done (it received in all three and sent in none)."""
    cs = build(HAN[Collective.ALLREDUCE], Case(Collective.ALLREDUCE, 4, 2), {"ppn": 2, "segsize": 1}, data=True)
    assert edges_of(cs) == [(1, 0, 1.0), (3, 2, 1.0),  # 0, 1: lr 0
                          (2, 0, 1.0), (1, 0, 1.0), (3, 2, 1.0),  # 2: ur 0; 3, 4: lr 1
                          (0, 2, 1.0), (2, 0, 1.0),  # 5: ub 0; 6: ur 1
                          (0, 2, 1.0), (0, 1, 1.0), (2, 3, 1.0),  # 7: ub 1; 8, 9: lb 0
                          (0, 1, 1.0), (2, 3, 1.0)]  # 10, 11: lb 1
    assert cs.combine.tolist() == [True] * 5 + [False, True] + [False] * 5
    assert waited_by(cs) == {0: set(), 1: set(), 2: {1}, 3: {0}, 4: {1}, 5: {0, 2, 3}, 6: {2, 4},
                          7: {5, 6}, 8: {5, 6}, 9: {5, 6}, 10: {7, 8}, 11: {7, 9}}


def test_allreduce_by_hand_under_hockney():
    """The schedule above with every transmission c = alpha + beta seconds (one channel; Hockney has no
    contention, but a rank sends one message and receives one message at a time): lr0 is in at c; ur0 and
    lr1 both leave at c for rank 0, which takes them at 2c and 3c; ur1 leaves at 2c and is taken at 4c. Rank 0
    sends ub0 at 3c (after lr1), ub1 at 4c (after ur1), lb0 at 5c, and lb1 after both at 6c: in at 7c."""
    from commcost.models import PlacedSchedule
    from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
    from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform

    kind = NodeType("n1", 1)
    platform = Platform("flat", (kind,), tuple(Node(f"n{i}", kind) for i in range(4)),
                        (Channel("net", 1, "world", ("net",), ContentionScope.NODE),))
    model = Hockney(HockneyParams({"net": HockneyChannel(1e-6, 1e-9)}))
    cs = build(HAN[Collective.ALLREDUCE], Case(Collective.ALLREDUCE, 4, 2), {"ppn": 2, "segsize": 1})
    placed = PlacedSchedule.of(cs.schedule, platform, Mapping.sequential(platform, 4, 1))
    assert model.total_time_s(placed) == pytest.approx(7 * (1e-6 + 1e-9))


def test_gather_scatter_allgather_on_two_nodes_of_two_by_hand():
    n = 5
    gather = build(HAN[Collective.GATHER], Case(Collective.GATHER, 4, n, root=3), {"ppn": 2}, data=True)
    # leaders: local rank 1 (the root's); low gathers to 1 and 3, then 1 -> 3 with node 0's two blocks
    assert edges_of(gather) == [(0, 1, 5.0), (2, 3, 5.0), (1, 3, 10.0)]
    assert list(gather.payload) == [((0, 5),), ((10, 15),), ((0, 10),)]
    assert waited_by(gather) == {0: set(), 1: set(), 2: {0}}
    scatter = build(HAN[Collective.SCATTER], Case(Collective.SCATTER, 4, n), {"ppn": 2}, data=True)
    assert edges_of(scatter) == [(0, 2, 10.0), (0, 1, 5.0), (2, 3, 5.0)]
    assert list(scatter.payload) == [((10, 20),), ((5, 10),), ((15, 20),)]
    assert waited_by(scatter) == {0: set(), 1: {0}, 2: {0}}
    allgather = build(HAN[Collective.ALLGATHER], Case(Collective.ALLGATHER, 4, n), {"ppn": 2}, data=True)
    edges = edges_of(allgather)
    assert edges[:2] == [(1, 0, 5.0), (3, 2, 5.0)] and edges[-2:] == [(0, 1, 20.0), (2, 3, 20.0)]
    assert sorted(edges[2:-2]) == [(0, 2, 10.0), (2, 0, 10.0)]  # tuned's allgather of the nodes' pieces


@pytest.mark.parametrize("collective", COLLECTIVES, ids=lambda c: c.value)
def test_both_versions_move_the_same_bytes_where_han_has_no_segments(collective):
    if collective in (Collective.REDUCE, Collective.ALLREDUCE):
        pytest.skip("segmented: intra and simple differ")
    a = build(HAN[collective], Case(collective, 12, 300, 5 if collective.rooted else 0), {"ppn": 4})
    b = build(SIMPLE[collective], Case(collective, 12, 300, 5 if collective.rooted else 0), {"ppn": 4})
    assert edges_of(a) == edges_of(b)


def test_simple_reduce_and_allreduce_are_whole_vectors():
    reduce = build(SIMPLE[Collective.REDUCE], Case(Collective.REDUCE, 4, 100_000, root=1), {"ppn": 2})
    assert edges_of(reduce)[-1] == (1, 3, 100_000.0) or (3, 1, 100_000.0) in edges_of(reduce)
    allreduce = build(SIMPLE[Collective.ALLREDUCE], Case(Collective.ALLREDUCE, 4, 1000), {"ppn": 2})
    assert edges_of(allreduce)[:2] == [(1, 0, 1000.0), (3, 2, 1000.0)]
    assert edges_of(allreduce)[-2:] == [(0, 1, 1000.0), (2, 3, 1000.0)]


@pytest.mark.parametrize("collective", COLLECTIVES, ids=lambda c: c.value)
@pytest.mark.parametrize("nprocs,ppn", [(6, 6), (6, 1), (7, 2), (8, 0)])
def test_where_han_steps_aside_it_is_tuned_fixed_decision_on_the_whole_communicator(collective, nprocs, ppn):
    for algorithm in (HAN[collective], SIMPLE[collective]):
        han = build(algorithm, Case(collective, nprocs, 1000), {"ppn": ppn})
        flat, params = tuned_fixed(collective, nprocs, 1000)
        assert edges_of(han) == edges_of(build(flat, Case(collective, nprocs, 1000), params))


def test_libnbc_ireduce_choice_and_its_trees():
    """nbc_ireduce.c with its defaults: Rabenseifner when p > 2 and count >= 2^floor(log2 p), else binomial
    when p > 4 or under 65536 bytes, else the 8 KiB chain (p = 2)."""
    assert libnbc_ireduce(8, 1000, 0)[0].name == "rabenseifner"
    assert libnbc_ireduce(3, 2, 0)[0].name == "rabenseifner"
    assert libnbc_ireduce(3, 1, 0)[0].name == "binomial"
    assert libnbc_ireduce(2, 65535, 0)[0].name == "binomial"
    algorithm, params, order, root = libnbc_ireduce(2, 65536, 1)
    assert (algorithm.name, params, root) == ("pipeline", {"segsize": 8192}, 1)
    chain = build(algorithm, Case(Collective.REDUCE, 2, 65536, root), params)
    assert edges_of(chain) == [(0, 1, 8192.0)] * 8
    assert sorted(waited_by(chain)[7]) == [6]  # each fragment's send waits for the one before
    # binomial on 5 ranks, root 3: virtual rank = rank with 3 and 0 swapped; v sends to v minus its lowest bit
    algorithm, params, order, root = libnbc_ireduce(5, 3, 3)
    assert order.tolist() == [3, 1, 2, 0, 4] and root == 0
    tree = build(algorithm, Case(Collective.REDUCE, 5, 3, root), params)
    real = {(int(order[s]), int(order[d])) for s, d, _ in edges_of(tree)}
    assert real == {(1, 3), (0, 2), (2, 3), (4, 3)}


def test_defaults_follow_han_component():
    assert default_name(Collective.GATHER) == "han_simple"  # coll_han_use_simple_gather defaults to true
    assert {default_name(c) for c in COLLECTIVES if c is not Collective.GATHER} == {"han"}
    assert HAN[Collective.REDUCE].resolve_params()["segsize"] == 65536
    assert HAN[Collective.ALLREDUCE].resolve_params()["segsize"] == 65536


def test_han_allreduce_builds_fast_enough_at_scale():
    cs = build(HAN[Collective.ALLREDUCE], Case(Collective.ALLREDUCE, 4096, 1 << 20), {"ppn": 32})
    assert cs.schedule.ntransmissions > 0 and np.all(np.diff(cs.schedule.after_ptr) >= 0)


def test_selection_keeps_han_segment_sizes_at_their_defaults():
    """han's rules file names only a component and an algorithm; its segment size is a global MCA parameter,
    so the candidates vary segsize for coll/tuned's algorithms and never for han's."""
    from commcost.selection.select import candidates

    chosen = candidates(Collective.ALLREDUCE, "ompi", {"segsize": [0, 8192, 32768]})
    han = [c for c in chosen if c.algorithm.name in ("han", "han_simple")]
    assert [c.params for c in han] == [{"segsize": 65536, "ppn": 0, "up": 0, "low": 0}, {"ppn": 0}]
    assert {c.params["segsize"] for c in chosen if c.algorithm.name == "segmented_ring"} == {0, 8192, 32768}


@pytest.mark.parametrize("collective", [Collective.REDUCE, Collective.ALLREDUCE, Collective.BCAST])
def test_only_a_ranks_first_sends_in_a_call_wait_for_what_it_did_before(collective, monkeypatch):
    """in_steps gives the pending operations of a rank only to its sends in a call that wait for no send of
    its own there (Part.entry_sends): the others follow them. Prices equal those with every send waiting
    (three models, the last rank and the mean; up and low modules, segments), with fewer edges (han's
    reduce on 1,024 ranks at 16 MiB: 13.2 M -> 2.7 M, 1.1 GB -> 0.37 GB to build)."""
    from pathlib import Path

    from commcost.collectives.ompi_han import Part
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.models import MODELS, PlacedSchedule
    from commcost.platform import Mapping

    ex = Path(__file__).resolve().parent.parent / "examples"
    platform = load_platform(ex / "cluster" / "platform.toml")[0]
    params = load_params(ex / "params" / "illustrative.toml")
    models = [MODELS[m](params.for_model(m)) for m in ("hockney", "loggph", "taulop")]
    han = find(collective, "ompi.han")
    fewer = False
    for nprocs, nbytes, extra in ((12, 300_000, {}), (32, 1 << 20, {"up": 1}), (32, 65536, {"low": 1}),
                                  (64, 1 << 20, {"segsize": 8192})):
        values = han.resolve_params({"ppn": 4, **{k: v for k, v in extra.items() if any(p.name == k for p in han.params)}})
        case = Case(collective, nprocs, nbytes, 0)
        mapping = Mapping.sequential(platform, nprocs, 4)
        entry = build(han, case, values).schedule
        with monkeypatch.context() as patch:
            patch.setattr(Part, "entry_sends", Part.sends)
            every = build(han, case, values).schedule
        fewer |= len(entry.after_idx) < len(every.after_idx)
        for model in models:
            for statistic in ("max", "mean"):
                assert model.statistic_s(PlacedSchedule.of(entry, platform, mapping), statistic) == pytest.approx(
                    model.statistic_s(PlacedSchedule.of(every, platform, mapping), statistic), rel=1e-12)
    assert fewer or collective is Collective.BCAST  # han's bcast: one send per rank and call, no fewer
