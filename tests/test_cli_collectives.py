"""``commcost algorithms`` and ``commcost predict --collective``: the registry from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commcost.cli.main import main

EX = Path(__file__).resolve().parent.parent / "examples"
BASE = ["predict", "--collective", "bcast", "--platform", str(EX / "cluster" / "platform.toml"),
        "--params", str(EX / "params" / "illustrative.toml"), "--model", "taulop"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_algorithms_lists_open_mpi_bcast_ids_and_parameters(capsys):
    code, out, _ = run(capsys, "algorithms", "--collective", "bcast")
    assert code == 0
    for ident, name in enumerate(["basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree",
                                  "binomial", "knomial", "scatter_allgather", "scatter_allgather_ring"], 1):
        line = next(line for line in out.splitlines() if f"ompi.{name} " in line)
        assert f" {ident} " in line
    assert "radix=" in out and "segsize=" in out and "mpich.binomial" in out


def test_algorithms_without_a_filter_lists_every_collective(capsys):
    code, out, _ = run(capsys, "algorithms")
    assert code == 0
    for collective in ("bcast", "scatter", "gather", "allgather", "reduce", "allreduce", "alltoall",
                       "reduce_scatter"):
        assert f"{collective}:" in out


def test_one_algorithm_priced(capsys):
    code, out, _ = run(capsys, *BASE, "--algorithm", "knomial", "--procs", "1024", "--ppn", "32",
                       "--nbytes", "64KiB", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["algorithm"] == "ompi.knomial" and doc["procs"] == 1024 and doc["nbytes"] == 65536
    assert doc["transmissions"] == 1023 and doc["time_s"] > 0


def test_all_algorithms_give_a_row_per_open_mpi_id(capsys):
    code, out, _ = run(capsys, *BASE, "--all-algorithms", "--procs", "256", "--ppn", "32", "--nbytes", "1MiB")
    assert code == 0
    rows = [line.split() for line in out.splitlines() if "ompi." in line]
    assert sorted(int(r[0]) for r in rows if r[0].isdigit()) == list(range(1, 10))
    assert sorted(r[0] for r in rows if not r[0].isdigit()) == ["ompi.han", "ompi.han_simple"]  # coll/han: no id
    assert "<- best" in out
    # the columns line up whatever the length of a name or of its parameters (mpich.pipelined_tree's are long)
    table = [line.replace("  <- best", "") for line in out.splitlines() if " us " in line or line.endswith("x")]
    assert any("tree_kval" in line for line in table) and len({len(line) for line in table}) == 1
    code, out, _ = run(capsys, *BASE, "--all-algorithms", "--procs", "100", "--nbytes", "4KiB",
                       "--param", "segsize=1KiB", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    ids = sorted(r["id"] for r in doc["results"] if r["library"] == "ompi" and r["id"] is not None)
    assert ids == list(range(1, 10))
    assert all(r["time_s"] > 0 for r in doc["results"])


@pytest.mark.parametrize("argv, message", [
    (["--algorithm", "knomial", "--procs", "8", "--nbytes", "lots"], "--nbytes: expected a size"),
    (["--algorithm", "nosuch", "--procs", "8", "--nbytes", "1KiB"], "no bcast algorithm 'nosuch'"),
    (["--algorithm", "knomial", "--procs", "8", "--nbytes", "1KiB", "--param", "radix=1"], "radix must be"),
    (["--algorithm", "knomial", "--procs", "8", "--nbytes", "1KiB", "--param", "fanout=2"], "has no parameter"),
    (["--algorithm", "knomial", "--nbytes", "1KiB"], "--collective needs --procs"),
    (["--algorithm", "knomial", "--procs", "8", "--nbytes", "1KiB", "--root", "9"], "root must be a rank"),
    (["--procs", "8", "--nbytes", "1KiB"], "needs --algorithm NAME or --all-algorithms"),
])
def test_bad_collective_options_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *BASE, *argv)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert message in err


def test_paper004_model_prices_the_algorithms_it_covers(capsys):
    argv = [a if a != "taulop" else "ompi_bcast_model" for a in BASE]
    code, out, _ = run(capsys, *argv, "--all-algorithms", "--procs", "64", "--ppn", "16", "--nbytes", "1MiB",
                       "--param", "segsize=8KiB", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert sorted(r["id"] for r in doc["results"]) == [1, 2, 3, 4, 5, 6]
    assert all(r["time_s"] > 0 and r["equation"].startswith("paper 004 eq.") for r in doc["results"])
    code, out, err = run(capsys, *argv, "--algorithm", "knomial", "--procs", "64", "--nbytes", "1MiB")
    assert code == 2 and "paper 004 has no model of ompi.knomial" in err
    code, out, err = run(capsys, *[a if a != "bcast" else "scatter" for a in argv], "--algorithm", "binomial",
                         "--procs", "64", "--nbytes", "1MiB")
    assert code == 2 and "expected --collective bcast" in err


def test_a_schedule_too_large_is_skipped_or_refused(capsys, monkeypatch):
    import commcost.collectives.recorder as recorder

    monkeypatch.setattr(recorder, "MAX_TRANSMISSIONS", 5000)
    monkeypatch.setattr(recorder.Recorder.__init__, "__defaults__", (False, 5000, None))  # data, limit, fold
    # 1,000,000 bytes are not 128 equal blocks: the ring's steps differ and are recorded one by one
    code, out, _ = run(capsys, *BASE, "--all-algorithms", "--procs", "128", "--ppn", "32", "--nbytes", "1000000")
    assert code == 0
    assert "not priced: ompi.scatter_allgather_ring (more than 5,000 transmissions)" in out
    assert "ompi.knomial" in out
    code, out, err = run(capsys, *BASE, "--algorithm", "scatter_allgather_ring", "--procs", "128", "--ppn", "32",
                         "--nbytes", "1000000")
    assert code == 2 and "exceed 5,000 transmissions" in err and len(err.strip().splitlines()) == 1


def test_all_algorithms_skip_the_two_proc_algorithms_beyond_two_ranks(capsys):
    argv = ["predict", "--collective", "allgather", *BASE[3:], "--all-algorithms", "--nbytes", "1KiB"]
    code, out, _ = run(capsys, *argv, "--procs", "8", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    ompi = [r for r in doc["results"] if r["library"] == "ompi"]
    assert sorted(r["id"] for r in ompi if r["id"] is not None) == [1, 2, 3, 4, 5, 7]
    assert {r["algorithm"] for r in ompi if r["id"] is None} == {"ompi.han", "ompi.han_simple"}  # coll/han's
    assert any("two_proc" in note for note in doc["skipped"])
    code, out, _ = run(capsys, *argv, "--procs", "2", "--format", "json")
    assert sorted(r["id"] for r in json.loads(out)["results"]
                  if r["library"] == "ompi" and r["id"] is not None) == list(range(1, 8))


@pytest.mark.parametrize("model, line", [("hockney", "beta_s_per_byte = 1e308"), ("loggp", "g_s = 1e308")])
def test_parameters_that_overflow_are_one_line_naming_the_file_not_inf(capsys, tmp_path, model, line):
    """Issue 38: a LogGP gap or a Hockney time per byte of 1e308 made inf times printed as a prediction."""
    text = (EX / "params" / "illustrative.toml").read_text()
    key = line.split(" = ")[0]
    bad = tmp_path / "bad.toml"
    bad.write_text("\n".join(line if row.startswith(f"{key} = ") else row for row in text.splitlines())
                   .replace('file = "', f'file = "{EX / "params"}/'))
    argv = [a if a != str(EX / "params" / "illustrative.toml") else str(bad) for a in BASE]
    code, out, err = run(capsys, *[a if a != "taulop" else model for a in argv], "--algorithm", "binomial",
                         "--procs", "64", "--nbytes", "1MiB")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(bad) in err and "time of inf s" in err and "expected parameters that keep times finite" in err
