"""`commcost import` and `commcost fit` on real OSU 7.4 and IMB-MPI1 2021.11 outputs (tests/data/*/real).

Every expected value below was read off the files by eye, not produced by
the importers; the READMEs next to the files say how they were made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import commcost.cli.fit_command  # noqa: F401  (registers `commcost fit`)
import commcost.cli.import_command  # noqa: F401  (registers `commcost import`)
from commcost.cli.main import main
from commcost.errors import InputError
from commcost.io.imb_import import read_imb
from commcost.io.measurements import read_measurements
from commcost.io.osu_import import RunContext, read_osu
from commcost.io.params_file import load_params

DATA = Path(__file__).resolve().parent / "data"
OSU = DATA / "osu" / "real"
IMB = DATA / "imb" / "real"
LATENCY_PATTERN = "osu_latency_{channel}_run{run}.out"
BCAST_PATTERN = "{algorithm}_{nprocs}ranks_run{run}.out"
COLLECTIVE_PATTERN = "osu_{collective}_{nprocs}ranks*.out"


def powers(first: int, last: int) -> list[int]:
    """first, 2 first, ..., last."""
    sizes = [first]
    while sizes[-1] < last:
        sizes.append(sizes[-1] * 2)
    return sizes


def us(value: float) -> Any:
    """microseconds -> seconds, for approx comparisons."""
    return pytest.approx(value * 1e-6)


# ---------------------------------------------------------------- OSU

# file, pattern, benchmark, collective, nprocs, sizes, (first avg, last avg) in us
OSU_FILES = [
    ("latency/osu_latency_shm_run0.out", LATENCY_PATTERN, "osu_latency", "", 2, powers(1, 65536), (0.14, 21.13)),
    ("latency/osu_latency_shm_run1.out", LATENCY_PATTERN, "osu_latency", "", 2, powers(1, 65536), (0.17, 8.60)),
    ("latency/osu_latency_shm_run2.out", LATENCY_PATTERN, "osu_latency", "", 2, powers(1, 65536), (0.20, 7.28)),
    ("osu_latency_tail.out", None, "osu_latency", "", 2, powers(1, 4096), (0.17, 6.61)),
    ("osu_bcast_2ranks.out", COLLECTIVE_PATTERN, "osu_bcast", "bcast", 2, powers(1, 16384), (0.15, 11.61)),
    ("osu_bcast_4ranks.out", COLLECTIVE_PATTERN, "osu_bcast", "bcast", 4, powers(1, 16384), (0.13, 6.76)),
    ("osu_allreduce_4ranks.out", COLLECTIVE_PATTERN, "osu_allreduce", "allreduce", 4, powers(4, 16384),
     (33.18, 96.62)),
    ("osu_allreduce_4ranks_validation.out", COLLECTIVE_PATTERN, "osu_allreduce", "allreduce", 4, [4, 8],
     (18.07, 13.74)),
    ("osu_allgather_4ranks.out", COLLECTIVE_PATTERN, "osu_allgather", "allgather", 4, powers(1, 4096),
     (8.11, 35.35)),
    ("bcast/1_4ranks_run0.out", BCAST_PATTERN, "osu_bcast", "bcast", 4, powers(1, 16384), (0.16, 7.24)),
    ("bcast/2_4ranks_run0.out", BCAST_PATTERN, "osu_bcast", "bcast", 4, powers(1, 16384), (0.15, 7.55)),
    ("bcast/6_4ranks_run0.out", BCAST_PATTERN, "osu_bcast", "bcast", 4, powers(1, 16384), (1.89, 11.60)),
    ("bcast/7_4ranks_run0.out", BCAST_PATTERN, "osu_bcast", "bcast", 4, powers(1, 16384), (0.11, 6.91)),
    ("bcast/7_4ranks_run1.out", BCAST_PATTERN, "osu_bcast", "bcast", 4, powers(1, 16384), (0.12, 9.73)),
]


def test_every_real_osu_file_is_covered():
    listed = {name for name, *_ in OSU_FILES} | {"osu_bw.out", "osu_latency_alltypes.out"}
    assert {p.relative_to(OSU).as_posix() for p in OSU.rglob("*.out")} == listed


@pytest.mark.parametrize("name, pattern, benchmark, collective, nprocs, sizes, first_last", OSU_FILES,
                         ids=[f[0] for f in OSU_FILES])
def test_real_osu_file(name, pattern, benchmark, collective, nprocs, sizes, first_last):
    rows = read_osu(OSU / name, RunContext(nnodes=1), name_pattern=pattern)
    assert [r.nbytes for r in rows] == sizes
    assert {(r.benchmark, r.collective, r.nprocs, r.nnodes) for r in rows} == {(benchmark, collective, nprocs, 1)}
    assert rows[0].time_s_mean == us(first_last[0]) and rows[-1].time_s_mean == us(first_last[1])
    assert all(r.source == str(OSU / name) for r in rows)
    if not collective:
        assert {r.channel for r in rows} == {"shm"}  # from the name, or 2 ranks on one node


def test_real_osu_latency_runs_and_channel_from_the_name():
    rows = [r for run in range(3) for r in read_osu(OSU / "latency" / f"osu_latency_shm_run{run}.out",
                                                      name_pattern=LATENCY_PATTERN)]
    assert {(r.channel, r.nnodes) for r in rows} == {("shm", None)}
    assert sorted({r.run for r in rows}) == [0, 1, 2]
    assert len({r.key for r in rows}) == 51
    by_size = {r.nbytes: r.time_s_mean for r in rows if r.run == 0}
    assert by_size[512] == us(2.25) and by_size[32768] == us(72.82)  # noisy points are kept as measured


def test_real_osu_full_statistics():
    rows = read_osu(OSU / "osu_allreduce_4ranks.out", RunContext(nprocs=4))
    first, last = rows[0], rows[-1]
    assert (first.time_s_min, first.time_s_max, first.reps) == (us(32.51), us(33.55), 200)
    assert (last.time_s_min, last.time_s_max, last.reps) == (us(94.56), us(98.50), 200)
    (alg6_512,) = [r for r in read_osu(OSU / "bcast" / "6_4ranks_run0.out", name_pattern=BCAST_PATTERN)
                   if r.nbytes == 512]
    assert (alg6_512.algorithm, alg6_512.time_s_min, alg6_512.time_s_mean, alg6_512.time_s_max) == \
        ("6", us(0.12), us(5.81), us(8.16))


def test_real_osu_tail_latencies_give_the_median():
    rows = read_osu(OSU / "osu_latency_tail.out")
    assert rows[0].time_s_median == us(0.16) and rows[-1].time_s_median == us(2.55)
    assert rows[-1].time_s_min is None and rows[-1].reps is None


def test_real_osu_validation_fail_is_skipped_with_a_note():
    notes: list[str] = []
    rows = read_osu(OSU / "osu_allreduce_4ranks_validation.out", RunContext(nprocs=4), notes=notes)
    assert [r.nbytes for r in rows] == [4, 8] and rows[0].reps == 100
    assert notes == [f"{OSU / 'osu_allreduce_4ranks_validation.out'}:line 7: validation Fail, row skipped"]


def test_real_osu_bw_is_time_per_message():
    rows = read_osu(OSU / "osu_bw.out", RunContext(nnodes=1))
    assert [r.nbytes for r in rows] == powers(1, 65536)
    assert rows[0].time_s_mean == pytest.approx(1 / 0.08e6)
    assert rows[-1].time_s_mean == pytest.approx(65536 / 1789.84e6)
    assert {(r.benchmark, r.nprocs, r.channel) for r in rows} == {("osu_bw", 2, "shm")}


def test_real_osu_all_datatypes_needs_a_datatype():
    path = OSU / "osu_latency_alltypes.out"
    with pytest.raises(InputError, match=r"alltypes\.out:line 16: a second datatype table \(MPI_INT after "
                                         r"MPI_CHAR"):
        read_osu(path)
    char = read_osu(path, datatype="MPI_CHAR")
    assert [r.nbytes for r in char] == powers(1, 1024) and char[0].time_s_mean == us(0.39)
    for datatype, last in (("MPI_INT", 0.36), ("MPI_FLOAT", 0.36)):
        rows = read_osu(path, datatype=datatype)
        assert [r.nbytes for r in rows] == powers(4, 1024)
        assert rows[0].time_s_mean == us(0.19) and rows[-1].time_s_mean == us(last)
    with pytest.raises(InputError, match="--datatype MPI_DOUBLE: no such table; the file has MPI_CHAR, MPI_INT, "
                                         "MPI_FLOAT"):
        read_osu(path, datatype="MPI_DOUBLE")


def test_real_osu_point_to_point_runs_on_two_ranks():
    with pytest.raises(InputError, match="osu_bw.out:line 2: osu_bw runs on exactly 2 ranks, but nprocs is 4"):
        read_osu(OSU / "osu_bw.out", RunContext(nprocs=4))


def test_real_osu_collective_needs_nprocs():
    with pytest.raises(InputError, match="osu_bcast does not say how many ranks ran"):
        read_osu(OSU / "osu_bcast_4ranks.out")


# ---------------------------------------------------------------- IMB

IMB_FILES = [p.name for p in sorted(IMB.glob("*.out"))]


def test_every_real_imb_file_is_covered():
    assert IMB_FILES == ["IMB-MPI1_bcast_alg6_run0.out", "IMB-MPI1_bcast_alg7_run0.out", "IMB-MPI1_multi0_np4.out",
                         "IMB-MPI1_np4.out", "IMB-MPI1_pingpong_2ranks.out"]


def test_real_imb_multi_mode_is_refused_on_its_line():
    with pytest.raises(InputError) as err:
        read_imb(IMB / "IMB-MPI1_multi0_np4.out")
    assert str(err.value) == (f"{IMB / 'IMB-MPI1_multi0_np4.out'}:line 32: IMB -multi output (Multi-PingPong: "
                              "groups of ranks running at once) is not read: no column holds the number of groups; "
                              "run IMB-MPI1 without -multi")


def blocks(rows) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault((r.benchmark, r.collective, r.nprocs), []).append(r)
    return out


def test_real_imb_pingpong():
    rows = read_imb(IMB / "IMB-MPI1_pingpong_2ranks.out", RunContext(channel="shm"))
    assert [r.nbytes for r in rows] == [0, *powers(1, 65536)]
    assert {(r.benchmark, r.collective, r.nprocs, r.channel) for r in rows} == {("imb_pingpong", "", 2, "shm")}
    assert (rows[0].time_s_mean, rows[0].reps) == (us(0.15), 1000)
    assert (rows[-1].time_s_mean, rows[-1].reps) == (us(7.39), 640)
    assert {r.timestamp for r in rows} == {"2026-11-23T19:08:17"}  # the header's Date, not the file's mtime


def test_real_imb_several_benchmarks_in_one_file():
    rows = read_imb(IMB / "IMB-MPI1_np4.out", RunContext(nnodes=1))
    by = blocks(rows)
    sizes = [0, *powers(1, 16384)]
    assert {k: [r.nbytes for r in v] for k, v in by.items()} == {
        ("imb_pingpong", "", 2): sizes,
        ("imb_bcast", "bcast", 2): sizes,
        ("imb_bcast", "bcast", 4): sizes,
        ("imb_allreduce", "allreduce", 2): [0, *powers(4, 16384)],
        ("imb_allreduce", "allreduce", 4): [0, *powers(4, 16384)],
    }
    assert len(rows) == 76
    pingpong = by["imb_pingpong", "", 2]
    assert pingpong[0].time_s_mean == us(1.70) and pingpong[-1].time_s_mean == us(6.67)
    assert {r.channel for r in pingpong} == {"shm"}  # 2 ranks on one node
    one_byte = by["imb_bcast", "bcast", 2][1]
    assert (one_byte.time_s_min, one_byte.time_s_max, one_byte.time_s_mean, one_byte.reps) == \
        (us(0.15), us(4.86), us(2.51), 200)
    last = by["imb_allreduce", "allreduce", 4][-1]
    assert (last.time_s_min, last.time_s_max, last.time_s_mean) == (us(40.94), us(41.93), us(41.55))
    assert {r.timestamp for r in rows} == {"2026-11-23T19:08:18"}


@pytest.mark.parametrize("algorithm, at_4096", [("6", 22.57), ("7", 4.39)])
def test_real_imb_forced_bcast_algorithms(algorithm, at_4096):
    path = IMB / f"IMB-MPI1_bcast_alg{algorithm}_run0.out"
    rows = read_imb(path, name_pattern="IMB-MPI1_bcast_alg{algorithm}_run{run}.out")
    assert [r.nbytes for r in rows] == [0, *powers(1, 16384)]
    assert {(r.benchmark, r.collective, r.algorithm, r.nprocs, r.run) for r in rows} == \
        {("imb_bcast", "bcast", algorithm, 4, 0)}
    assert {r.nbytes: r.time_s_mean for r in rows}[4096] == us(at_4096)


# ---------------------------------------------------------------- the CLI, end to end


def test_cli_imports_every_real_file(tmp_path, capsys):
    out = tmp_path / "m.csv"
    runs = [
        ["osu", *(str(p) for p in sorted((OSU / "latency").glob("*.out"))), "--name-pattern", LATENCY_PATTERN],
        ["osu", *(str(p) for p in sorted((OSU / "bcast").glob("*.out"))), "--name-pattern", BCAST_PATTERN],
        ["osu", *(str(OSU / n) for n in ("osu_bcast_2ranks.out", "osu_bcast_4ranks.out", "osu_allreduce_4ranks.out",
                                         "osu_allgather_4ranks.out")), "--name-pattern", COLLECTIVE_PATTERN],
        ["osu", str(OSU / "osu_allreduce_4ranks_validation.out"), "--nprocs", "4", "--run", "1"],
        ["osu", str(OSU / "osu_bw.out"), str(OSU / "osu_latency_tail.out"), "--run", "3"],
        ["osu", str(OSU / "osu_latency_alltypes.out"), "--datatype", "MPI_INT", "--run", "4"],
        ["imb", *(str(IMB / n) for n in IMB_FILES[:2]), "--name-pattern", "IMB-MPI1_bcast_alg{algorithm}_run{run}.out"],
        ["imb", str(IMB / "IMB-MPI1_np4.out"), "--run", "1"],
        ["imb", str(IMB / "IMB-MPI1_pingpong_2ranks.out"), "--run", "2"],
    ]
    counts = [51, 75, 56, 2, 30, 9, 32, 76, 18]
    notes = []
    for argv, count in zip(runs, counts):
        assert main(["import", *argv, "--nnodes", "1", "-o", str(out)]) == 0
        captured = capsys.readouterr()
        assert f"{count} points from" in captured.out and "already there" not in captured.out
        notes += captured.err.splitlines()
    assert notes == [f"commcost: note: {OSU / 'osu_allreduce_4ranks_validation.out'}:line 7: "
                     "validation Fail, row skipped"]
    rows = read_measurements(out)
    assert len(rows) == sum(counts) and len({r.key for r in rows}) == sum(counts)


def test_cli_import_then_fit_hockney_on_real_pingpongs(tmp_path, capsys):
    out = tmp_path / "m.csv"
    latency = sorted(str(p) for p in (OSU / "latency").glob("*.out"))
    assert main(["import", "osu", *latency, "--name-pattern", LATENCY_PATTERN, "--mpi", "Open MPI 5.0.11",
                 "-o", str(out)]) == 0
    assert main(["import", "imb", str(IMB / "IMB-MPI1_pingpong_2ranks.out"), "--channel", "shm",
                 "--mpi", "Open MPI 5.0.11", "-o", str(out)]) == 0
    assert main(["import", "osu", str(OSU / "osu_bw.out"), "--channel", "shm", "-o", str(out)]) == 0
    capsys.readouterr()
    params_path = tmp_path / "shm.toml"
    assert main(["fit", str(out), "--model", "hockney", "-o", str(params_path)]) == 0
    report = capsys.readouterr().out
    assert f"hockney fitted from 69 points of {out} -> {params_path}" in report
    assert "from imb_pingpong (18), osu_latency (51)" in report
    assert "left out: 17 rows of osu_bw" in report
    params = load_params(params_path)
    assert params.meta["points"] == 69 and params.meta["benchmarks"] == ["imb_pingpong", "osu_latency"]
    assert params.meta["mpi"] == ["Open MPI 5.0.11"]
    shm = params.for_model("hockney")
    shm = shm.channels["shm"] if hasattr(shm, "channels") else shm["shm"]
    # a shared-memory ping-pong of this machine: alpha some 0.1-0.3 us, beta some 0.1-1 ns per byte (noisy runs)
    assert 0.05e-6 < shm.alpha_s < 0.5e-6
    assert 0.05e-9 < shm.beta_s_per_byte < 1e-9

    only = tmp_path / "osu.toml"
    assert main(["fit", str(out), "--model", "hockney", "-o", str(only), "--benchmark", "osu_latency"]) == 0
    assert "hockney fitted from 51 points" in capsys.readouterr().out
    assert main(["fit", str(out), "--model", "hockney", "-o", str(only), "--benchmark", "osu_lat"]) == 2
    assert capsys.readouterr().err.strip() == (f"commcost: {out}:--benchmark: no rows of benchmark 'osu_lat'; "
                                               "the file has imb_pingpong, osu_bw, osu_latency")


def test_cli_fit_says_when_imported_pingpongs_lack_a_channel(tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert main(["import", "imb", str(IMB / "IMB-MPI1_pingpong_2ranks.out"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["fit", str(out), "--model", "hockney", "-o", str(tmp_path / "p.toml")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"commcost: {out}: no measurements to fit hockney from; expected point-to-point rows with a channel "
        "(18 point-to-point rows have no channel: import them with --channel shm|net, or --nnodes/--ppn)")
