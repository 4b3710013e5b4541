"""Issue 36 item 3: a priced schedule is freed as soon as nothing uses it, without the cycle collector.

A select prices candidate after candidate; at 1,024 ranks a ring allreduce
is 2 M transmissions, about 300 MB. Hockney's protocol law was read by a
recursive closure that held the placed schedule in a reference cycle, so
every candidate's schedule stayed alive until Python's collector happened
to run: `select allreduce --procs 1024 --ppn 4 --sizes 1MiB` peaked at
2.0 GB (816 MB once freed in time). Here every model prices a schedule
large enough to be folded, with the collector off, and the schedule must
be gone once the caller drops it.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.api import place

ROOT = Path(__file__).resolve().parents[1]
PARAMS = load_params(ROOT / "examples/params/illustrative.toml")
PLATFORM, _ = load_platform(ROOT / "examples/cluster/platform.toml")
PRICED = [name for name in sorted(MODELS) if name in PARAMS.sections]


def _ring(nprocs: int = 128, ppn: int = 4):
    """A ring allreduce of 32,512 transmissions (past the fold's threshold), placed 4 per node."""
    schedule = build(find(Collective.ALLREDUCE, "ring"), Case(Collective.ALLREDUCE, nprocs, 1 << 20, 0)).schedule
    return PlacedSchedule.of(schedule, PLATFORM, place(PLATFORM, nprocs, ppn=ppn))


@pytest.mark.parametrize("name", PRICED)
def test_a_priced_schedule_is_freed_without_the_cycle_collector(name):
    model = MODELS[name](PARAMS.for_model(name)).with_reduction(PARAMS.reduction())
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        placed = _ring()
        assert placed.schedule.ntransmissions > 20_000
        first = model.total_time_s(placed)
        assert np.isfinite(first) and first > 0
        assert model.total_time_s(placed) == first  # a second pricing (where folds are looked for and kept)
        model.statistic_s(placed, "mean")
        gone = [weakref.ref(placed), weakref.ref(placed.schedule)]
        del placed
        assert [ref() is None for ref in gone] == [True, True], f"{name} keeps the schedule in a reference cycle"
    finally:
        if was_enabled:
            gc.enable()
