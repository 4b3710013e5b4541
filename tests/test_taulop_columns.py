"""tau-Lop's event loop walked once for many parameter sets (issue 37 item 1): every set's statistic is, to the
last bit, what tau-Lop prices alone, whether its walk kept to the first set's order of events or was found to
part from it (then priced again alone); and a fit that prices its finite differences so writes the same
parameters as one that prices them one by one."""

from __future__ import annotations

import numpy as np
import pytest

import commcost.models.taulop.dependency_columns as columns
from commcost.calibration.fit_from_collectives import Point, fit_model, pricer
from commcost.collectives import Case, Collective, build, find
from commcost.io.platform_file import load_platform
from commcost.models import PlacedSchedule
from commcost.models.base import STATISTICS
from commcost.models.parameter_sets import statistics_s
from commcost.platform import Mapping

PLATFORM = """
name = "pairs"
[[node_types]]
name = "n"
cores = 8
cores_per_cache = 2
[[nodes]]
name = "a{i}"
type = "n"
count = 2
[[channels]]
name = "pair"
level = "cache"
transfers = ["pair", "pair"]
[[channels]]
name = "shm"
level = "node"
transfers = ["shm", "shm"]
contention = "node"
[[channels]]
name = "net"
level = "world"
transfers = ["shm", "net", "shm"]
contention = "node"
"""

CASES = [("bcast", "ompi.basic_linear"), ("bcast", "ompi.binomial"), ("bcast", "ompi.pipeline"),
         ("bcast", "ompi.scatter_allgather"), ("gather", "ompi.basic_linear"), ("gather", "ompi.linear_sync"),
         ("reduce", "ompi.linear"), ("reduce", "ompi.binary"), ("allreduce", "ompi.ring"),
         ("allreduce", "ompi.recursive_doubling"), ("alltoall", "ompi.pairwise"), ("allgather", "ompi.ring")]
TABLES = ["pair", "shm", "net"]


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = tmp_path_factory.mktemp("platform") / "platform.toml"
    path.write_text(PLATFORM)
    return load_platform(path)[0]


def _placed(platform, collective: str, name: str, nprocs: int, nbytes: int, ppn: int) -> PlacedSchedule:
    coll = Collective(collective)
    schedule = build(find(coll, name), Case(coll, nprocs, nbytes)).schedule
    return PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, nprocs, min(ppn, nprocs)))


def _theta(rng) -> np.ndarray:
    """o, L, G of each table (the fit's family) and a reduction rate, drawn around a plausible machine."""
    scale = {"pair": 0.5, "shm": 1.0, "net": 3.0}
    out = []
    for table in TABLES:
        s = scale[table]
        out += [s * rng.uniform(0.1, 1) * 1e-6, s * rng.uniform(0.2, 2) * 1e-6, s * rng.uniform(0.5, 2) * 1e-10]
    return np.array(out + [rng.uniform(1e-11, 1e-9)])


def _sets(price, rng) -> list:
    """A fit's columns at a random theta (each parameter nudged by 1e-3 in turn) and three sets drawn apart."""
    theta = _theta(rng)
    thetas = [theta] + [theta + np.where(np.arange(len(theta)) == j, 1e-3 * theta[j], 0.0)
                        for j in range(len(theta))] + [_theta(rng) for _ in range(3)]
    return [price.model_at(t) for t in thetas]


def _recorded(monkeypatch) -> list:
    """The walks to come, recorded: per walk, which sets kept to their own run (:func:`event_loop_columns`'s
    flags)."""
    walks, walk = [], columns.event_loop_columns

    def recording(*args):
        out = walk(*args)
        walks.append(out[2])
        return out
    monkeypatch.setattr(columns, "event_loop_columns", recording)
    return walks


@pytest.mark.parametrize("collective,name", CASES)
def test_sets_walked_together_are_each_priced_as_alone(platform, collective, name, monkeypatch):
    """Every statistic of every set equals tau-Lop's own, bit for bit: on one node and two, with receive queues
    and reductions, eager sizes and sizes past the tables' grid; the sets drawn apart part ways from the
    first set's walk somewhere, and are priced again alone."""
    rng = np.random.default_rng(abs(hash((collective, name))) % 2**32)
    walks = _recorded(monkeypatch)
    for nprocs, nbytes, ppn in ((8, 64, 8), (6, 2048, 6), (12, 16384, 6), (16, 200, 8)):
        placed = _placed(platform, collective, name, nprocs, nbytes, ppn)
        price = pricer("taulop", [placed], TABLES, ["mean"], ("reduction_s_per_byte",))
        models = _sets(price, rng)
        for statistic in STATISTICS:
            alone = np.array([m.statistic_s(placed, statistic) for m in models])
            together = statistics_s(models, placed, statistic)
            assert np.array_equal(together, alone), (nprocs, nbytes, statistic, together - alone)
    assert walks and all(own[0] for own in walks)  # walked, the first set always its own


