"""What Open MPI runs under a deployed mca-params.conf: han rules read back, mca-params read, the decision per
call with and without the files, and the sizes `commcost verify` probes per rule band."""

from __future__ import annotations

import pytest

from commcost.collectives import Collective, find
from commcost.errors import InputError
from commcost.io.deployed_rules import TUNED_INSIDE, DeployedRules, open_mpi_default, probe_sizes
from commcost.io.han_rules import han_rules_text, mca_params_text, read_mca_params, write_han_rules
from commcost.io.han_rules_read import read_han_rules
from commcost.io.ompi_rules import choice_of_rule, rules_from, write_ompi_rules
from commcost.selection.decision import Choice, compress

HAN = find(Collective.BCAST, "ompi.han")
SIMPLE = find(Collective.BCAST, "ompi.han_simple")
KNOMIAL = find(Collective.BCAST, "knomial")
LINEAR = find(Collective.BCAST, "basic_linear")


def _choice(algorithm, **params):
    return Choice(algorithm, algorithm.resolve_params(params))


def _selection():
    flat, han, simple = _choice(KNOMIAL), _choice(HAN), _choice(SIMPLE)
    seg = _choice(find(Collective.BCAST, "binomial"), segsize=8192)
    grid = [[flat, flat, seg], [flat, han, simple], [han, han, han]]
    return compress(Collective.BCAST, "ompi", [2, 16, 64], [1, 1024, 1 << 20], grid, "test")


def _deploy(tmp_path, selections=None):
    selections = selections or [_selection()]
    write_ompi_rules(selections, tmp_path / "ompi-rules.conf", "classic", ["test"])
    write_han_rules(selections, tmp_path / "han-rules.conf", ["test"])
    (tmp_path / "mca-params.conf").write_text(
        mca_params_text(tmp_path / "ompi-rules.conf", tmp_path / "han-rules.conf", ["test"]))
    return DeployedRules.load(tmp_path / "mca-params.conf")


def test_han_rules_read_back_decide_what_the_selection_chose():
    selection = _selection()
    path_text = han_rules_text([selection])
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "h.conf"
        path.write_text(path_text)
        rules = read_han_rules(path)
    # lower bounds: the last size <= P, then the last bytes <= n; worked from the grid above
    expected = {(2, 1): ("tuned", ""), (3, 5000): ("tuned", ""), (16, 1): ("tuned", ""), (16, 1024): ("han", "intra"),
                (20, 4096): ("han", "intra"), (16, 1 << 20): ("han", "simple"), (64, 1): ("han", "intra"),
                (64, 1 << 21): ("han", ""), (100, 1): ("han", ""), (16, 0): ("han", "")}
    for (nprocs, nbytes), want in expected.items():
        rule = rules.decide("bcast", nprocs, nbytes)
        assert (rule.component, rule.algorithm) == want, (nprocs, nbytes)
    assert rules.decide("reduce", 16, 1) is None


@pytest.mark.parametrize("text, line, what", [
    ("1\nbcast 1\nglobal_communicator 1\n2 1\n0 han\n", 4, "must be 1"),
    ("1\nbcast 1\nglobal_communicator 1\n1 1\n8 han\n", 5, "0 bytes"),
    ("1\nbcast 1\nglobal_communicator 1\n1 1\n0 6\n", 5, "component"),
    ("1\nbcast 1\nglobal_communicator 1\n1 1\n0 tuned @intra\n", 5, "after han"),
    ("1\nbcast 1\nglobal_communicator 1\n1 2\n0 han\n0 tuned\n", 6, "not above"),
    ("1\nbcast 1\nglobal_communicator 1\n1 1\n0 han\n7\n", 6, "after the last rule"),
    ("1\nbcast 1\nglobal_communicator 1\n1 2\n0 han\n", 5, "ends"),
    ("1\nfoo 1\n", 2, "collective"),
])
def test_han_rules_reader_names_line_and_field(tmp_path, text, line, what):
    path = tmp_path / "h.conf"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_han_rules(path)
    assert error.value.where == f"line {line}" and what in error.value.message and error.value.source == str(path)


