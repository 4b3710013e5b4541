"""Open MPI 5's coll/han bcast as schedules (issue 12 item 1), and the files that make a selection take effect
under han (item 3): hand-worked structures, the data-flow checker, han's fallbacks, the rules-file formats."""

from __future__ import annotations

import numpy as np
import pytest

from collective_helpers import edges_of, waited_by
from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check
from commcost.collectives.ompi_han import (LIBNBC_BINOMIAL, libnbc_ibcast, nodes_of, placement_ppn,
                                           tuned_fixed)
from commcost.io.han_rules import env_lines, han_rules_text, mca_params_text
from commcost.io.ompi_rules import rules_from
from commcost.selection.decision import Choice, compress
from commcost.collectives.ompi_fixed import decide

HAN = find(Collective.BCAST, "ompi.han")
SIMPLE = find(Collective.BCAST, "ompi.han_simple")


@pytest.mark.parametrize("algorithm", [HAN, SIMPLE], ids=lambda a: a.name)
@pytest.mark.parametrize("nprocs,ppn", [(4, 2), (6, 2), (6, 3), (8, 4), (12, 3), (12, 4), (16, 4), (24, 8),
                                        (7, 2), (9, 3), (5, 5), (8, 1)])
def test_data_flow_checker_passes_every_root_and_several_segments(algorithm, nprocs, ppn):
    for root in sorted({0, nprocs // 2, nprocs - 1}):
        for nbytes, segsize in ((1, 65536), (100_000, 65536), (7, 2), (1000, 300)):
            params = {"ppn": ppn, **({"segsize": segsize} if algorithm is HAN else {})}
            check(build(algorithm, Case(Collective.BCAST, nprocs, nbytes, root), params, data=True))


def test_three_segments_on_two_nodes_of_two_by_hand():
    """P = 4 on 2 nodes of 2, 3 one-byte segments: leaders 0 and 2. Recorded: up 0 (0->2), then per segment
    i the ibcast of i + 1 (0->2) and the low bcasts of i (0->1, 2->3). What each waits for, from
    mca_coll_han_bcast_intra: a leader enters ibcast(i + 1) and low(i) once ibcast(i) and low(i - 1) are done
    for it; a non-leader enters low(i) once its low(i - 1) is done."""
    cs = build(HAN, Case(Collective.BCAST, 4, 3), {"ppn": 2, "segsize": 1}, data=True)
    assert edges_of(cs) == [(0, 2, 1.0),  # 0: up 0
                          (0, 2, 1.0), (0, 1, 1.0), (2, 3, 1.0),  # 1: up 1; 2, 3: low 0
                          (0, 2, 1.0), (0, 1, 1.0), (2, 3, 1.0),  # 4: up 2; 5, 6: low 1
                          (0, 1, 1.0), (2, 3, 1.0)]  # 7, 8: low 2
    assert [spans for spans in cs.payload] == [((0, 1),), ((1, 2),), ((0, 1),), ((0, 1),), ((2, 3),), ((1, 2),),
                                               ((1, 2),), ((2, 3),), ((2, 3),)]
    assert waited_by(cs) == {0: set(), 1: {0}, 2: {0}, 3: {0},
                          4: {1, 2}, 5: {1, 2}, 6: {1, 3},
                          7: {4, 5}, 8: {4, 6}}


def test_simple_is_up_then_down():
    cs = build(SIMPLE, Case(Collective.BCAST, 4, 10, root=3), {"ppn": 2}, data=True)
    assert edges_of(cs) == [(3, 1, 10.0), (1, 0, 10.0), (3, 2, 10.0)]  # leaders have the root's local rank 1
    assert waited_by(cs) == {0: set(), 1: {0}, 2: {0}}


@pytest.mark.parametrize("nprocs,ppn", [(8, 0), (8, 1), (8, 8), (8, 16), (10, 4)])
def test_where_han_steps_aside_it_is_tuned_fixed_decision_on_the_whole_communicator(nprocs, ppn):
    """One node, one rank per node, or nodes of unequal size (10 = 4 + 4 + 2): coll_han_subcomms.c and
    are_ppn_imbalanced hand the call back to coll/tuned."""
    assert nodes_of(nprocs, ppn) is None
    for nbytes in (1, 5000, 1 << 20):
        algorithm, params = tuned_fixed(Collective.BCAST, nprocs, nbytes)
        flat = build(algorithm, Case(Collective.BCAST, nprocs, nbytes, 1), params)
        for han in (HAN, SIMPLE):
            mine = build(han, Case(Collective.BCAST, nprocs, nbytes, 1), {"ppn": ppn})
            assert edges_of(mine) == edges_of(flat)


def test_sub_levels_use_tuned_fixed_decisions_on_their_sizes():
    """P = 64 on 8 nodes of 8, 200 KiB in 64 KiB segments: the low bcasts are tuned's pick for (8 ranks, 64 KiB)
    and the ibcasts libnbc's binomial (8 nodes > 4)."""
    nbytes = 200 * 1024
    cs = build(HAN, Case(Collective.BCAST, 64, nbytes), {"ppn": 8})
    algorithm, params = tuned_fixed(Collective.BCAST, 8, 65536)
    low = build(algorithm, Case(Collective.BCAST, 8, 65536), params)
    names = cs.schedule.phase_names
    assert any(n.startswith("low 0: ") for n in names) and any(n.startswith("up 3: libnbc") for n in names)
    s = cs.schedule
    in_low0 = np.isin(s.phase, [k for k, n in enumerate(names) if n.startswith("low 0: ")])
    node0 = in_low0 & (s.src < 8)
    assert sorted(zip(s.src[node0].tolist(), s.dst[node0].tolist())) == sorted(
        zip(low.schedule.src.tolist(), low.schedule.dst.tolist()))
    assert int(in_low0.sum()) == 8 * low.schedule.ntransmissions


def test_libnbc_binomial_tree_by_hand():
    """nbc_ibcast.c bcast_sched_binomial, P = 8: v receives from v minus its highest bit."""
    cs = build(LIBNBC_BINOMIAL, Case(Collective.BCAST, 8, 4, root=2), {}, data=True)
    check(cs)
    parent_of = {1: 0, 2: 0, 3: 1, 4: 0, 5: 1, 6: 2, 7: 3}
    expected = sorted(((p + 2) % 8, (v + 2) % 8) for v, p in parent_of.items())
    assert sorted((a, b) for a, b, _ in edges_of(cs)) == expected
    assert libnbc_ibcast(4).name == "basic_linear" and libnbc_ibcast(5) is LIBNBC_BINOMIAL


def test_placement_ppn():
    assert placement_ppn(np.arange(12) // 4) == 4
    assert placement_ppn(np.zeros(6, int)) == 0
    assert placement_ppn(np.arange(8) % 2) is None  # round robin
    assert placement_ppn(np.array([0, 0, 0, 1, 1, 2])) == 3  # unequal: han steps aside (nodes_of says None)


def test_han_is_priced_and_the_pricer_takes_ppn_from_the_placement():
    from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
    from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
    from commcost.selection.grid import price_sizes

    kind = NodeType("n2", 2)
    platform = Platform("two", (kind,), (Node("a", kind), Node("b", kind)),
                        (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                         Channel("net", 1, "world", ("net",), ContentionScope.NODE)))
    model = Hockney(HockneyParams({"shm": HockneyChannel(1e-6, 1e-9), "net": HockneyChannel(1e-5, 1e-8)}))
    mapping = Mapping.sequential(platform, 4, 2)
    t = price_sizes(SIMPLE, {"ppn": 0}, 4, [1000], platform, mapping, model)
    # up: one 1000-byte message over net (0 -> 2); then 0 -> 1 and 2 -> 3 over shm in parallel
    assert t[0] == pytest.approx((1e-5 + 1e-8 * 1000) + (1e-6 + 1e-9 * 1000))
    assert np.isinf(price_sizes(SIMPLE, {}, 4, [1000], platform, Mapping.round_robin(platform, 4), model)[0])


def _selection():
    han = Choice(HAN, HAN.resolve_params())
    flat = Choice(find(Collective.BCAST, "knomial"), find(Collective.BCAST, "knomial").resolve_params())
    simple = Choice(SIMPLE, SIMPLE.resolve_params())
    grid = [[flat, flat, flat], [flat, han, simple], [han, han, han]]
    return compress(Collective.BCAST, "ompi", [2, 16, 64], [1, 1024, 1 << 20], grid, "test")


def test_han_rules_file_format():
    text = han_rules_text([_selection()], ["made by a test"])
    tokens = [line.split("#")[0].split() for line in text.splitlines()]
    tokens = [t for line in tokens for t in line]
    assert text.startswith("# Open MPI coll/han dynamic rules") and "# made by a test" in text
    assert tokens[:4] == ["1", "bcast", "1", "global_communicator"]
    nconf = int(tokens[4])
    pos, configs = 5, []
    for _ in range(nconf):
        size, nrules = int(tokens[pos]), int(tokens[pos + 1])
        pos += 2
        rules = []
        for _ in range(nrules):
            rule = [tokens[pos], tokens[pos + 1]]
            pos += 2
            if pos < len(tokens) and tokens[pos].startswith("@"):
                rule.append(tokens[pos])
                pos += 1
            rules.append(rule)
        configs.append((size, rules))
    assert pos == len(tokens)
    assert configs[0][0] == 1 and all(rules[0][0] == "0" for _, rules in configs)
    by_size = dict(configs)
    # outside what was priced (0 bytes, beyond 1 MiB, P beyond 64) han stays, Open MPI's default
    assert by_size[2] == [["0", "han"], ["1", "tuned"], ["1048577", "han"]]
    assert by_size[16] == [["0", "han"], ["1", "tuned"], ["1024", "han", "@intra"], ["1048576", "han", "@simple"],
                           ["1048577", "han"]]
    assert by_size[64] == [["0", "han"], ["1", "han", "@intra"], ["1048577", "han"]]
    assert configs[-1] == (65, [["0", "han"]])


def test_tuned_rules_leave_han_points_to_the_fixed_decision():
    rules = rules_from([_selection()])
    assert rules.decide("bcast", 16, 2048) is None  # han's point: algorithm 0 in tuned's file
    assert rules.decide("bcast", 16, 10).alg == 7


def test_mca_params_file_names_absolute_paths_and_no_trailing_comments(tmp_path):
    text = mca_params_text(tmp_path / "t.conf", tmp_path / "h.conf", ["x"])
    values = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert values == ["coll_tuned_use_dynamic_rules = 1", f"coll_tuned_dynamic_rules_filename = {tmp_path / 't.conf'}",
                      "coll_han_use_dynamic_file_rules = 1", f"coll_han_dynamic_rules_filename = {tmp_path / 'h.conf'}"]
    assert env_lines(text)[0] == "export OMPI_MCA_coll_tuned_use_dynamic_rules=1"


def test_open_mpi_default_is_han_on_several_nodes():
    from commcost.workflows.select import han_default

    assert han_default(Collective.BCAST).algorithm is HAN
    assert han_default(Collective.REDUCE).algorithm.key == "ompi.han"
    assert han_default(Collective.GATHER).algorithm.key == "ompi.han_simple"  # use_simple_gather is on by default
    assert han_default(Collective.ALLTOALL) is None  # not modelled: tuned's fixed decision stands in
    assert decide(Collective.BCAST, 8, 65536).name  # the fixed decision han's levels use
