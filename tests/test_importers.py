"""OSU and IMB-MPI1 outputs into the measurements store, from Python and from `commcost import`."""

from __future__ import annotations

from pathlib import Path

import pytest

import commcost.cli.import_command  # noqa: F401  (registers `commcost import`)
from commcost.cli.main import main
from commcost.errors import InputError
from commcost.io.imb_import import parse_imb, read_imb
from commcost.io.measurements import read_measurements
from commcost.io.osu_import import RunContext, fields_from_name, parse_osu, read_osu

DATA = Path(__file__).resolve().parent / "data"
OSU = DATA / "osu"
IMB = DATA / "imb" / "IMB-MPI1_np4.out"
PATTERN = "{algorithm}_{nprocs}ranks_run{run}.out"


# ---------------------------------------------------------------- OSU


def test_osu_latency_skips_launcher_noise_and_converts_to_seconds():
    rows = read_osu(OSU / "osu_latency_shm.out", RunContext(ppn=2, mpi="Open MPI 5.0.3"))
    assert len(rows) == 21
    first, last = rows[0], rows[-1]
    assert (first.benchmark, first.collective, first.nprocs, first.nnodes, first.channel) == \
        ("osu_latency", "", 2, 1, "shm")
    assert first.nbytes == 1 and first.time_s_mean == pytest.approx(0.21e-6)
    assert last.nbytes == 1048576 and last.time_s_mean == pytest.approx(112.37e-6)
    assert last.mpi == "Open MPI 5.0.3" and last.source.endswith("osu_latency_shm.out")
    assert last.timestamp  # the file's modification time


def test_osu_bw_is_stored_as_time_per_message():
    rows = read_osu(OSU / "osu_bw_net.out", RunContext(ppn=1))
    assert rows[0].channel == "net" and rows[0].nnodes == 2
    by_size = {r.nbytes: r.time_s_mean for r in rows}
    assert by_size[1] == pytest.approx(1 / 2.34e6)
    assert by_size[4194304] == pytest.approx(4194304 / 3201.12e6)
    bibw = read_osu(OSU / "osu_bibw.out")
    assert bibw[0].benchmark == "osu_bibw" and bibw[0].channel == "" and bibw[0].nprocs == 2


def test_osu_collective_with_full_statistics_and_a_name_pattern():
    path = OSU / "bcast" / "7_64ranks_run1.out"
    rows = read_osu(path, RunContext(ppn=32), name_pattern=PATTERN)
    assert {(r.benchmark, r.collective, r.algorithm, r.nprocs, r.ppn, r.nnodes, r.run) for r in rows} == \
        {("osu_bcast", "bcast", "7", 64, 32, 2, 1)}
    first = rows[0]
    assert first.nbytes == 1 and first.reps == 1000
    assert first.time_s_min < first.time_s_mean < first.time_s_max
    assert rows[-1].nbytes == 2**20 and rows[-1].reps == 100


def test_osu_allreduce_and_barrier():
    rows = read_osu(OSU / "osu_allreduce.out", RunContext(nprocs=8, algorithm="ring"))
    assert [r.nbytes for r in rows][:3] == [4, 8, 16]
    assert rows[0].collective == "allreduce" and rows[0].algorithm == "ring" and rows[0].nnodes is None
    (barrier,) = read_osu(OSU / "osu_barrier.out", RunContext(nprocs=8))
    assert (barrier.collective, barrier.nbytes, barrier.reps) == ("barrier", 0, 1000)
    assert barrier.time_s_mean == pytest.approx(3.42e-6) and barrier.time_s_max == pytest.approx(3.51e-6)


def test_name_patterns():
    assert fields_from_name(PATTERN, "runs/ompi.binomial_128ranks_run3.out") == \
        {"algorithm": "ompi.binomial", "nprocs": 128, "run": 3}
    assert fields_from_name("{mpi}/{algorithm}_*.txt", "x/ompi5/split_binary_tree_2024.txt") == \
        {"mpi": "ompi5", "algorithm": "split_binary_tree"}
    with pytest.raises(InputError, match=r"^a/b\.out: the file name 'b\.out' does not match --name-pattern"):
        fields_from_name(PATTERN, "a/b.out")
    with pytest.raises(InputError, match=r"^--name-pattern: unknown field \{colour\}"):
        fields_from_name("{colour}.out", "red.out")