def test_mca_params_read_skips_comments_and_names_a_bad_line(tmp_path):
    path = tmp_path / "m.conf"
    path.write_text("# c\n\na = 1\nb= x y\na=2\n")
    assert read_mca_params(path) == {"a": (5, "2"), "b": (4, "x y")}
    path.write_text("a = 1\nno equals here\n")
    with pytest.raises(InputError) as error:
        read_mca_params(path)
    assert error.value.where == "line 2"


def test_choice_of_rule_inverts_the_written_rule():
    rules = rules_from([_selection()])
    assert choice_of_rule(rules.decide("bcast", 2, 1 << 20), Collective.BCAST) == \
        _choice(find(Collective.BCAST, "binomial"), segsize=8192)
    assert choice_of_rule(rules.decide("bcast", 2, 10), Collective.BCAST) == _choice(KNOMIAL)


def test_one_node_runs_tuned_rules_and_several_nodes_han_rules(tmp_path):
    deployed = _deploy(tmp_path)
    assert deployed.collectives == [Collective.BCAST]
    # one node: coll/han steps aside, tuned's rule (or its fixed decision where the rule is 0)
    assert deployed.runs(Collective.BCAST, 16, 10, 1).choice == _choice(KNOMIAL)
    assert deployed.runs(Collective.BCAST, 16, 2048, 1).label.startswith("fixed: ")
    # two nodes: han's rule; "tuned" hands the call to tuned's rule
    assert deployed.runs(Collective.BCAST, 16, 2048, 2).choice == _choice(HAN)
    assert deployed.runs(Collective.BCAST, 16, 1 << 20, 2).choice == _choice(SIMPLE)
    assert deployed.runs(Collective.BCAST, 16, 10, 2).label == "tuned rule: knomial"
    # the file keeps han where unpriced; tuned's rules for 2..15 ranks reach han's levels (8 per node, 2 nodes)
    assert deployed.runs(Collective.BCAST, 16, 0, 2).label == f"han rule: han {TUNED_INSIDE}"
    assert deployed.runs(Collective.BCAST, 16, 0, 2).choice == _choice(HAN)
    # Open MPI without files: han on several nodes, the fixed decision on one
    assert open_mpi_default(Collective.BCAST, 16, 10, 2).choice == _choice(HAN)
    assert open_mpi_default(Collective.BCAST, 16, 10, 1).label.startswith("fixed: ")
    assert open_mpi_default(Collective.REDUCE, 16, 10, 2).label == "han default: han"
    assert open_mpi_default(Collective.GATHER, 16, 10, 2).label == "han default: han_simple"  # han's gather default
    assert open_mpi_default(Collective.ALLTOALL, 16, 10, 2).label.startswith("fixed: ")  # not a han collective


def test_coll_without_han_leaves_every_call_to_tuned(tmp_path):
    _deploy(tmp_path)
    conf = tmp_path / "mca-params.conf"
    conf.write_text(conf.read_text() + "coll = ^han\n")
    deployed = DeployedRules.load(conf)
    assert not deployed.han_enabled
    assert deployed.runs(Collective.BCAST, 16, 10, 2).choice == _choice(KNOMIAL)
    conf.write_text(conf.read_text().replace("coll = ^han", "coll = tuned,libnbc,basic,self"))
    assert not DeployedRules.load(conf).han_enabled


def test_a_named_file_that_is_missing_is_named(tmp_path):
    (tmp_path / "mca-params.conf").write_text("coll_tuned_use_dynamic_rules = 1\n"
                                              "coll_tuned_dynamic_rules_filename = nothere.conf\n")
    with pytest.raises(InputError) as error:
        DeployedRules.load(tmp_path / "mca-params.conf")
    assert error.value.where == "line 2" and "nothere.conf" in error.value.message


