"""coll/han's components per level for reduce and allreduce (issue 12 item 2): coll/sm's reduce inside the
nodes (low module 1) and coll/adapt's ireduce between the leaders (up module 1) as schedules, worked by hand
from coll_sm_reduce.c and coll_adapt_ireduce.c, the data-flow checker on every layout and module pair, and
the selection's variants and mca-params lines."""

from __future__ import annotations

import pytest

from collective_helpers import edges_of, waited_by
from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check
from commcost.collectives.ompi_adapt import ADAPT_REDUCE
from commcost.collectives.ompi_sm import SM_REDUCE
from commcost.collectives.trees import build_flat_tree
from commcost.errors import InputError
from commcost.selection.han_config import HanConfig, han_mca_settings, han_variants

REDUCE, ALLREDUCE = find(Collective.REDUCE, "ompi.han"), find(Collective.ALLREDUCE, "ompi.han")
REDUCE_SIMPLE, ALLREDUCE_SIMPLE = find(Collective.REDUCE, "ompi.han_simple"), find(Collective.ALLREDUCE,
                                                                                     "ompi.han_simple")


def test_flat_tree_takes_the_peers_from_the_highest_rank_down():
    tree = build_flat_tree(5, 2)
    assert tree.children(2) == [4, 3, 1, 0] and tree.parent.tolist() == [2, 2, -1, 2, 2]
    assert build_flat_tree(1, 0).src.size == 0
    with pytest.raises(ValueError):
        build_flat_tree(3, 3)


def test_sm_reduce_by_hand():
    """P = 5, root 2, 20,000 bytes: fragments 8192, 8192, 3616, each rank's straight to the root (peers 4, 3,
    1, 0 as reduce_inorder takes them); a rank copies fragment k after its fragment k - 1, the root waits for
    nothing."""
    cs = build(SM_REDUCE, Case(Collective.REDUCE, 5, 20000, 2), SM_REDUCE.resolve_params(), data=True)
    check(cs)
    assert edges_of(cs) == ([(4, 2, 8192.0), (3, 2, 8192.0), (1, 2, 8192.0), (0, 2, 8192.0)] * 2
                            + [(4, 2, 3616.0), (3, 2, 3616.0), (1, 2, 3616.0), (0, 2, 3616.0)])
    assert cs.combine.all()
    assert waited_by(cs) == {i: ({i - 4} if i >= 4 else set()) for i in range(12)}


def test_adapt_reduce_by_hand():
    """P = 4, root 0, five 1-byte segments: build_bmtree's binomial (0 <- 1, 0 <- 2, 1 <- 3). Rank 1 sends
    segment s once it has reduced s from 3; every rank has at most two sends in flight, so its segment s
    waits for its segment s - 2 (coll_adapt_reduce_max_send_requests 2), not s - 1 as coll/tuned's."""
    cs = build(ADAPT_REDUCE, Case(Collective.REDUCE, 4, 5), {"segsize": 1, "max_sends": 2, "eager": 0},
               data=True)
    check(cs)
    assert edges_of(cs) == [(3, 1, 1.0), (1, 0, 1.0), (2, 0, 1.0)] * 5
    waits = waited_by(cs)
    assert waits[0] == waits[2] == waits[3] == waits[5] == set()  # segments 0 and 1 of the leaves: no wait
    assert waits[6] == {0} and waits[8] == {2}  # the leaves' segment 2 after their segment 0
    assert waits[1] == {0} and waits[4] == {3} and waits[7] == {1, 6}  # rank 1: its child's segment, own s - 2
    assert ADAPT_REDUCE.resolve_params() == {"segsize": 163740, "max_sends": 2, "eager": 65536}