def test_sets_whose_events_come_in_another_order_are_flagged_and_priced_alone(platform, monkeypatch):
    """A ring allreduce on two nodes: its transfers share each node's domains, so where the network is
    slower against shared memory, pieces end and joins come in another order. Walked in the first set's
    order, sets drawn apart are flagged, and their numbers are their own runs' all the same."""
    placed = _placed(platform, "allreduce", "ompi.ring", 12, 16384, 6)
    price = pricer("taulop", [placed], TABLES, ["mean"], ("reduction_s_per_byte",))
    rng = np.random.default_rng(5)
    models = [price.model_at(_theta(rng)) for _ in range(6)]
    walks = _recorded(monkeypatch)
    together = statistics_s(models, placed, "mean")
    assert walks[0][0] and not walks[0].all()
    assert np.array_equal(together, [m.statistic_s(placed, "mean") for m in models])


def test_a_fit_walking_its_differences_together_writes_the_same_parameters(platform):
    """OSU-style rows (the mean over ranks) priced from known tau-Lop parameters with a 5% disturbance: the fit
    with the pricer (every point's finite differences in one walk) and with a plain function of theta (each
    difference priced alone) take the same steps to the same parameters, bit for bit."""
    rng = np.random.default_rng(11)
    truth_theta = _theta(rng)[:-1]
    placed, points = [], []
    for collective, name in CASES[:4] + CASES[8:10]:
        for nprocs, ppn in ((8, 8), (12, 6)):
            for nbytes in (64, 2048, 16384):
                placed.append(_placed(platform, collective, name, nprocs, nbytes, ppn))
    truth = pricer("taulop", placed, TABLES, ["mean"] * len(placed)).model_at(truth_theta)
    for p in placed:
        y = truth.statistic_s(p, "mean") * float(np.exp(rng.normal(0, 0.05)))
        s = p.schedule
        points.append(Point("x", "y", s.nprocs, int(s.nbytes.max()), y, 1 + int(s.nprocs > 8), "mean"))
    together = pricer("taulop", placed, TABLES, ["mean"] * len(placed))
    one_by_one = pricer("taulop", placed, TABLES, ["mean"] * len(placed))

    def alone(theta, rows=None):
        return one_by_one(theta, rows)
    alone.touches = one_by_one.touches
    fits = [fit_model("taulop", points, TABLES, price, max_steps=3) for price in (together, alone)]
    assert np.array_equal(fits[0].theta, fits[1].theta)
    assert np.array_equal(fits[0].ratio, fits[1].ratio)
    assert fits[0].steps >= 2 and np.median(np.abs(np.log(fits[0].ratio))) < 0.1


def test_a_pricers_sets_share_the_laws_of_the_tables_they_leave_alone(platform):
    """A fit's differences move one table each: the pricer's models share the compiled law of every channel
    whose tables hold the same numbers (shared memory's L moved: the core pair's law is the same object, the
    shared-memory and network channels', which read that table, are not), and each prices what a model with
    laws of its own prices."""
    placed = _placed(platform, "allreduce", "ompi.ring", 12, 16384, 6)
    price = pricer("taulop", [placed], TABLES, ["mean"], ("reduction_s_per_byte",))
    theta = _theta(np.random.default_rng(2))
    moved = theta.copy()
    moved[4] *= 1.001  # L_s of the shm table
    a, b = price.model_at(theta), price.model_at(moved)
    pair, shm, net = (a.laws_for(placed)[i] is b.laws_for(placed)[i] for i in range(3))
    assert pair and not shm and not net
    for model, t in ((a, theta), (b, moved)):
        own = pricer("taulop", [placed], TABLES, ["mean"], ("reduction_s_per_byte",)).model_at(t)
        assert model.statistic_s(placed, "mean") == own.statistic_s(placed, "mean")
    assert np.array_equal(statistics_s([a, b], placed, "mean"), [a.statistic_s(placed, "mean"),
                                                                 b.statistic_s(placed, "mean")])
