"""coll/han's global tunables as decision variables (issue 12 item 2): its segment size and the components
it runs per level (bcast: libnbc or adapt between nodes, tuned or sm inside them), one configuration per
collective chosen with the rules and deployed through mca-params.conf. Hand-worked schedules, the data-flow
checker on every new schedule, the choice on hand-made prices, and the files."""

from __future__ import annotations

import numpy as np
import pytest

from collective_helpers import edges_of, waited_by
from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check
from commcost.collectives.ompi_adapt import adapt_bcast
from commcost.collectives.ompi_sm import SM_BCAST
from commcost.collectives.trees import build_heap_tree
from commcost.errors import InputError
from commcost.io.deployed_rules import DeployedRules
from commcost.io.han_rules import mca_params_text, read_mca_params, write_han_rules
from commcost.io.ompi_rules import write_ompi_rules
from commcost.selection.decision import Choice, compress
from commcost.selection.han_config import choose_han_config, han_mca_settings, han_variants
from commcost.selection.select import SelectionResult, chosen_of

HAN = find(Collective.BCAST, "ompi.han")
LINEAR = find(Collective.BCAST, "basic_linear")


def test_heap_tree_by_hand():
    """coll_sm_module.c: v's children are v d + 1 .. v d + d (not coll/base's level-strided fan-out tree)."""
    tree = build_heap_tree(4, 7)
    assert tree.children(0) == [1, 2, 3, 4] and tree.children(1) == [5, 6] and tree.children(2) == []
    assert tree.depth.tolist() == [0, 1, 1, 1, 1, 2, 2]
    tree = build_heap_tree(2, 7)
    assert [tree.children(v) for v in range(3)] == [[1, 2], [3, 4], [5, 6]]
    assert build_heap_tree(4, 1).src.size == 0
    with pytest.raises(ValueError):
        build_heap_tree(0, 4)


def test_sm_bcast_by_hand():
    """P = 6, root 2, 20,000 bytes: fragments 8192, 8192, 3616; virtual ranks 0..5 are ranks 2, 3, 4, 5, 0, 1,
    so 2 -> 3, 4, 5, 0 and 3 -> 1. A parent never waits for its children's copies; 3 forwards fragment k once
    it has it."""
    cs = build(SM_BCAST, Case(Collective.BCAST, 6, 20000, 2), SM_BCAST.resolve_params(), data=True)
    check(cs)
    assert edges_of(cs) == ([(2, 3, 8192.0), (2, 4, 8192.0), (2, 5, 8192.0), (2, 0, 8192.0)] * 2
                            + [(3, 1, 8192.0)] + [(2, 3, 3616.0), (2, 4, 3616.0), (2, 5, 3616.0), (2, 0, 3616.0)]
                            + [(3, 1, 8192.0), (3, 1, 3616.0)])
    waits = waited_by(cs)
    assert waits[8] == {0} and waits[13] == {4} and waits[14] == {9}
    assert all(not w for i, w in waits.items() if i not in (8, 13, 14))


