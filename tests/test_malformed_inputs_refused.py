"""Issue 38: inputs that were read without a word, or overflowed, now refused in one line (exit 2).

Each case is one of the issue's examples or what the fuzz suite's count of
"malformed and read without a word" found (tests/test_fuzz_inputs.py),
run through the command line as a user would: exit 2, one line on stderr
naming the file (and line or field), no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commcost.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
DATA = ROOT / "tests" / "data"
PARAMS = str(EX / "params" / "illustrative.toml")
CLUSTER = str(EX / "cluster" / "platform.toml")
PREDICT = ["predict", "--collective", "bcast", "--algorithm", "binomial", "--procs", "8", "--nbytes", "1KiB",
           "--model", "hockney"]


def one_line(argv: list[str], capsys) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def _platform(tmp_path: Path, count: str) -> str:
    path = tmp_path / "platform.toml"
    path.write_text(Path(CLUSTER).read_text().replace("count = 2048", f"count = {count}"))
    return str(path)


@pytest.mark.parametrize("count", ["10000000", "100000000000000000000000"])
def test_a_platform_past_a_million_nodes_is_refused_at_its_count(count, tmp_path, capsys):
    err = one_line([*PREDICT, "--platform", _platform(tmp_path, count), "--params", PARAMS], capsys)
    line = Path(CLUSTER).read_text().splitlines().index("count = 2048") + 1
    assert f"platform.toml:line {line}: nodes[0].count" in err and "limit of 1,048,576" in err


def test_a_schedule_phase_repeated_10_to_the_30_and_a_unit_of_1_5_bytes_are_refused(tmp_path, capsys):
    schedule = json.loads((EX / "paper000" / "summa_k80.json").read_text())
    for change, said in ((lambda s: s["phases"][0].update(repeat=10 ** 30), "phases[0].repeat: expected an integer "
                          "of at most 1,000,000,000"),
                         (lambda s: s["unit"].update(nbytes=1.5), "unit.nbytes: expected a whole number of bytes")):
        doc = json.loads(json.dumps(schedule))
        change(doc)
        path = tmp_path / "s.json"
        path.write_text(json.dumps(doc))
        err = one_line(["predict", "--schedule", str(path), "--platform", str(EX / "paper000" / "platform.toml"),
                        "--params", PARAMS, "--model", "taulop"], capsys)
        assert f"{path}:{said}" in err


def test_a_taulop_table_of_m_true_is_refused_naming_the_field(tmp_path, capsys):
    path = tmp_path / "p.toml"
    path.write_text('[taulop.shm]\nm = true\no_s = [1e-7]\nL_s = [[1e-6]]\n'
                    '[taulop.ib]\nm = [0]\no_s = [1e-7]\nL_s = [[1e-6]]\n')
    err = one_line([*PREDICT[:-2], "--model", "taulop", "--platform", CLUSTER, "--params", str(path)], capsys)
    assert "taulop.shm.m: expected a list of numbers, got True" in err


@pytest.mark.parametrize("size,value", [("inf", "15.42"), ("abc", "15.42"), ("131072", "NaN")])
def test_a_broken_osu_row_is_refused_not_skipped(size, value, tmp_path, capsys):
    text = (DATA / "osu" / "osu_latency_shm.out").read_text()
    path = tmp_path / "o.out"
    path.write_text(text.replace("131072                 15.42", f"{size}                 {value}"))
    assert "131072                 15.42" in text
    err = one_line(["import", "osu", str(path), "-o", str(tmp_path / "m.csv")], capsys)
    assert f"{path}:line 30:" in err


@pytest.mark.parametrize("junk", [b"\x00" * 8, b"\xff\xfe"])
def test_an_osu_or_imb_output_with_bytes_that_are_not_text_is_refused(junk, tmp_path, capsys):
    for kind, source in (("osu", DATA / "osu" / "osu_latency_shm.out"), ("imb", DATA / "imb" / "IMB-MPI1_np4.out")):
        data = source.read_bytes()
        at = data.index(b"\n", len(data) // 2) + 1
        path = tmp_path / f"x.{kind}.out"
        path.write_bytes(data[:at] + b"      " + junk + data[at:])
        err = one_line(["import", kind, str(path), "-o", str(tmp_path / "m.csv")], capsys)
        assert str(path) in err and "bytes that are not text" in err


def test_a_measurements_file_with_a_nul_or_a_date_that_is_none_is_refused(tmp_path, capsys):
    lines = (DATA / "fuzz" / "pingpong.csv").read_text().splitlines()
    header = lines[0].split(",")
    for cell, value, said in (("collective", "ping\x00pong", "control character"),
                              ("timestamp", "2026-11-25T03:15:21+inf:00", "timestamp: expected an ISO 8601")):
        cells = lines[1].split(",")
        cells[header.index(cell)] = value
        path = tmp_path / "m.csv"
        path.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
        err = one_line(["fit", str(path), "--model", "hockney", "-o", str(tmp_path / "p.toml")], capsys)
        assert f"{path}:line 2" in err and said in err


def test_a_speeds_key_no_process_looks_up_is_refused(tmp_path, capsys):
    path = tmp_path / "speeds.txt"
    path.write_text((EX / "paper000" / "fig8_speeds.txt").read_text().replace("\n0  12998", "\n-inf  12998"))
    err = one_line(["partition", "--layout", str(EX / "paper000" / "fig8_layout.txt"), "--speeds", str(path),
                    "--n", "256", "-o", str(tmp_path / "part.txt")], capsys)
    assert f"{path}:line 5" in err and "key '-inf': expected a rank number, cpu:K, gpu, core or default" in err


def test_an_mca_switch_that_is_no_boolean_is_refused(tmp_path):
    from commcost.errors import InputError
    from commcost.io.han_rules import mca_bool, read_mca_params

    assert [mca_bool(v) for v in ("1", "0", "2", "true", "No", "ENABLED", "nan", "", "1.0")] == \
        [True, False, True, True, False, True, None, None, None]
    conf = tmp_path / "mca-params.conf"
    text = (DATA / "fuzz" / "mca-params.conf").read_text()
    conf.write_text(text.replace("coll_tuned_use_dynamic_rules = 1", "coll_tuned_use_dynamic_rules = nan"))
    with pytest.raises(InputError, match=r"mca-params.conf:line \d+: coll_tuned_use_dynamic_rules: expected 0, 1"):
        read_mca_params(conf)


def test_a_json_rules_key_open_mpi_does_not_have_is_refused_naming_its_path(tmp_path, capsys):
    doc = json.loads((DATA / "fuzz" / "ompi-rules.json").read_text())
    doc["collectives"]["bcast"][0]["rules"][0]["comm_size_max"] = 7  # a block's bound, misplaced into a rule
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(doc))
    err = one_line(["rules", "show", str(path)], capsys)
    assert "collectives.bcast[0].rules[0].comm_size_max: unknown key 'comm_size_max'" in err


def test_a_matrix_with_a_nan_entry_is_refused(tmp_path):
    from commcost.errors import InputError
    from commcost.kernels.sparse import read_matrix

    text = (DATA / "fuzz" / "poisson2d_4.mtx").read_text().splitlines()
    last = text[-1].split()
    path = tmp_path / "a.mtx"
    path.write_text("\n".join([*text[:-1], f"{last[0]} {last[1]} nan"]) + "\n")
    with pytest.raises(InputError, match="a.mtx: expected finite entries"):
        read_matrix(path)


def test_launcher_noise_inside_an_osu_table_is_still_skipped(tmp_path, capsys):
    """A line with a word after its first field is noise, not a broken row: the rows are read as without it."""
    text = (DATA / "osu" / "osu_latency_shm.out").read_text()
    row = "131072                 15.42"
    noisy = text.replace(row, f"srun: retrying\nwarning 12 seconds\n{row}")
    for name, body in (("clean.out", text), ("noisy.out", noisy)):
        (tmp_path / name).write_text(body)
        assert main(["import", "osu", str(tmp_path / name), "-o", str(tmp_path / f"{name}.csv")]) == 0
    capsys.readouterr()
    rows = [(tmp_path / f"{n}.csv").read_text().count("\n") for n in ("clean.out", "noisy.out")]
    assert rows[0] == rows[1] > 10


def test_a_count_of_thousands_of_digits_is_refused_in_one_line_not_by_int(tmp_path, capsys, monkeypatch):
    """int() refuses more than 4,300 digits with a ValueError (a traceback): a mapping's PPN or seed, a process
    layout's count or cores, a table's count header, a Scotch mapping's numbers, a han rules file's numbers and
    the limits' variables were read by int() after isdigit(); now through commcost.units.whole_number (at most
    18 digits), each in its own words."""
    from commcost.calibration.fit_pricer import fit_threads
    from commcost.errors import InputError
    from commcost.io.process_layout_file import read_process_layout
    from commcost.io.text_lines import count_header

    digits = "9" * 5000
    for mapping in (f"sequential:{digits}", f"random:4:seed={digits}"):
        assert main([*PREDICT, "--params", PARAMS, "--platform", CLUSTER, "--mapping", mapping]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "as an integer >=" in err and "Traceback" not in err
    for line, said in ((f"h1 cpu:4 {digits}", "field 'count': a layout holds at most 10,000,000 processes"),
                       (f"h1 cpu:{digits} 2", "field 'kind': expected cpu:K")):
        path = tmp_path / "layout.txt"
        path.write_text(line + "\n")
        with pytest.raises(InputError, match=said):
            read_process_layout(path)
    with pytest.raises(InputError, match="with a count >= 1"):
        count_header(f"#rows {digits}", ("#rows",), "table.txt", 1)
    monkeypatch.setenv("COMMCOST_FIT_THREADS", digits)
    with pytest.raises(InputError, match="COMMCOST_FIT_THREADS"):
        fit_threads()
    from commcost.io.han_rules_read import read_han_rules
    from commcost.io.scotch_files import read_mapping

    for text in (f"{digits}\n0 0\n", f"1\n0 {digits}\n"):
        with pytest.raises(InputError, match="expected"):
            read_mapping(text, 1, "mapping.txt")
    from commcost.collectives import Collective, find
    from commcost.workflows.pricing import transfer_counts

    with pytest.raises(InputError, match="no bcast algorithm"):
        find(Collective.BCAST, digits)
    with pytest.raises(InputError, match="expected CHANNEL=K"):
        transfer_counts([f"shm={digits}"])
    han = (DATA / "fuzz" / "han-rules.conf").read_text().replace("18  # communicator sizes", f"{digits}  # sizes", 1)
    (tmp_path / "han.conf").write_text(han)
    with pytest.raises(InputError, match="a non-negative integer"):
        read_han_rules(tmp_path / "han.conf")


def test_the_readers_with_a_number_pattern_refuse_thousands_of_digits_in_one_line(tmp_path):
    """The other int()-after-a-digit-pattern readers: a GOAL file's num_ranks, rank, sizes, peers and tags, an IMB
    output's #processes, a classic Open MPI rules file's version header and a process layout table's c=K, M and
    counts gave int()'s ValueError traceback on more than 4,300 digits; each is refused naming its line, and an
    18-digit number (or one inside a GOAL label) is read as before."""
    from commcost.errors import InputError
    from commcost.io.goal_file import parse_goal
    from commcost.io.imb_import import read_imb
    from commcost.io.layout_file import read_layout_table
    from commcost.io.ompi_rules_read import read_ompi_rules

    digits = "9" * 5000
    for text, line in ((f"num_ranks {digits}\n", 1), (f"num_ranks 2\nrank {digits} {{\n}}\n", 2),
                       (f"num_ranks 2\nrank 0 {{\nl1: send {digits}b to 1 tag 0\n}}\n", 3),
                       (f"num_ranks 2\nrank 0 {{\nl1: send 8b to 1 tag {digits}\n}}\n", 3),
                       (f"num_ranks 1\nrank 0 {{\nl1: calc {digits}\n}}\n", 3)):
        with pytest.raises(InputError, match=f"x.goal:line {line}: a number of 5,000 digits; expected at most 18"):
            parse_goal(text, "x.goal")
    ok = parse_goal(f"num_ranks 2\nrank 0 {{\nl{'1' * 30}: send {'1' * 18}b to 1 tag 0\n}}\n"
                    f"rank 1 {{\nl2: recv {'1' * 18}b from 0 tag 0\n}}\n")
    assert ok.nbytes.tolist() == [float("1" * 18)]
    imb = (DATA / "imb" / "IMB-MPI1_np4.out").read_text()
    (tmp_path / "imb.out").write_text(imb.replace("#processes = 4", f"#processes = {digits}", 1))
    with pytest.raises(InputError, match="#processes: a count of 5,000 digits"):
        read_imb(tmp_path / "imb.out")
    (tmp_path / "rules.conf").write_text(f"rule-file-version-{digits}\n1\n7\n1\n4\n2\n0 1 0 0\n8192 6 0 0\n")
    with pytest.raises(InputError, match="rule-file-version-N: a version of 5,000 digits"):
        read_ompi_rules(tmp_path / "rules.conf")
    table = (EX / "fermi" / "table1.txt").read_text()
    for bad, said in ((table.replace("c=6", f"c={digits}", 1), "c=K with a K of 5,000 digits"),
                      (table.replace("M1    1+0  2", f"M1    1+0  {digits}", 1), "column 'c=6': a count of 5,000 digits; expected at most 18"),
                      (table.replace("M1    1+0", f"M1    {digits}+0", 1), "a node count of more than 18 digits")):
        (tmp_path / "table.txt").write_text(bad)
        with pytest.raises(InputError, match=said):
            read_layout_table(tmp_path / "table.txt")