def test_adapt_synchronous_sends_are_acknowledged_when_eager():
    """coll_adapt_*_synchronous_send: the leaves' first two segments of the reduce and the root's sends of a
    one-segment bcast complete when the receiver has matched them; at most the eager limit that is a
    0-byte acknowledgement back (phase "ack"), once the data has arrived; above it none (the rendezvous
    already waits)."""
    from commcost.collectives.ompi_adapt import ADAPT_BCAST

    cs = build(ADAPT_REDUCE, Case(Collective.REDUCE, 4, 5), {"segsize": 1, "max_sends": 2, "eager": 65536},
               data=True)
    check(cs)
    assert edges_of(cs)[15:] == [(0, 2, 0.0), (0, 2, 0.0), (1, 3, 0.0), (1, 3, 0.0)]  # leaves 2 and 3
    waits = waited_by(cs)
    assert [waits[i] for i in range(15, 19)] == [{2}, {5}, {0}, {3}]
    assert {cs.schedule.phase_names[p] for p in cs.schedule.phase[15:]} == {"ack"}
    big = build(ADAPT_REDUCE, Case(Collective.REDUCE, 4, 400_000), ADAPT_REDUCE.resolve_params())
    assert big.schedule.ntransmissions == 9  # 163,740-byte segments: rendezvous, no acknowledgement
    bcast = build(ADAPT_BCAST, Case(Collective.BCAST, 4, 2048, 1), ADAPT_BCAST.resolve_params(), data=True)
    check(bcast)
    assert edges_of(bcast) == [(1, 2, 2048.0), (1, 3, 2048.0), (2, 0, 2048.0), (2, 1, 0.0), (3, 1, 0.0)]
    assert waited_by(bcast) == {0: set(), 1: set(), 2: {0}, 3: {0}, 4: {1}}
    assert build(ADAPT_BCAST, Case(Collective.BCAST, 4, 100_000), {"eager": 65536}).schedule.ntransmissions == 3


def test_han_waits_for_the_acknowledgement_but_its_sender_does_not():
    """han bcast on 2 nodes of 2, 2 KiB, adapt between the leaders: rank 0 runs its node's bcast only once
    the acknowledgement of its synchronous send to 2 is back; rank 2 forwards as soon as it has the data
    (the acknowledgement is the PML's, not an operation rank 2 waits for)."""
    han = find(Collective.BCAST, "ompi.han")
    cs = build(han, Case(Collective.BCAST, 4, 2048), {"ppn": 2, "up": 1}, data=True)
    check(cs)
    assert edges_of(cs) == [(0, 2, 2048.0), (2, 0, 0.0), (0, 1, 2048.0), (2, 3, 2048.0)]
    assert waited_by(cs) == {0: set(), 1: {0}, 2: {0, 1}, 3: {0}}


def test_han_reduce_with_adapt_up_runs_the_binomial_between_the_leaders():
    """4 nodes of 2, root 0, one segment: libnbc's ireduce of 1 byte on 4 leaders is its binomial
    (0 <- 2, 0 <- 4, 4 <- 6 in virtual order); adapt's is build_bmtree's (0 <- 2, 0 <- 4, 2 <- 6). Inside
    the nodes coll/tuned and coll/sm both send 1 -> 0, 3 -> 2, ...: the same transmissions."""
    adapt = build(REDUCE, Case(Collective.REDUCE, 8, 1), {"ppn": 2, "up": 1}, data=True)
    libnbc = build(REDUCE, Case(Collective.REDUCE, 8, 1), {"ppn": 2}, data=True)
    sm = build(REDUCE, Case(Collective.REDUCE, 8, 1), {"ppn": 2, "low": 1}, data=True)

    def up(cs):  # the leaders' data messages (adapt's acknowledgements carry 0 bytes)
        return sorted((s, d) for s, d, b in edges_of(cs) if s % 2 == 0 and b > 0)
    assert up(adapt) == [(2, 0), (4, 0), (6, 2)]
    assert up(libnbc) == up(sm) == [(2, 0), (4, 0), (6, 4)]
    assert sorted(e for e in edges_of(sm) if e[0] % 2) == sorted(e for e in edges_of(libnbc) if e[0] % 2)


def test_han_allreduce_with_sm_low_reduces_and_broadcasts_through_coll_sm():
    """2 nodes of 4, 20,000 bytes in one han segment, both modules 1: coll/sm's reduce to each leader
    (fragments 8192, 8192, 3616 from ranks 3, 2, 1 and 7, 6, 5), adapt's ireduce and ibcast between 0 and 4,
    coll/sm's bcast down (a heap tree of degree 4: the leader to its three ranks, per fragment)."""
    cs = build(ALLREDUCE, Case(Collective.ALLREDUCE, 8, 20000), {"ppn": 4, "up": 1, "low": 1}, data=True)
    check(cs)
    edges = edges_of(cs)
    low_reduce = [e for e in edges if e[1] in (0, 4) and e[0] not in (0, 4)]
    assert sorted(low_reduce) == sorted([(r + n, n, b) for n in (0, 4) for r in (3, 2, 1)
                                         for b in (8192.0, 8192.0, 3616.0)])
    # adapt's ireduce and ibcast of 20,000 bytes, each a synchronous eager send acknowledged with 0 bytes
    assert [e for e in edges if {e[0], e[1]} == {0, 4}] == [(4, 0, 20000.0), (0, 4, 0.0), (0, 4, 20000.0),
                                                             (4, 0, 0.0)]
    low_bcast = [e for e in edges if e[0] in (0, 4) and e[1] not in (0, 4)]
    assert sorted(low_bcast) == sorted([(n, n + r, b) for n in (0, 4) for r in (1, 2, 3)
                                        for b in (8192.0, 8192.0, 3616.0)])