@pytest.mark.parametrize("nprocs", [1, 2, 3, 5, 8, 17, 33, 65])
def test_sm_bcast_data_flow_every_root(nprocs):
    for root in sorted({0, nprocs // 2, nprocs - 1}):
        for nbytes, fragment in ((1, 8192), (100_000, 8192), (7, 2), (1000, 300)):
            check(build(SM_BCAST, Case(Collective.BCAST, nprocs, nbytes, root), {"fragment": fragment}, data=True))


@pytest.mark.parametrize("nprocs,ppn", [(4, 2), (6, 3), (12, 4), (16, 4), (24, 8), (7, 2), (8, 1)])
@pytest.mark.parametrize("up,low", [(1, 0), (0, 1), (1, 1)])
def test_han_bcast_with_adapt_and_sm_passes_the_data_flow_checker(nprocs, ppn, up, low):
    for root in sorted({0, nprocs // 2, nprocs - 1}):
        for nbytes, segsize in ((1, 65536), (100_000, 65536), (7, 2), (30_000, 16384)):
            check(build(HAN, Case(Collective.BCAST, nprocs, nbytes, root),
                        {"ppn": ppn, "segsize": segsize, "up": up, "low": low}, data=True))


def test_han_bcast_with_adapt_up_and_sm_low_by_hand():
    """2 nodes of 2, 20,000 bytes in one han segment: the leaders' bcast is adapt's (a binomial of one
    segment: 0 -> 2), each node's is coll/sm's (fragments of 8192: 0 -> 1 and 2 -> 3, three each); rank 2
    forwards inside its node once the up bcast has reached it."""
    cs = build(HAN, Case(Collective.BCAST, 4, 20000), {"ppn": 2, "up": 1, "low": 1}, data=True)
    check(cs)
    assert edges_of(cs) == [(0, 2, 20000.0), (2, 0, 0.0), (0, 1, 8192.0), (2, 3, 8192.0), (0, 1, 8192.0),
                            (2, 3, 8192.0), (0, 1, 3616.0), (2, 3, 3616.0)]  # 1: the synchronous send's ack
    waits = waited_by(cs)
    assert all(0 in waits[i] for i in (3, 5, 7))  # 2 -> 3 after 2 received from 0
    assert 1 in waits[2] and all(1 not in waits[i] for i in (3, 5, 7))  # 0 waits for the ack, 2 does not
    assert adapt_bcast()[0].name == "adapt_bcast" and adapt_bcast()[1] == {"eager": 65536}


def test_han_bcast_adapt_up_segments_use_adapt_for_every_segment():
    """With up 1 segment 0's blocking bcast is adapt's too (its blocking bcast is its ibcast and a wait):
    4 nodes of 2, 3 segments: every up call is build_bmtree's binomial 0 -> 2, 0 -> 4, 2 -> 6 (libnbc would be linear
    on 4 nodes: 0 -> 2, 0 -> 4, 0 -> 6)."""
    adapt = build(HAN, Case(Collective.BCAST, 8, 3), {"ppn": 2, "segsize": 1, "up": 1}, data=True)
    libnbc = build(HAN, Case(Collective.BCAST, 8, 3), {"ppn": 2, "segsize": 1}, data=True)
    up = [(s, d) for s, d, b in edges_of(adapt) if s % 2 == 0 and d % 2 == 0 and b > 0]
    assert sorted(up) == sorted([(0, 2), (0, 4), (2, 6)] * 3)
    up_nbc = [(s, d) for s, d, _ in edges_of(libnbc) if s % 2 == 0 and d % 2 == 0]
    assert sorted(up_nbc[3:]) == sorted([(0, 2), (0, 4), (0, 6)] * 2)


def test_han_module_values_are_checked():
    with pytest.raises(InputError, match="up module must be one of 0 libnbc, 1 adapt"):
        build(HAN, Case(Collective.BCAST, 4, 10), {"ppn": 2, "up": 2})
    with pytest.raises(InputError, match="low module must be one of 0 tuned, 1 sm"):
        build(HAN, Case(Collective.BCAST, 4, 10), {"ppn": 2, "low": 3})


def test_han_variants_put_the_defaults_first_and_vary_only_what_each_algorithm_has():
    bcast = han_variants(Collective.BCAST, "ompi", {"segsize": [16384, 65536], "up": [0, 1], "low": [0, 1]})
    han = [c for c in bcast if c.algorithm.name == "han"]
    assert len(han) == 2 * 2 * 2 and han[0].params == HAN.resolve_params()
    assert [c.params for c in bcast if c.algorithm.name == "han_simple"] == [{"ppn": 0}]
    reduce = han_variants(Collective.REDUCE, "ompi", {"segsize": [16384], "up": [0, 1]})
    assert sorted((c.params["segsize"], c.params["up"]) for c in reduce if c.algorithm.name == "han") == [
        (16384, 0), (16384, 1), (65536, 0), (65536, 1)]
    gather = han_variants(Collective.GATHER, "ompi", {"segsize": [16384], "up": [0, 1], "low": [0, 1]})
    assert all(not {"segsize", "up", "low"} & set(c.params) for c in gather)


def _result(choices, time_s):
    time_s = np.asarray(time_s, float)
    selection = compress(Collective.BCAST, "ompi", [4, 8], [1, 1000], chosen_of(choices, time_s), "test")
    return SelectionResult(tuple(choices), (4, 8), (1, 1000), time_s, selection)


def test_choose_han_config_keeps_the_configuration_of_least_geometric_mean_and_defaults_on_ties():
    """Three han configurations and a flat algorithm at four points. Best times per point under each:
    defaults (segsize 65536): min(flat, a) = 2, 2, 2, 2 (geomean 2); segsize 16384: 1, 1, 2, 2 (geomean
    1.414); segsize 4096: 0.5, 8, 8, 2 (flat 2 wherever it is better: geomean (0.5 * 2 * 2 * 2) ** 0.25 =
    1.682). 16384 wins, and the restricted selection keeps it and the flat algorithm only."""
    d = Choice(HAN, HAN.resolve_params())
    s16 = Choice(HAN, {**HAN.resolve_params(), "segsize": 16384})
    s4 = Choice(HAN, {**HAN.resolve_params(), "segsize": 4096})
    flat = Choice(LINEAR, {})
    times = [[[2, 2], [2, 2]],  # d
             [[1, 1], [3, 3]],  # s16
             [[0.5, 8], [8, 8]],  # s4
             [[2, 2], [2, 2]]]  # flat
    restricted, config = choose_han_config(_result([d, s16, s4, flat], times))
    assert config.values == {"segsize": 16384, "up": 0, "low": 0} and config.changed == {"segsize": 16384}
    assert config.geomean_s == pytest.approx(2 ** 0.5) and config.default_geomean_s == pytest.approx(2.0)
    assert restricted.choices == (s16, flat)
    assert [[c.params.get("segsize") for c in row] for row in restricted.chosen] == [[16384, 16384], [None, None]]
    assert han_mca_settings([config]) == [("coll_han_bcast_segsize", "16384")]
    assert config.apply(d) == s16 and config.apply(flat) == flat
    # a configuration no better than the defaults (within the tie tolerance) is not deployed
    tie = [[[2, 2], [2, 2]], [[2, 2], [2, 2.0000001]], [[3, 3], [3, 3]]]
    restricted, config = choose_han_config(_result([d, s16, flat], tie))
    assert config.changed == {} and restricted.choices == (d, flat)
    assert han_mca_settings([config]) == []
    assert choose_han_config(_result([flat, flat], [[[1, 1], [1, 1]]] * 2))[1] is None


def test_deployed_files_carry_hans_configuration_and_deployed_rules_read_it(tmp_path):
    """The mca-params.conf sets han's tunables the selection chose, and DeployedRules prices han's default under
    them (verify labels what runs with them); a bad value is one line naming the file and line."""
    s16 = Choice(HAN, {**HAN.resolve_params(), "segsize": 16384, "low": 1})
    selection = compress(Collective.BCAST, "ompi", [4], [1, 1 << 20], [[s16, s16]], "test")
    write_ompi_rules([selection], tmp_path / "tuned.conf")
    write_han_rules([selection], tmp_path / "han.conf")
    settings = [("coll_han_bcast_segsize", "16384"), ("coll_han_bcast_low_module", "1")]
    text = mca_params_text(tmp_path / "tuned.conf", tmp_path / "han.conf", ["made by a test"], settings)
    conf = tmp_path / "mca-params.conf"
    conf.write_text(text)
    read = read_mca_params(conf)
    assert read["coll_han_bcast_segsize"][1] == "16384" and read["coll_han_bcast_low_module"][1] == "1"
    rules = DeployedRules.load(conf)
    runs = rules.runs(Collective.BCAST, 4, 1000, nnodes=2)
    assert runs.choice == Choice(HAN, {**HAN.resolve_params(), "segsize": 16384, "low": 1})
    assert "segsize=16384" in runs.label and "low=1" in runs.label
    conf.write_text(text + "coll_han_bcast_up_module = adapt\n")
    with pytest.raises(InputError, match="coll_han_bcast_up_module must be an integer") as err:
        DeployedRules.load(conf)
    assert "mca-params.conf" in str(err.value) and "line" in str(err.value)
