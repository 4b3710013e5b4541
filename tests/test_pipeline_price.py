"""The phase-barrier baseline: tau-Lop prices a segmented tree pipeline with barriers from its tree alone,
equal to pricing the built schedule without its dependencies."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build
from commcost.io.params_file import load_params
from commcost.models import PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.platform import Mapping
from commcost.selection.pipeline_price import pipeline_time_s
from test_schedule_repeat import EX, cluster

MODEL = TauLop(load_params(EX / "params" / "illustrative.toml").for_model("taulop"))
PIPELINED = [a for a in algorithms() if a.pipelined]


def test_the_generic_open_mpi_trees_are_declared_pipelines():
    assert sorted(a.name for a in PIPELINED) == ["binary_tree", "binomial", "chain", "knomial", "pipeline"]


@pytest.mark.parametrize("algorithm", PIPELINED, ids=lambda a: a.key)
@pytest.mark.parametrize("mapping_kind", ["sequential", "round-robin"])
def test_pipeline_from_the_tree_equals_the_built_schedule(algorithm, mapping_kind):
    platform = cluster(8, 8)
    for nprocs in (2, 3, 9, 17, 40, 64):
        mapping = (Mapping.sequential(platform, nprocs, 8) if mapping_kind == "sequential"
                   else Mapping.round_robin(platform, nprocs))
        for params in ({"segsize": 1000}, {"segsize": 4096}, {"segsize": 1000, "fanout": 3}, {"radix": 3, "segsize": 512}):
            params = {k: v for k, v in params.items() if any(p.name == k for p in algorithm.params)}
            unit = build(algorithm, Case(Collective.BCAST, nprocs, 1, nprocs // 2), params).schedule.without_dependencies()
            placed_unit = PlacedSchedule.of(unit, platform, mapping)
            seg = params["segsize"]
            for nbytes in (seg + 1, 3 * seg, 7 * seg - 5, 40 * seg, 200 * seg + 17):
                schedule = build(algorithm, Case(Collective.BCAST, nprocs, nbytes, nprocs // 2), params).schedule
                expected = MODEL.total_time_s(PlacedSchedule.of(schedule.without_dependencies(), platform, mapping))
                nseg = -(-nbytes // seg)
                got = pipeline_time_s(MODEL, placed_unit, nseg, float(seg), float(nbytes - (nseg - 1) * seg))
                assert got == pytest.approx(expected, rel=1e-12), (nprocs, params, nbytes)


def test_it_refuses_what_is_not_a_phased_one_segment_pipeline():
    platform = cluster(2, 8)
    mapping = Mapping.sequential(platform, 8, 8)
    algorithm = next(a for a in PIPELINED if a.name == "binomial")
    segmented = build(algorithm, Case(Collective.BCAST, 8, 100_000), {"segsize": 1000}).schedule
    unit = build(algorithm, Case(Collective.BCAST, 8, 1), {"segsize": 1000}).schedule
    for wrong in (segmented, unit):  # dependency schedules: the closed form assumes barriers
        with pytest.raises(ValueError):
            pipeline_time_s(MODEL, PlacedSchedule.of(wrong, platform, mapping), 3, 10.0, 10.0)
    assert np.isfinite(MODEL.total_time_s(PlacedSchedule.of(segmented, platform, mapping)))
