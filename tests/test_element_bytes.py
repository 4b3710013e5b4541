"""A call counts elements, not bytes (issue 35: fit what the benchmark measured). OSU's reductions pass
size / sizeof(float) elements of MPI_FLOAT, and Open MPI's algorithms switch on the element count: the
ring allreduce runs recursive doubling while count < P. A row says its element size (or takes its
benchmark's), and the fit and evaluate-selection build each point's schedule for the library's count."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.calibration.fit_from_collectives import collective_points
from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.measurements import Measurement, MeasurementStore, read_measurements
from commcost.io.platform_file import load_platform
from commcost.models import PlacedSchedule
from commcost.models.hockney import Hockney, HockneyParams
from commcost.platform import Mapping
from commcost.selection.grid import price_sizes
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLATFORM = HERE.parent / "examples" / "cluster" / "platform.toml"


def _same(a, b) -> bool:
    return (np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst) and np.array_equal(a.nbytes, b.nbytes)
            and np.array_equal(a.combine, b.combine))


def test_a_ring_allreduce_of_few_floats_is_the_librarys_recursive_doubling():
    """64 bytes on 32 ranks: 64 one-byte elements run the ring (count >= P), 16 floats run recursive
    doubling on 16 elements of 4 bytes, as Open MPI does."""
    ring = find(Collective.ALLREDUCE, "ompi.ring")
    doubling = find(Collective.ALLREDUCE, "ompi.recursive_doubling")
    in_bytes = build(ring, Case(Collective.ALLREDUCE, 32, 64)).schedule
    in_floats = build(ring, Case(Collective.ALLREDUCE, 32, 64, element_bytes=4))
    assert in_bytes.ntransmissions == 2 * 31 * 32
    assert _same(in_floats.schedule, build(doubling, Case(Collective.ALLREDUCE, 32, 16)).schedule.scaled(4.0))
    assert in_floats.case.nbytes == 64 and in_floats.schedule.nbytes.sum() == 4 * 160 * 16
    # from P floats on, the ring: its blocks in whole elements
    large = build(ring, Case(Collective.ALLREDUCE, 32, 4 * 100, element_bytes=4)).schedule
    assert large.ntransmissions == 2 * 31 * 32 and set((large.nbytes % 4).tolist()) == {0.0}


def test_a_segment_size_in_bytes_becomes_a_count_of_elements():
    """A 4 KiB segment of 4-byte elements is 1,024 elements: the same 4 KiB transmissions as in bytes;
    a segment under one element is no segmentation (Open MPI's computed segcount)."""
    pipeline = find(Collective.REDUCE, "ompi.pipeline")
    in_bytes = build(pipeline, Case(Collective.REDUCE, 8, 65536), {"segsize": 4096}).schedule
    in_floats = build(pipeline, Case(Collective.REDUCE, 8, 65536, element_bytes=4), {"segsize": 4096}).schedule
    assert _same(in_bytes, in_floats)
    whole = build(pipeline, Case(Collective.REDUCE, 8, 65536, element_bytes=8), {"segsize": 4}).schedule
    assert whole.ntransmissions == 7 and whole.nbytes.max() == 65536
    with pytest.raises(InputError):
        Case(Collective.REDUCE, 8, 64, element_bytes=0)


def test_rows_say_their_element_size_or_take_their_benchmarks(tmp_path):
    row = dict(nprocs=8, nbytes=64, time_s_mean=1e-5, collective="allreduce", algorithm="ring")
    assert Measurement("osu_allreduce", **row).element_size == 4
    assert Measurement("imb_allreduce", **row).element_size == 4
    assert Measurement("osu_bcast", **{**row, "collective": "bcast"}).element_size == 1
    assert Measurement("collective", **row).element_size == 1
    assert Measurement("osu_allreduce", **row, element_bytes=8).element_size == 8
    path = tmp_path / "m.csv"
    MeasurementStore(path).append(Measurement("osu_allreduce", **row, element_bytes=8))
    assert read_measurements(path)[0].element_bytes == 8
    path.write_text(path.read_text().replace(",8\n", ",0\n"))
    with pytest.raises(InputError) as err:
        read_measurements(path)
    assert "line 2: element_bytes" in str(err.value) and "expected an integer >= 1" in str(err.value)


def test_the_fit_and_the_grid_price_the_librarys_count():
    """An OSU allreduce row of 64 bytes on 32 ranks is priced as recursive doubling on 16 floats; the
    selection grid prices the same schedule at that size, for the collective's end and for the mean."""
    platform, _ = load_platform(PLATFORM)
    rows = [Measurement("osu_allreduce", 32, n, 1e-5, collective="allreduce", algorithm="ring", ppn=16)
            for n in (64, 4096)]
    points, placed, _ = collective_points(rows, platform)
    assert [p.nbytes for p in points] == [64, 4096] and placed[0].schedule.ntransmissions == 160
    model = Hockney(HockneyParams.from_dict({"shm": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10},
                                             "ib": {"alpha_s": 2e-6, "beta_s_per_byte": 4e-10}}))
    ring = find(Collective.ALLREDUCE, "ompi.ring")
    mapping = Mapping.sequential(platform, 32, 16)
    for statistic in ("max", "mean"):
        grid = price_sizes(ring, {}, 32, [64, 4096], platform, mapping, model, statistic=statistic,
                           element_bytes=4)
        direct = [model.statistic_s(p, statistic) for p in placed]
        assert grid == pytest.approx(direct, rel=1e-12)
        assert price_sizes(ring, {}, 32, [64], platform, mapping, model, statistic=statistic)[0] != \
            pytest.approx(direct[0], rel=1e-3)


def test_a_reduce_scatter_row_of_the_whole_vector_is_priced_per_rank_block():
    """OSU's and IMB's reduce_scatter report the whole vector (recvcounts = size / sizeof(float) / P), where
    commcost's Case counts one rank's block: 4 KiB on 4 ranks is a 1 KiB block (256 floats), on 3 ranks 341
    floats; a vector smaller than one float per rank gives no point. Fitted as the whole vector, Peak's
    reduce_scatter rows were priced P times too large (measured / model about 1 / P at large sizes)."""
    platform, _ = load_platform(PLATFORM)
    row = dict(time_s_mean=1e-5, collective="reduce_scatter", algorithm="ring", ppn=4)
    assert Measurement("osu_reduce_scatter", 4, 4096, **row).case_nbytes == 1024
    assert Measurement("imb_reduce_scatter", 3, 4096, **row).case_nbytes == 341 * 4
    assert Measurement("osu_reduce_scatter", 8, 16, **row).case_nbytes == 0
    assert Measurement("collective", 4, 4096, **row).case_nbytes == 4096
    assert Measurement("osu_allgather", 4, 4096, **{**row, "collective": "allgather"}).case_nbytes == 4096
    rows = [Measurement("osu_reduce_scatter", 4, n, **row) for n in (16, 4096)]
    points, placed, _ = collective_points(rows, platform)
    assert [p.nbytes for p in points] == [4, 1024]
    ring = find(Collective.REDUCE_SCATTER, "ompi.ring")
    assert _same(placed[1].schedule, build(ring, Case(Collective.REDUCE_SCATTER, 4, 1024, element_bytes=4)).schedule)
