"""FPMs, balancing and the column-based 2D partition (paper 000 section 2, Fig. 8, Fig. 10, Table 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.errors import InputError
from commcost.io.layout_file import read_layout_table
from commcost.io.partition_file import format_partition, read_partition, write_partition
from commcost.io.platform_file import load_platform
from commcost.io.process_layout_file import read_process_layout
from commcost.io.speeds_file import read_speeds
from commcost.kernels import Partition2D
from commcost.partition import SpeedFunction, balance, balanced_partition, column_groups, column_partition, imbalance
from commcost.partition.apportion import apportion
from commcost.partition.processes import processes_of_mapping, speeds_of
from commcost.platform.layout import place_layout

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "examples" / "paper000"
FERMI = ROOT / "examples" / "fermi"
FIG8_AREAS = [12998, 18104, 3640, 5320, 13640, 11834]


def fig8_partition() -> Partition2D:
    processes = read_process_layout(PAPER / "fig8_layout.txt")
    fpms = speeds_of(processes, read_speeds(PAPER / "fig8_speeds.txt"))
    return balanced_partition(fpms, 256, [p.host for p in processes])


def test_speed_function_interpolates_and_holds_the_ends():
    f = SpeedFunction(np.array([100.0, 200.0]), np.array([10.0, 30.0]))
    assert f(150.0) == pytest.approx(20.0)
    assert f(0.0) == 10.0 and f(1e6) == 30.0
    assert f.time(150.0) == pytest.approx(7.5)
    assert SpeedFunction.constant(5.0).is_constant


def test_constant_speeds_balance_proportionally():
    n = balance([SpeedFunction.constant(s) for s in (1.0, 3.0)], 100.0)
    assert n.tolist() == [25.0, 75.0]


def test_fpm_balance_equalizes_time():
    fpms = [SpeedFunction(np.array([0.0, 1000.0, 5000.0]), np.array([1.0, 4.0, 2.0]) * k) for k in (1, 2, 5)]
    n = balance(fpms, 6000.0)
    assert n.sum() == pytest.approx(6000.0)
    assert imbalance(fpms, n) == pytest.approx(1.0, abs=1e-6)


def test_apportion_sums_exactly_and_gives_everyone_one():
    shares = apportion(np.array([0.001, 1.0, 1.0, 1.0]), 10)
    assert shares.sum() == 10 and shares.min() >= 1
    assert apportion(np.array([124.0, 97.0, 35.0]), 256).tolist() == [124, 97, 35]


def test_fig8_partition_from_speeds():
    """Paper 000 Fig. 8: columns (p1 / p4), (p0 / p5), (p3 / p2) of widths 124, 97, 35."""
    part = fig8_partition()
    assert [g.tolist() for g in column_groups(np.array(FIG8_AREAS, float))] == [[1, 4], [0, 5], [3, 2]]
    assert part.x.tolist() == [124, 0, 221, 221, 0, 124]
    assert part.y.tolist() == [0, 0, 152, 0, 146, 134]
    assert part.w.tolist() == [97, 124, 35, 35, 124, 97]
    assert part.h.tolist() == [134, 146, 104, 152, 110, 122]
    assert part.area.tolist() == FIG8_AREAS
    assert part.node_of_rank().tolist() == [0, 0, 0, 1, 1, 1]


def test_partition_file_round_trip(tmp_path):
    part = fig8_partition()
    write_partition(part, tmp_path / "part.txt")
    again = read_partition(tmp_path / "part.txt")
    assert format_partition(again) == format_partition(part)
    assert (PAPER / "fig8_partition.txt").read_text() == format_partition(part)
    i, j = part.columns()
    assert i.tolist() == [1, 0, 2, 2, 0, 1] and j.tolist() == [0, 0, 1, 0, 1, 1]
    assert part.rank_intra().tolist() == [0, 1, 2, 0, 1, 2]


@pytest.mark.parametrize("text, expected", [
    ("#size 1\n#N 4\n#kb 1\nh 0 0 0 0 0 4 x\n", "line 4: field 'h': expected an integer from 0 to 2,147,483,647, got 'x'"),
    ("#size 1\n#N 4\nh 0 0 0 0 0 4 4\n", "missing header line(s) #kb"),
    ("#size 2\n#N 4\n#kb 1\nh 0 0 0 0 0 4 4\n", "#size is 2, but 1 process lines follow"),
    ("#size 1\n#N 4\n#kb 1\nh 0 0 0 0 0 4\n", "line 4: expected 8 fields"),
    ("#size 2\n#N 4\n#kb 1\nh 0 0 0 0 0 4 4\nh 1 0 0 0 0 4 4\n", "ranks 0 and 1 both cover block (row 0, column 0)"),
    ("#size 1\n#N 4\n#kb 1\nh 0 0 0 0 0 4 3\n", "the rectangles cover 12 of the 16 blocks"),
    ("#size 1\n#N 4\n#kb 1\nh 0 0 0 0 0 4 5\n", "rank 0: rectangle x=0 y=0 w=4 h=5 is not inside"),
])
def test_partition_file_errors_name_file_line_and_field(tmp_path, text, expected):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_partition(path)
    assert str(err.value).startswith(str(path)) and expected in str(err.value)


def test_speeds_and_layout_file_errors(tmp_path):
    bad = tmp_path / "speeds.txt"
    bad.write_text("gpu 100 -3\n")
    with pytest.raises(InputError, match=r"speeds.txt:line 1: field 'speed'"):
        read_speeds(bad)
    bad.write_text("gpu 4\ngpu 10 4\n")
    with pytest.raises(InputError, match="line 2: key 'gpu' is given again"):
        read_speeds(bad)
    layout = tmp_path / "layout.txt"
    layout.write_text("node0 cpu:4\nnode0 fpga\n")
    with pytest.raises(InputError, match=r"layout.txt:line 2: field 'kind'"):
        read_process_layout(layout)


def test_speed_lookup_order(tmp_path):
    path = tmp_path / "speeds.txt"
    path.write_text("core 10\ngpu 0 50\ngpu 1000 100\n1 7\n")
    processes = read_process_layout_text(tmp_path, "n0 cpu:4\nn0 cpu:2\nn1 gpu\n")
    fpms = speeds_of(processes, read_speeds(path))
    assert [float(f(500.0)) for f in fpms] == [40.0, 7.0, 75.0]


def read_process_layout_text(tmp_path, text):
    path = tmp_path / "layout.txt"
    path.write_text(text)
    return read_process_layout(path)


@pytest.mark.parametrize("n", [128, 256])
def test_table1_layouts_partition(n):
    """All sixteen layouts of paper 000 Table 1 place on Fermi and partition (GPU 8x a core, illustrative)."""
    platform, _ = load_platform(FERMI / "platform.toml")
    table = {"core": SpeedFunction.constant(1.0), "gpu": SpeedFunction(np.array([0.0, 2000.0]), np.array([4.0, 8.0]))}
    for row in read_layout_table(FERMI / "table1.txt").values():
        processes = processes_of_mapping(platform, place_layout(platform, row))
        part = balanced_partition(speeds_of(processes, table), n, [p.host for p in processes])
        assert part.nprocs == row.nprocs and int(part.area.sum()) == n * n
        assert len(set(part.hosts)) == row.nnodes


def test_partition_png(tmp_path):
    from commcost.report.partition_plot import plot_partition

    plot_partition(fig8_partition(), tmp_path / "part.png")
    assert (tmp_path / "part.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_columns_can_be_forced():
    part = column_partition(np.ones(6), 12, ["a"] * 6, block=1, columns=2)
    assert sorted(set(part.w.tolist())) == [6] and sorted(set(part.h.tolist())) == [4]


def _pairwise_overlap(x, y, w, h):
    """The P x P check first_overlap replaces, for small P: the lowest pair of ranks sharing a block."""
    from commcost.kernels.partition2d import overlap
    over = overlap(x[:, None], w[:, None], x, w) * overlap(y[:, None], h[:, None], y, h)
    np.fill_diagonal(over, 0)
    pairs = np.argwhere(np.triu(over))
    return None if len(pairs) == 0 else pairs


@pytest.mark.parametrize("swept", [False, True])
def test_overlaps_are_found_without_a_p_by_p_matrix(monkeypatch, swept):
    """first_overlap (a coverage grid over distinct edges, or a sweep over columns when the grid would be
    large) finds a pair exactly when the P x P check does, and a pair it finds does overlap."""
    import commcost.kernels.partition2d as p2d
    if swept:
        monkeypatch.setattr(p2d, "MAX_CELLS", 0)
    rng = np.random.default_rng(7)
    for _ in range(300):
        p = int(rng.integers(1, 9))
        x, y = rng.integers(0, 12, p), rng.integers(0, 12, p)
        w, h = rng.integers(1, 5, p), rng.integers(1, 5, p)
        found, pairs = p2d.first_overlap(x, y, w, h), _pairwise_overlap(x, y, w, h)
        assert (found is None) == (pairs is None)
        if found is not None:
            assert any(tuple(pair) == found for pair in pairs.tolist())


def test_a_million_rank_partition_validates_in_linear_memory():
    """1,000,000 one-block rectangles tiling a 1000 x 1000 matrix: the old P x P overlap check needed
    8 TB; the grid of distinct edges is 1001 x 1001. A moved rectangle is found."""
    n = 1000
    y, x = np.divmod(np.arange(n * n), n)
    ones = np.ones(n * n, np.int64)
    part = Partition2D(n, 1, tuple(f"node{r // 32}" for r in range(n * n)), x, y, ones, ones)
    assert part.nprocs == n * n
    x = x.copy()
    x[5] = 4  # rank 5 now covers rank 4's block (and block (0, 5) is left uncovered)
    with pytest.raises(InputError, match="ranks 4 and 5 both cover block"):
        Partition2D(n, 1, part.hosts, x, y, ones, ones)
