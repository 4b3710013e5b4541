"""The measurements CSV: round trip, resume without duplicates, errors by line and column, kill -9 safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from commcost.errors import InputError
from commcost.io.measurements import (
    COLUMNS, KEY_COLUMNS, Measurement, MeasurementStore, measurement_columns, read_measurements,
)

SRC = Path(__file__).resolve().parent.parent / "src"


def point(nbytes: int, **kw) -> Measurement:
    values = dict(benchmark="pingpong", nprocs=2, nbytes=nbytes, time_s_mean=1e-6 + nbytes * 1e-10,
                  channel="shm", nnodes=1, ppn=2, reps=100, time_s_median=1.1e-6, time_s_min=0.9e-6,
                  time_s_max=2e-6, time_s_std=1e-8, ci95_rel=0.01, converged=True, mpi="Open MPI 5.0.3",
                  host="node01", timestamp="2024-03-12T14:03:51+00:00")
    values.update(kw)
    return Measurement(**values)


def test_columns_are_the_documented_ones():
    assert COLUMNS[:8] == ("benchmark", "collective", "algorithm", "nprocs", "nnodes", "ppn", "channel", "nbytes")
    for name in ("segsize", "tau", "reps", "time_s_mean", "time_s_median", "time_s_min", "time_s_max",
                 "time_s_std", "ci95_rel", "mpi", "host", "timestamp", "source"):
        assert name in COLUMNS
    assert set(KEY_COLUMNS) <= set(COLUMNS)
    doc = (Path(__file__).resolve().parent.parent / "docs" / "file-formats.md").read_text()
    section = doc.split("## Measurements (CSV)")[1]
    for name in COLUMNS:
        assert f"`{name}`" in section, f"{name} is not documented"


def test_round_trip_keeps_every_value(tmp_path):
    path = tmp_path / "m.csv"
    store = MeasurementStore(path)
    rows = [point(0), point(1024, collective="bcast", algorithm="ompi.binomial", nprocs=8, segsize=8192,
                            channel="", source="a, b \"quoted\".out"),
            point(4096, tau=3, converged=False, time_s_median=None, host="")]
    assert store.extend(rows) == (3, 0)
    assert read_measurements(path) == rows
    assert MeasurementStore(path).rows() == rows
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS)


def test_a_file_of_the_columns_before_statistic_loads_and_grows_in_its_own_columns(tmp_path):
    """A file written before the statistic column: read as it is (the statistic from its benchmark: OSU's
    collective rows the mean over ranks), and appended in its 23 columns."""
    path = tmp_path / "old.csv"
    old = COLUMNS[:COLUMNS.index("statistic")]
    path.write_text(",".join(old) + "\n" + ",".join(point(8, benchmark="osu_bcast", collective="bcast",
                                                          algorithm="binomial").to_row(old)) + "\n")
    rows = read_measurements(path)
    assert rows[0].statistic == "" and rows[0].rank_statistic == "mean"
    store = MeasurementStore(path)
    assert store.append(point(16, statistic="max"))
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(old) and len(lines) == 3 and lines[2].count(",") == len(old) - 1
    assert read_measurements(path)[1].rank_statistic == "max"  # pingpong: no statistic of its own


def test_resume_skips_stored_points(tmp_path):
    path = tmp_path / "m.csv"
    store = MeasurementStore(path)
    assert store.append(point(1))
    assert not store.append(point(1, time_s_mean=5.0))  # same key: not written again
    assert store.has(point(1).key) and store.has(point(1)) and not store.has(point(2))
    again = MeasurementStore(path)
    assert again.keys() == {point(1).key}
    assert again.extend([point(1), point(2)]) == (1, 1)
    assert [m.nbytes for m in read_measurements(path)] == [1, 2]
    # a different run index is a different point
    assert again.append(point(1, run=1))


def test_numpy_columns(tmp_path):
    path = tmp_path / "m.csv"
    MeasurementStore(path).extend([point(8), point(16, ppn=None)])
    cols = measurement_columns(read_measurements(path))
    assert cols["nbytes"].dtype == np.int64 and cols["nbytes"].tolist() == [8, 16]
    assert cols["ppn"].dtype == np.float64 and cols["ppn"][0] == 2 and np.isnan(cols["ppn"][1])
    assert cols["time_s_mean"].tolist() == [1e-6 + 8e-10, 1e-6 + 16e-10]
    assert cols["channel"].tolist() == ["shm", "shm"]
    assert np.isnan(cols["segsize"]).all()


def test_a_line_cut_short_is_ignored_and_truncated(tmp_path):
    path = tmp_path / "m.csv"
    MeasurementStore(path).extend([point(1), point(2)])
    whole = path.read_bytes()
    path.write_bytes(whole + b"pingpong,,,2,1,2,shm,4096,,,0,100,1.0")  # a crash mid-row
    assert [m.nbytes for m in read_measurements(path)] == [1, 2]
    store = MeasurementStore(path)
    assert path.read_bytes() == whole
    store.append(point(3))
    assert [m.nbytes for m in read_measurements(path)] == [1, 2, 3]


def test_a_header_cut_short_is_rewritten(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("benchmark,collec")
    store = MeasurementStore(path)
    store.append(point(1))
    assert read_measurements(path) == [point(1)]


@pytest.mark.parametrize("line, message", [
    ("pingpong,,,2,1,2,shm,x,,,0,100,1e-06,,,,,,,,,,,,",
     "m.csv:line 3: nbytes: expected an integer >= 0, got 'x'"),
    ("pingpong,,,0,1,2,shm,8,,,0,100,1e-06,,,,,,,,,,,,",
     "m.csv:line 3: nprocs: expected an integer >= 1, got '0'"),
    ("pingpong,,,2,1,2,shm,8,,,0,100,-1,,,,,,,,,,,,",
     "m.csv:line 3: time_s_mean: expected a finite number >= 0, got '-1'"),
    ("pingpong,,,2,1,2,shm,8,,,0,100,nan,,,,,,,,,,,,",
     "m.csv:line 3: time_s_mean: expected a finite number >= 0, got 'nan'"),
    ("pingpong,,,2,1,2,shm,8,,,0,100,,,,,,,,,,,,,",
     "m.csv:line 3: time_s_mean: expected a value, got an empty cell"),
    ("pingpong,,,2,1,2,shm,8,,,0,100,1e-6,,,,,,maybe,,,,,,",
     "m.csv:line 3: converged: expected 1 or 0, got 'maybe'"),
    (",,,2,1,2,shm,8,,,0,100,1e-6,,,,,,,,,,,,",
     "m.csv:line 3: benchmark: expected a benchmark name, got an empty one"),
    ("pingpong,,,2,1,2,shm,8",
     "m.csv:line 3: expected 25 cells as in the header, got 8"),
    ("pingpong,,,2,1,2,shm,8,,,0,100," + "1" * 200_000 + ",,,,,,,,,,,,",  # issue 38: no csv.Error
     "m.csv:line 3: not a CSV line this reader takes (field larger than field limit (131072); expected short "
     "cells)"),
])
def test_errors_name_file_line_and_column(tmp_path, monkeypatch, line, message):
    monkeypatch.chdir(tmp_path)
    MeasurementStore("m.csv").append(point(1))
    with open("m.csv", "a") as f:
        f.write(line + "\n")
    with pytest.raises(InputError) as err:
        read_measurements("m.csv")
    assert str(err.value) == message
    with pytest.raises(InputError):
        MeasurementStore("m.csv")


def test_header_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.csv").write_text("benchmark,nprocs,nbytes,time_s_mean,colour\n")
    with pytest.raises(InputError, match=r"^a\.csv:line 1: unknown column 'colour'"):
        read_measurements("a.csv")
    Path("b.csv").write_text("benchmark,nprocs,time_s_mean\n")
    with pytest.raises(InputError, match=r"^b\.csv:line 1: missing column 'nbytes'"):
        read_measurements("b.csv")
    # a hand-made file with fewer columns, in another order, reads; the store will not append to it
    Path("c.csv").write_text("nbytes,time_s_mean,benchmark,nprocs\n64,2.5e-6,pingpong,2\n")
    assert read_measurements("c.csv") == [Measurement("pingpong", 2, 64, 2.5e-6)]
    with pytest.raises(InputError, match=r"^c\.csv:line 1: the columns are not in the order"):
        MeasurementStore("c.csv")


def test_measurement_checks_its_fields():
    with pytest.raises(InputError, match="nbytes: expected an integer >= 0"):
        Measurement("pingpong", 2, -1, 1e-6)
    with pytest.raises(InputError, match="host: expected a one-line string"):
        Measurement("pingpong", 2, 1, 1e-6, host="a\nb")


# ---------------------------------------------------------------- a real kill -9

NPOINTS = 400

WRITER = textwrap.dedent(f"""
    import sys, time
    from commcost.io.measurements import Measurement, MeasurementStore
    store = MeasurementStore(sys.argv[1])
    for i in range({NPOINTS}):
        m = Measurement("pingpong", 2, 8 * i, 1e-6 + i * 1e-9, channel="shm", reps=100 + i,
                        host="x" * (i % 50), source="crash-test")
        if store.has(m.key):
            continue
        time.sleep(0.002)  # "measure"
        store.append(m)
    print("done")
""")


def _writer(path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_kill_9_loses_no_finished_row_and_a_rerun_resumes(tmp_path):
    path = tmp_path / "m.csv"
    seen = []
    for target in (40, 150, 260):  # three crashes at different points
        proc = _writer(path)
        deadline = time.monotonic() + 60
        while _lines(path) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        rows = read_measurements(path)  # only complete rows, however the kill fell
        assert len({r.key for r in rows}) == len(rows)
        seen.append(len(rows))
        assert [r.nbytes for r in rows] == [8 * i for i in range(len(rows))]
    assert seen == sorted(seen) and seen[-1] < NPOINTS
    proc = _writer(path)  # the same command again, to the end
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    rows = read_measurements(path)
    assert [r.nbytes for r in rows] == [8 * i for i in range(NPOINTS)]
    assert [r.reps for r in rows] == [100 + i for i in range(NPOINTS)]
    assert len({r.key for r in rows}) == NPOINTS
    assert path.read_bytes().endswith(b"\n")
