"""Tree pipelines store their steady steps once (a repeated phase) and price exactly like step by step."""

from __future__ import annotations

import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.io.params_file import load_params
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping
from test_schedule_repeat import EX, cluster

PARAMS = load_params(EX / "params" / "illustrative.toml")
PIPELINES = ["chain", "pipeline", "binary_tree", "binomial", "knomial", "split_binary_tree"]


@pytest.mark.parametrize("name", PIPELINES)
def test_compact_pipelines_price_like_their_steps(name):
    platform = cluster(8, 32)
    algorithm = find(Collective.BCAST, name)
    for nprocs in (2, 5, 33, 100):
        mapping = Mapping.sequential(platform, nprocs, 32)
        for nbytes, segsize in ((1 << 16, 1024), (1 << 16, 8192), (100_000, 1000), (5000, 1000), (70_000, 8192)):
            case = Case(Collective.BCAST, nprocs, nbytes, nprocs // 3)
            compact = build(algorithm, case, {"segsize": segsize}).schedule
            steps = build(algorithm, case, {"segsize": segsize}, data=True).schedule
            assert compact.transmissions_run == steps.transmissions_run
            assert compact.phases_run == steps.phases_run
            for model_name, cls in MODELS.items():
                model = cls(PARAMS.for_model(model_name))
                a = model.price(PlacedSchedule.of(compact, platform, mapping)).time_s
                b = model.price(PlacedSchedule.of(steps, platform, mapping)).time_s
                assert a == pytest.approx(b, rel=1e-12), (nprocs, nbytes, segsize, model_name)


def test_a_long_pipeline_on_a_shallow_tree_is_stored_in_few_phases():
    schedule = build(find(Collective.BCAST, "binomial"), Case(Collective.BCAST, 1024, 1 << 22),
                     {"segsize": 1024}).schedule
    assert schedule.phases_run == 10 + 4096 - 1
    assert schedule.nphases <= 2 * 10 + 1 and schedule.repeat.max() == 4096 - 10 + 1
