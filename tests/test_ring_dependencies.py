"""Rings are dependency schedules: each rank's step waits for its own previous step (its send and the
reception of the block it forwards), not for a barrier over all ranks.

Allgather ring, reduce_scatter ring and the allreduce rings run P - 1 sendrecv steps. Under Hockney
and the LogGP family, with equal blocks, the rank behind the slowest link makes its P - 1 sends one
after another, so no ring beats (P - 1) max T, which is what a barrier after every step costs: the
dependency price equals the phased one (tested here on two channels, ranks round-robin). Under tau-Lop
ranks drift apart (processor sharing makes a step's duration depend on who runs beside it), so the two
differ; tests/test_taulop_dependencies.py holds tau-Lop's hand-worked cases.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.io.params_file import load_params
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping

from test_schedule_repeat import EX, cluster

PARAMS = load_params(EX / "params" / "illustrative.toml")
RINGS = [
    (Collective.ALLGATHER, "ompi.ring", 40),
    (Collective.REDUCE_SCATTER, "ompi.ring", 40),
    (Collective.ALLREDUCE, "ompi.ring", None),
    (Collective.ALLREDUCE, "ompi.segmented_ring", None),
]


@pytest.mark.parametrize("collective,name,nbytes", RINGS, ids=lambda x: getattr(x, "value", x))
@pytest.mark.parametrize("nprocs", [2, 5, 8, 13, 32])
def test_a_ring_waits_for_its_neighbour_not_for_a_barrier(collective, name, nbytes, nprocs):
    algorithm = find(collective, name)
    case = Case(collective, nprocs, nbytes or 24 * nprocs, nprocs // 3)
    s = build(algorithm, case).schedule
    assert s.has_dependencies and np.all(s.repeat == 1)
    for i in range(s.ntransmissions):  # at most the rank's previous send and one reception
        after = s.after(i)
        assert len(after) <= 2
        assert np.all((s.src[after] == s.src[i]) | (s.dst[after] == s.src[i]))
    platform = cluster(4, 4)
    placed = PlacedSchedule.of(s, platform, Mapping.round_robin(platform, nprocs))
    phased = PlacedSchedule.of(s.without_dependencies(), platform, placed.mapping)
    for model_name in ("hockney", "loggp"):
        model = MODELS[model_name](PARAMS.for_model(model_name))
        assert model.total_time_s(placed) == pytest.approx(model.total_time_s(phased), rel=1e-12), model_name