@pytest.mark.parametrize("nprocs,ppn", [(4, 2), (6, 3), (12, 4), (16, 4), (24, 8), (7, 2), (8, 1)])
@pytest.mark.parametrize("up,low", [(1, 0), (0, 1), (1, 1)])
def test_han_reduce_and_allreduce_with_adapt_and_sm_pass_the_data_flow_checker(nprocs, ppn, up, low):
    for algorithm in (REDUCE, ALLREDUCE, REDUCE_SIMPLE):
        for root in sorted({0, nprocs // 2, nprocs - 1}) if algorithm.collective.rooted else [0]:
            for nbytes, segsize in ((1, 65536), (100_000, 65536), (7, 2), (30_000, 16384)):
                params = {"ppn": ppn, "up": up, "low": low}
                if any(p.name == "segsize" for p in algorithm.params):
                    params["segsize"] = segsize
                check(build(algorithm, Case(algorithm.collective, nprocs, nbytes, root), params, data=True))


@pytest.mark.parametrize("nprocs", [2, 3, 5, 8, 17, 33])
def test_sm_and_adapt_reduce_every_root(nprocs):
    for root in sorted({0, nprocs // 2, nprocs - 1}):
        for nbytes, size in ((1, 8192), (100_000, 8192), (7, 2), (1000, 300)):
            check(build(SM_REDUCE, Case(Collective.REDUCE, nprocs, nbytes, root), {"fragment": size}, data=True))
            check(build(ADAPT_REDUCE, Case(Collective.REDUCE, nprocs, nbytes, root),
                        {"segsize": size, "max_sends": 2}, data=True))


def test_allreduce_simple_takes_no_module_and_bad_modules_are_refused():
    """han's simple allreduce runs on its sub_comm pair, which the module parameters do not reach."""
    assert {p.name for p in ALLREDUCE_SIMPLE.params} == {"ppn"}
    assert {"up", "low"} <= {p.name for p in REDUCE_SIMPLE.params}
    with pytest.raises(InputError, match="up module must be one of 0 libnbc, 1 adapt"):
        build(REDUCE, Case(Collective.REDUCE, 4, 10), {"ppn": 2, "up": 2})
    with pytest.raises(InputError, match="low module must be one of 0 tuned, 1 sm"):
        build(ALLREDUCE, Case(Collective.ALLREDUCE, 4, 10), {"ppn": 2, "low": 2})


def test_variants_and_mca_lines_for_reduce_and_allreduce():
    variants = han_variants(Collective.ALLREDUCE, "ompi", {"segsize": [16384], "up": [0, 1], "low": [0, 1]})
    han = [c for c in variants if c.algorithm.name == "han"]
    assert len(han) == 8 and han[0].params == ALLREDUCE.resolve_params()
    assert [c.params for c in variants if c.algorithm.name == "han_simple"] == [{"ppn": 0}]
    reduce = han_variants(Collective.REDUCE, "ompi", {"up": [0, 1], "low": [0, 1]})
    assert len([c for c in reduce if c.algorithm.name == "han_simple"]) == 4
    config = HanConfig(Collective.REDUCE, {"segsize": 65536, "up": 1, "low": 1},
                       {"segsize": 65536, "up": 0, "low": 0}, 1.0, 1.2)
    assert han_mca_settings([config]) == [("coll_han_reduce_low_module", "1"), ("coll_han_reduce_up_module", "1")]


def test_tune_han_modules_option_picks_what_varies():
    """tune --han-modules: default keeps libnbc and tuned, adapt also tries adapt between the nodes, all also
    coll/sm inside them; --han-segsizes adds segment sizes."""
    from types import SimpleNamespace

    from commcost.workflows.tune_selection import han_decision_values

    def values(modules, segsizes=""):
        return han_decision_values(SimpleNamespace(han_modules=modules, han_segsizes=segsizes))
    assert values("default") == {}
    assert values("adapt") == {"up": [0, 1]}
    assert values("all") == {"up": [0, 1], "low": [0, 1]}
    assert values("adapt", "16KiB")["segsize"] == [16384]
