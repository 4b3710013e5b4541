"""``commcost rules show`` and ``rules diff`` (issue 16 item 7) on files written by hand, with what they decide
worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commcost.cli.main import main
from commcost.io.rules_view import detect_kind, rows_of

ROOT = Path(__file__).resolve().parent.parent

CLASSIC = """rule-file-version-2
1           # one collective
7           # bcast
2           # two communicator sizes
2           # from 2 ranks
2
0 6 0 0     # binomial from 0 bytes
8192 7 0 8192   # knomial, 8 KiB segments, from 8 KiB
16          # from 16 ranks
1
0 1 0 0     # basic_linear
"""

OMPI_JSON = {"rule_file_version": 3, "module": "tuned", "collectives": {"bcast": [
    {"comm_size_min": 2, "comm_size_max": 15, "rules": [{"msg_size_min": 0, "msg_size_max": "inf", "alg": 6}]},
    {"comm_size_min": 16, "rules": [{"msg_size_min": 0, "msg_size_max": 1023, "alg": 1},
                                    {"msg_size_min": 1024, "alg": "binomial"}]}]}}

HAN = """1
bcast 1
global_communicator 1
1 2
0 tuned
65536 han @simple
"""

MPICH = {"collective=bcast": {"comm_type=intra": {"comm_size<=8": {"avg_msg_size<=4096": {
    "algorithm=MPIR_Bcast_intra_binomial": {}}, "avg_msg_size=any": {
    "algorithm=MPIR_Bcast_intra_pipelined_tree": {"tree_type=kary": {}, "k=2": {}, "chunk_size=8192": {}}}},
    "comm_size=any": {"algorithm=MPIR_Bcast_intra_smp": {}}}}}


@pytest.fixture
def files(tmp_path):
    out = {"classic": tmp_path / "a.conf", "json": tmp_path / "b.json", "han": tmp_path / "han.conf",
           "mpich": tmp_path / "mpich.json"}
    out["classic"].write_text(CLASSIC)
    out["json"].write_text(json.dumps(OMPI_JSON))
    out["han"].write_text(HAN)
    out["mpich"].write_text(json.dumps(MPICH))
    return out


def test_the_kind_comes_from_the_content(files):
    assert [detect_kind(files[k]) for k in ("classic", "json", "han", "mpich")] == ["ompi", "ompi", "han", "mpich"]


def test_classic_rules_read_as_lower_bounds(files):
    kind, rows = rows_of(files["classic"])
    assert kind == "ompi/classic"
    assert [(r.procs, r.nbytes, r.algorithm, r.params) for r in rows] == [
        ("2..15", "0..8191", "6 binomial", {}),
        ("2..15", "8192..", "7 knomial", {"segsize": 8192}),
        ("16..", "0..", "1 basic_linear", {})]


def test_json_rules_keep_their_inclusive_ranges_and_named_algorithms(files):
    kind, rows = rows_of(files["json"])
    assert kind == "ompi/json"
    assert [(r.procs, r.nbytes, r.algorithm) for r in rows] == [
        ("2..15", "0..", "6 binomial"), ("16..", "0..1023", "1 basic_linear"), ("16..", "1024..", "6 binomial")]


def test_han_and_mpich_files_show_their_levels_and_conditions(files):
    _, han = rows_of(files["han"])
    assert [(r.level, r.procs, r.nbytes, r.algorithm) for r in han] == [
        ("global_communicator", "1..", "0..65535", "tuned"), ("global_communicator", "1..", "65536..", "han @simple")]
    _, mpich = rows_of(files["mpich"])
    assert [(r.procs, r.nbytes, r.algorithm) for r in mpich] == [
        ("comm_size<=8", "avg_msg_size<=4096", "MPIR_Bcast_intra_binomial"),
        ("comm_size<=8", "avg_msg_size=any", "MPIR_Bcast_intra_pipelined_tree"),
        ("comm_size=any", "any", "MPIR_Bcast_intra_smp")]
    assert mpich[1].params == {"tree_type": "kary", "k": "2", "chunk_size": "8192"}


def test_show_prints_a_table_and_json(files, capsys):
    assert main(["rules", "show", str(files["classic"])]) == 0
    out = capsys.readouterr().out
    assert "ompi/classic, 3 rules" in out and "7 knomial" in out and "segsize=8192" in out
    assert main(["rules", "show", str(files["mpich"]), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "mpich" and len(doc["rules"]) == 3


@pytest.mark.parametrize("content", ["", "{\"nothing\": 1}", "[1, 2]", "\xff\xfe\x00binary"])
def test_a_file_that_is_no_rules_file_is_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / "bad.conf"
    path.write_bytes(content.encode("latin-1"))
    assert main(["rules", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_diff_lists_where_the_files_choose_differently_by_hand(files, capsys):
    """Classic A: P 2..15 binomial below 8 KiB, knomial (8 KiB segments) from 8 KiB; P >= 16 basic_linear.
    JSON B: P 2..15 binomial; P >= 16 basic_linear below 1 KiB, binomial from 1 KiB. So they differ for
    P 2..15 from 8 KiB (knomial vs binomial) and for P >= 16 from 1 KiB (basic_linear vs binomial)."""
    assert main(["rules", "diff", str(files["classic"]), str(files["json"]), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["differences"]
    assert rows
    for r in rows:
        if r["procs"] < 16:
            assert r["msg_lo"] >= 8192 and r["a"] == "7 knomial (segsize=8192)" and r["b"] == "6 binomial"
        else:
            assert r["msg_lo"] >= 1024 and r["a"] == "1 basic_linear" and r["b"] == "6 binomial"
    assert {r["procs"] for r in rows} >= {2, 15, 16}
    assert any(r["procs"] == 2 and r["msg_lo"] == 8192 for r in rows)
    assert any(r["procs"] == 16 and r["msg_lo"] == 1024 for r in rows)


def test_diff_prices_both_choices_with_parameters(files, capsys):
    assert main(["rules", "diff", str(files["classic"]), str(files["json"]), "--format", "json",
                 "--params", str(ROOT / "examples/params/illustrative.toml"),
                 "--platform", str(ROOT / "examples/cluster/platform.toml"), "--model", "hockney", "--ppn", "8"]) == 0
    rows = json.loads(capsys.readouterr().out)["differences"]
    priced = [r for r in rows if r.get("a_s") and r.get("b_s")]
    assert priced
    for r in priced:
        assert r["penalty"] >= 1.0
        assert r["slower"] == ("A" if r["a_s"] > r["b_s"] else "B")


def test_diff_needs_all_three_pricing_options(files, capsys):
    assert main(["rules", "diff", str(files["classic"]), str(files["json"]), "--model", "hockney"]) == 2
    assert "--params" in capsys.readouterr().err