def test_edges_and_probe_sizes_give_one_size_per_band(tmp_path):
    deployed = _deploy(tmp_path)
    # P = 16: rules start at 0 (han's), 1, 1024, 1 MiB and 1 MiB + 1 (han's file); tuned's at 0, 1, 1024, 1 MiB + 1
    assert deployed.edges(Collective.BCAST, 16) == [0, 1, 1024, 1 << 20, (1 << 20) + 1]
    # bands [1, 1023], [1024, 1 MiB - 1], [1 MiB, 1 MiB], [1 MiB + 1, 4 MiB]: a power of two near the middle
    assert probe_sizes(deployed.edges(Collective.BCAST, 16), 1, 4 << 20) == [32, 32768, 1 << 20, 2 << 20]
    assert probe_sizes([0, 100, 120], 1, 1000) == [8, 100, 256]  # no power of two in [100, 119]: its first size
    assert probe_sizes([0], 5, 5) == [5]


def test_han_is_said_to_run_tuned_rules_inside_only_where_tuned_has_rules_for_its_level_sizes(tmp_path):
    """han's calls on its sub-communicators (ppn ranks per node, one leader per node) go to coll/tuned, which
    reads the same rules file: where that file has a non-zero rule for those sizes han is not the algorithm
    Open MPI's default runs, nor the one commcost prices (verify must not take it as the same algorithm)."""
    han = _choice(HAN)
    only_big = compress(Collective.BCAST, "ompi", [64], [1, 1 << 20], [[_choice(KNOMIAL), han]], "test")
    deployed = _deploy(tmp_path, [only_big])  # rules from 64 ranks up: han's levels on 16 = 2 x 8 see none
    assert deployed.runs(Collective.BCAST, 16, 1 << 20, 2).label == "han rule: han"
    # 128 = 2 x 64: the block for 64 ranks names knomial for small messages, which han's low bcasts may be
    assert deployed.runs(Collective.BCAST, 128, 1 << 20, 2).label.endswith(TUNED_INSIDE)
    small = tmp_path / "small"
    small.mkdir()
    deployed = _deploy(small)  # knomial from 2 ranks: han on 16 = 2 x 8 runs it inside
    assert deployed.runs(Collective.BCAST, 16, 2048, 2).label.endswith(TUNED_INSIDE)
    assert open_mpi_default(Collective.BCAST, 16, 2048, 2).label == "han default: han"


def test_han_priced_with_the_deployed_tuned_rules_inside(tmp_path):
    """Where tuned's file has rules for han's level sizes, verify prices han with those rules inside: the low
    bcasts on 4-rank nodes run the file's basic_linear instead of the fixed decision's tree."""
    from commcost.collectives import Case, build
    from commcost.collectives.ompi_han import tuned_fixed, tuned_rules_inside

    linear = find(Collective.BCAST, "basic_linear")
    assert tuned_fixed(Collective.BCAST, 4, 1024)[0] != linear
    selection = compress(Collective.BCAST, "ompi", [4], [1, 1 << 20], [[_choice(linear), _choice(linear)]], "test")
    deployed = _deploy(tmp_path, [selection])
    assert deployed.tuned_pick(Collective.BCAST, 4, 1024)[0] == linear
    assert deployed.tuned_pick(Collective.REDUCE, 4, 1024) is None  # no reduce rules: the fixed decision
    case = Case(Collective.BCAST, 8, 1024)
    plain = build(HAN, case, {"ppn": 4}).schedule
    with tuned_rules_inside(deployed.tuned_pick):
        inside = build(HAN, case, {"ppn": 4}).schedule
    low = {(int(s), int(d)) for s, d in zip(inside.src, inside.dst) if s // 4 == d // 4}
    assert low == {(0, 1), (0, 2), (0, 3), (4, 5), (4, 6), (4, 7)}  # the root of each node sends to all
    assert {(int(s), int(d)) for s, d in zip(plain.src, plain.dst) if s // 4 == d // 4} != low
    assert tuned_fixed(Collective.BCAST, 4, 1024)[0] != linear  # the context is gone
