"""Tuning files written from Selections (issue 5 items 3 and 4): exact over the Selection, read back.

Every written Open MPI file is read back with :func:`read_ompi_rules` and
asked, the way Open MPI's lookup does, what it decides at every (P, n) of a
grid reaching beyond the Selection: the Selection's choice inside a rule,
Open MPI's fixed decision (None) elsewhere.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commcost.collectives import Collective, find
from commcost.errors import InputError
from commcost.io.mpich_json import write_mpich_json
from commcost.io.ompi_rules import rule_fields, write_ompi_rules
from commcost.io.ompi_rules_read import read_ompi_rules
from commcost.selection.decision import Choice, Rule, Selection

LIN = Choice(find(Collective.BCAST, "basic_linear"))
BIN = Choice(find(Collective.BCAST, "binomial"), {"segsize": 0})
PIPE = Choice(find(Collective.BCAST, "pipeline"), {"segsize": 16384})
CHAIN = Choice(find(Collective.BCAST, "chain"), {"segsize": 8192, "fanout": 2})
A2A_LIN = Choice(find(Collective.ALLTOALL, "ompi.linear"))
A2A_BRUCK = Choice(find(Collective.ALLTOALL, "ompi.modified_bruck"))
GAPPY = Selection(Collective.BCAST, "ompi", (
    Rule(2, 3, 0, 1023, LIN), Rule(2, 3, 1024, 65535, BIN), Rule(2, 3, 65536, 1 << 20, PIPE),
    Rule(4, 4, 100, 999, CHAIN), Rule(4, 4, 5000, 9999, BIN),  # gaps below 100, 1000..4999, above 9999
    Rule(8, 16, 0, 4096, PIPE),  # a gap of communicator sizes 5..7
), "test")
SIZES = [0, 1, 99, 100, 999, 1000, 1023, 1024, 4096, 4097, 4999, 5000, 9999, 10000, 65535, 65536, 1 << 20,
         (1 << 20) + 1]


def _expected(selection: Selection, nprocs: int, nbytes: int):
    choice = selection.choice(nprocs, nbytes)
    return None if choice is None else rule_fields(choice, selection.collective)


def _decided(rules, collective, nprocs, nbytes):
    rule = rules.decide_call(collective, nprocs, nbytes)
    return None if rule is None else (rule.alg, rule.faninout, rule.segsize, rule.max_requests)


@pytest.mark.parametrize("fmt", ["classic", "json"])
def test_written_files_decide_exactly_the_selection_and_fixed_elsewhere(tmp_path, fmt):
    path = tmp_path / f"rules.{fmt}"
    written = write_ompi_rules([GAPPY], path, format=fmt)
    back = read_ompi_rules(path)
    assert back.format == fmt
    for nprocs in range(1, 20):
        for nbytes in SIZES:
            expected = _expected(GAPPY, nprocs, nbytes)
            assert _decided(back, Collective.BCAST, nprocs, nbytes) == expected, (nprocs, nbytes)
            assert _decided(written, Collective.BCAST, nprocs, nbytes) == expected


def test_classic_file_starts_with_the_version_and_puts_one_rule_per_line(tmp_path):
    path = tmp_path / "rules.txt"
    write_ompi_rules([GAPPY], path)
    text = path.read_text()
    assert text.startswith("rule-file-version-2\n")
    assert "\n7  # collective id: bcast\n" in text
    assert "\n0 2 2 8192\n" not in text and "\n100 2 2 8192\n" in text  # chain: faninout 2, segsize 8192


def test_block_collectives_are_keyed_on_p_times_the_block(tmp_path):
    sel = Selection(Collective.ALLTOALL, "ompi", (Rule(2, 4, 0, 255, A2A_BRUCK), Rule(2, 4, 256, 1 << 16, A2A_LIN)))
    path = tmp_path / "a2a.txt"
    write_ompi_rules([sel], path)
    back = read_ompi_rules(path)
    assert [b.comm_lo for b in back.collectives["alltoall"]] == [1, 2, 3, 4, 5]  # one block per P
    assert back.decide("alltoall", 4, 4 * 255).alg == 3 and back.decide("alltoall", 4, 4 * 256).alg == 1
    for nprocs in range(1, 7):
        for nbytes in (0, 255, 256, 1 << 16, (1 << 16) + 1):
            assert _decided(back, Collective.ALLTOALL, nprocs, nbytes) == _expected(sel, nprocs, nbytes)


def test_several_collectives_in_one_file(tmp_path):
    a2a = Selection(Collective.ALLTOALL, "ompi", (Rule(4, 4, 0, 100, A2A_BRUCK),))
    path = tmp_path / "both.txt"
    write_ompi_rules([GAPPY, a2a], path)
    back = read_ompi_rules(path)
    assert set(back.collectives) == {"bcast", "alltoall"}
    assert back.decide_call(Collective.ALLTOALL, 4, 50).alg == 3 and back.decide_call(Collective.BCAST, 2, 5).alg == 1


@st.composite
def selections(draw):
    choices = [LIN, BIN, PIPE, CHAIN]
    rules, p = [], draw(st.integers(1, 4))
    for _ in range(draw(st.integers(1, 3))):
        p_hi = p + draw(st.integers(0, 3))
        m = draw(st.integers(0, 50))
        for _ in range(draw(st.integers(1, 3))):
            m_hi = m + draw(st.integers(0, 40))
            rules.append(Rule(p, p_hi, m, m_hi, draw(st.sampled_from(choices))))
            m = m_hi + 1 + draw(st.integers(0, 5))
        p = p_hi + 1 + draw(st.integers(0, 2))
    return Selection(Collective.BCAST, "ompi", tuple(rules))


@settings(max_examples=60, deadline=None)
@given(selections())
def test_round_trip_is_exact_for_any_selection(tmp_path_factory, sel):
    path = tmp_path_factory.mktemp("rt") / "rules.txt"
    write_ompi_rules([sel], path)
    back = read_ompi_rules(path)
    for nprocs in range(1, 20):
        for nbytes in range(0, 260, 3):
            assert _decided(back, Collective.BCAST, nprocs, nbytes) == _expected(sel, nprocs, nbytes)


@pytest.mark.parametrize("text, where, words", [
    ("rule-file-version-2\n1\n7\n1\n0 1\n5 1 0 0\n", "line 6", "0 bytes"),
    ("1\n7\n1\n0 2\n0 1 0 0\n", "line 5", "ends"),
    ("1\n7\n1\n0 1\n0 1 0 0\n9 9 9 9\n", "line 6", "after the last rule"),
    ("1\n30\n", "line 2", "collective id 30"),
    ("1\n7\n1\n0 1\n0 one 0 0\n", "line 5", "not a number"),
    ("1\n7\n2\n8 1\n0 1 0 0\n4 1\n0 6 0 0\n", "line 6", "communicator size 4"),
    ("1\n7\n1\n0 1\n0 -1 0 0\n", "line 5", "algorithm"),
    ("1\n7\n1\n" + "9" * 1_000_000 + "\n", "line 4", "a number of 1,000,000 characters; expected at most 24"),
])
def test_bad_classic_files_name_file_line_and_field(tmp_path, text, where, words):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_ompi_rules(path)
    assert str(path) in str(error.value) and where in str(error.value) and words in str(error.value)


def test_version_2_reads_a_fifth_number_on_the_same_line_only(tmp_path):
    path = tmp_path / "v2.txt"
    path.write_text("rule-file-version-2\n1\n3\n1\n0 2\n0 4 0 0 8\n100 1 0 0\n")
    rules = read_ompi_rules(path).collectives["alltoall"][0].rules
    assert [(r.msg_lo, r.alg, r.max_requests) for r in rules] == [(0, 4, 8), (100, 1, None)]
    path.write_text("1\n3\n1\n0 1\n0 4 0 0 8\n")  # version 1: the 8 is not a field
    with pytest.raises(InputError, match="after the last rule"):
        read_ompi_rules(path)


def test_bad_json_names_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"collectives": {"bcast": [{"rules": [{"msg_size_min": -3, "alg": 1}]}]}}')
    with pytest.raises(InputError, match=r"collectives\.bcast\[0\]\.rules\[0\]\.msg_size_min"):
        read_ompi_rules(path)


def test_tunables_a_file_cannot_carry_are_refused():
    knomial8 = Choice(find(Collective.BCAST, "knomial"), {"radix": 8})
    with pytest.raises(InputError, match="radix"):
        rule_fields(knomial8, Collective.BCAST)
    assert rule_fields(Choice(find(Collective.BCAST, "knomial")), Collective.BCAST) == (7, 0, 0, None)
    with pytest.raises(InputError, match="not an Open MPI"):
        rule_fields(Choice(find(Collective.BCAST, "mpich.binomial")), Collective.BCAST)


MB = Choice(find(Collective.BCAST, "mpich.binomial"))
MT = Choice(find(Collective.BCAST, "mpich.tree"), {"tree_kval": 3})


def test_mpich_json_uses_upper_bounds_and_ends_every_level_with_any(tmp_path):
    sel = Selection(Collective.BCAST, "mpich", (Rule(1, 4, 0, 1023, MB), Rule(1, 4, 2048, 1 << 20, MT),
                                                 Rule(8, 16, 0, 100, MT)))
    doc = write_mpich_json([sel], tmp_path / "sel.json")
    assert json.loads((tmp_path / "sel.json").read_text()) == doc
    intra = doc["collective=bcast"]["comm_type=intra"]
    assert list(intra) == ["comm_size<=4", "comm_size=any"]
    assert list(intra["comm_size<=4"]) == ["avg_msg_size<=1023", "avg_msg_size=any"]
    assert intra["comm_size<=4"]["avg_msg_size<=1023"] == {"algorithm=MPIR_Bcast_intra_binomial": {}}
    assert intra["comm_size=any"]["avg_msg_size=any"] == {
        "algorithm=MPIR_Bcast_intra_tree": {"is_non_blocking=1": {}, "k=3": {}, "tree_type=kary": {}}}


def test_mpich_json_keeps_the_other_collectives_of_a_base_file(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"collective=allreduce": {"comm_type=intra": {"any": {
        "algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}}},
        "collective=bcast": {"comm_type=intra": {}, "comm_type=inter": {"any": {}}}}))
    sel = Selection(Collective.BCAST, "mpich", (Rule(1, 4, 0, 10, MB),))
    doc = write_mpich_json([sel], tmp_path / "sel.json", base=base)
    assert "collective=allreduce" in doc
    assert list(doc["collective=bcast"]) == ["comm_type=intra", "comm_type=inter"]
    with pytest.raises(InputError, match="not an MPICH"):
        write_mpich_json([GAPPY], tmp_path / "x.json")