BCAST = "# OSU MPI Broadcast Latency Test v7.3\n# Size       Avg Latency(us)\n1    1.5\n2    1.6\n"


@pytest.mark.parametrize("text, context, message", [
    (BCAST, RunContext(), "f.out: osu_bcast does not say how many ranks ran; give --nprocs"),
    (BCAST, RunContext(nprocs=4, collective="reduce"),
     "f.out:line 1: --collective says 'reduce' but the title says 'bcast'"),
    (BCAST + "4    x\n", RunContext(nprocs=4), "f.out:line 5: Latency(us): expected a number, got 'x'"),
    (BCAST + "4    1.7   9\n", RunContext(nprocs=4), "f.out:line 5: expected 2 values as in the header"),
    (BCAST + "4    -1\n", RunContext(nprocs=4), "f.out:line 5: Latency(us): expected a finite number >= 0"),
    ("# OSU MPI Latency Test v7.3\n# Size   Latency (us)\n", RunContext(),
     "f.out: no rows found under the osu_latency header"),
    ("hello\n1 2\n", RunContext(), "f.out: no OSU title line"),
    ("# OSU MPI Frobnicate Latency Test v7.3\n", RunContext(nprocs=4), "f.out:line 1: not an OSU test this reader knows"),
    ("# OSU MPI Latency Test\n# Size   Latency (us)  Colour\n1 2 3\n", RunContext(),
     "f.out:line 2: unknown column 'Colour'"),
    ("# OSU MPI Bandwidth Test v5.6\n# Size   Bandwidth (MB/s)\n1  0.00\n", RunContext(),
     "f.out:line 3: MB/s: a bandwidth of 0.00 for 1 bytes gives no time per message"),
    ("# OSU MPI Latency Test v7.3\n# Size   Latency (us)\n1 0.2\n", RunContext(collective="bcast"),
     "f.out:line 1: --collective 'bcast' given but osu_latency is point-to-point"),
    (BCAST, RunContext(nprocs=0), "--nprocs: expected an integer >= 1, got 0"),
])
def test_osu_errors_are_one_line_naming_file_and_line(text, context, message):
    with pytest.raises(InputError) as err:
        parse_osu(text, "f.out", context)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_name_that_disagrees_with_an_option_is_an_error():
    with pytest.raises(InputError, match=r"7_64ranks_run0\.out: --nprocs says 32 but the file name says 64"):
        read_osu(OSU / "bcast" / "7_64ranks_run0.out", RunContext(nprocs=32), name_pattern=PATTERN)


# ---------------------------------------------------------------- IMB


def test_imb_blocks_become_rows():
    rows = read_imb(IMB, RunContext(ppn=4, mpi="Intel MPI 2021.7"))
    by = {}
    for r in rows:
        by.setdefault((r.benchmark, r.nprocs), []).append(r)
    assert set(by) == {("imb_pingpong", 2), ("imb_pingping", 2), ("imb_allreduce", 2), ("imb_allreduce", 4),
                       ("imb_barrier", 2), ("imb_barrier", 4), ("imb_uniband", 2)}
    pingpong = by["imb_pingpong", 2]
    assert [r.nbytes for r in pingpong][:3] == [0, 1, 8]
    assert pingpong[0].time_s_mean == pytest.approx(0.20e-6) and pingpong[0].reps == 1000
    assert pingpong[-1].nbytes == 2097152 and pingpong[-1].reps == 160
    assert pingpong[0].channel == "shm" and pingpong[0].collective == ""
    allreduce = by["imb_allreduce", 4][1]
    assert allreduce.collective == "allreduce" and allreduce.nbytes == 1
    assert allreduce.time_s_min < allreduce.time_s_mean < allreduce.time_s_max
    (barrier,) = by["imb_barrier", 4]
    assert barrier.nbytes == 0 and barrier.time_s_mean == pytest.approx(2.08e-6)
    uniband = by["imb_uniband", 2]
    assert uniband[0].time_s_mean == pytest.approx(1 / 4.0e6)


