"""Ring steps stored once as a repeated phase price and count exactly like the steps one by one.

Allgather ring, reduce_scatter ring and the allreduce ring's two halves (equal blocks) compact their
P-1 identical steps unless payloads are kept (``data=True``, which the data-flow checker uses); under
every model the compact schedule must give the same prices, counts and channel loads as the
step-by-step one. The bcast rings (Open MPI's scatter_allgather_ring, MPICH's scatter_ring_allgather)
are dependency schedules, which repeat nothing: each step waits for the previous step's transmissions.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.platform import Mapping

from test_schedule_repeat import assert_priced_alike, cluster

RINGS = [
    (Collective.ALLGATHER, "ompi.ring", 40),
    (Collective.REDUCE_SCATTER, "ompi.ring", 40),
    (Collective.ALLREDUCE, "ompi.ring", None),
    (Collective.ALLREDUCE, "ompi.segmented_ring", None),
]


@pytest.mark.parametrize("collective,name,nbytes", RINGS, ids=lambda x: getattr(x, "value", x))
@pytest.mark.parametrize("nprocs", [2, 5, 8, 13, 32])
def test_compact_ring_prices_like_its_steps(collective, name, nbytes, nprocs):
    algorithm = find(collective, name)
    case = Case(collective, nprocs, nbytes or 24 * nprocs, nprocs // 3)
    compact = build(algorithm, case).schedule
    steps = build(algorithm, case, data=True).schedule
    assert np.all(steps.repeat == 1)
    assert compact.repeat.max() == nprocs - 1
    assert compact.ntransmissions < steps.ntransmissions or nprocs == 2
    assert compact.transmissions_run == steps.transmissions_run
    assert compact.phases_run == steps.phases_run
    platform = cluster(4, 4)
    assert_priced_alike(compact, steps, platform, Mapping.round_robin(platform, nprocs))


@pytest.mark.parametrize("collective,name", [(Collective.ALLREDUCE, "ompi.ring")])
def test_unequal_blocks_stay_step_by_step(collective, name):
    """When P does not divide n the blocks differ in size, so the steps are recorded one by one."""
    assert np.all(build(find(collective, name), Case(collective, 6, 1000)).schedule.repeat == 1)