IMB_BLOCK = ("# Benchmarking Bcast\n# #processes = 8\n#------\n"
             "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n"
             "            0         1000         0.03         0.04         0.03\n")


@pytest.mark.parametrize("text, message", [
    (IMB_BLOCK + "            4         1000         0.5\n", "f.out:line 6: expected 5 values"),
    (IMB_BLOCK + "            4         x            0.5 0.6 0.7\n",
     "f.out:line 6: #repetitions: expected an integer, got 'x'"),
    ("# Benchmarking Frobnicate\n", "f.out:line 1: IMB benchmark 'Frobnicate' is not one this reader knows"),
    ("#bytes #repetitions t[usec]\n0 1000 0.2\n", "f.out:line 1: a table before any '# Benchmarking NAME'"),
    ("# Benchmarking Bcast\n# #processes = 8\n #bytes #repetitions t_colour\n",
     "f.out:line 3: unknown column 't_colour'"),
    ("just text\n", "f.out: no '# Benchmarking NAME' block found"),
    ("# Benchmarking Bcast\n# #processes = 8\n", "f.out: no table rows found"),
])
def test_imb_errors(text, message):
    with pytest.raises(InputError) as err:
        parse_imb(text, "f.out")
    assert str(err.value).startswith(message)


# ---------------------------------------------------------------- the CLI


def test_cli_import_osu_with_a_name_pattern_and_no_duplicates(tmp_path, capsys):
    out = tmp_path / "m.csv"
    files = sorted(str(p) for p in (OSU / "bcast").glob("*.out"))
    argv = ["import", "osu", *files, "--ppn", "32", "--name-pattern", PATTERN, "--mpi", "Open MPI 5.0.3",
            "-o", str(out)]
    assert main(argv) == 0
    assert "44 points from 4 file(s)" in capsys.readouterr().out
    rows = read_measurements(out)
    assert len(rows) == 44 and len({r.key for r in rows}) == 44
    assert {(r.algorithm, r.run) for r in rows} == {("7", 0), ("7", 1), ("8", 0), ("8", 1)}
    assert main(argv) == 0  # again: nothing new
    assert "0 points from 4 file(s) appended to" in capsys.readouterr().out.replace("; 44 already there", "")
    assert len(read_measurements(out)) == 44
    assert main(["import", "osu", str(OSU / "osu_latency_shm.out"), "--ppn", "2", "-o", str(out)]) == 0
    assert len(read_measurements(out)) == 65


def test_cli_import_imb(tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert main(["import", "imb", str(IMB), "--ppn", "4", "--algorithm", "default", "-o", str(out)]) == 0
    rows = read_measurements(out)
    assert {r.benchmark for r in rows} == {"imb_pingpong", "imb_pingping", "imb_allreduce", "imb_barrier",
                                           "imb_uniband"}
    assert all(r.algorithm == "default" and r.ppn == 4 for r in rows)


def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "m.csv"
    bad = tmp_path / "bad.out"
    bad.write_text(BCAST + "4  oops\n")
    good = str(OSU / "osu_allreduce.out")
    assert main(["import", "osu", good, str(bad), "--nprocs", "4", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"commcost: {bad}:line 5: Latency(us): expected a number, got 'oops'"
    assert not out.exists()
    assert main(["import", "osu", good, "--name-pattern", "{x}.out", "-o", str(out)]) == 2
    assert capsys.readouterr().err.startswith("commcost: --name-pattern: unknown field {x}")
    assert main(["import", "imb", str(tmp_path / "missing.out"), "-o", str(out)]) == 2
    assert "cannot read the IMB output" in capsys.readouterr().err
    assert main(["import", "osu", good, "--nprocs", "-3", "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip() == "commcost: --nprocs: expected an integer >= 1, got -3"
    # issue 38: a row names one channel; a list is refused, not stored as a channel called 'a,b'
    assert main(["import", "osu", good, "--nprocs", "4", "--channel", "a,b", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--channel" in err and "expected one channel name" in err and "'a,b'" in err and "\n" not in err
    assert not out.exists()
