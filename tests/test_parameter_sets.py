"""Many parameter sets of one model priced in one walk of a schedule (issue 37 item 1): every set's statistic
is, to the last bit, what the model prices alone, whichever order the sets' receivers take their messages in;
and a fit that prices its finite differences so writes the same parameters as one that prices them one by one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.calibration.fit_from_collectives import Point, fit_model, layout_of, pricer
from commcost.collectives import Case, Collective, build, find
from commcost.io.platform_file import load_platform
from commcost.models import PlacedSchedule
from commcost.models.base import STATISTICS
from commcost.models.dependency_batch import _events_columns, dependency_completions_columns
from commcost.models.dependency_timeline import _structure
from commcost.models.hockney import Hockney, HockneyParams
from commcost.models.loggp import LogGP, LogGPH, LogGPHParams, LogGPParams
from commcost.models.parameter_sets import statistics_s
from commcost.models.reduction import ReductionLaw
from commcost.models.symmetry import placed_fold
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
eager_limit_bytes = 4096
copy_limit_bytes = 1024
[[channels]]
name = "shm"
level = "node"
eager_limit_bytes = 4096
copy_limit_bytes = 1024
backpressure_from_bytes = 0
[[channels]]
name = "net"
level = "world"
eager_limit_bytes = 8192
"""

CASES = [("bcast", "ompi.basic_linear"), ("bcast", "ompi.binomial"), ("bcast", "ompi.chain"),
         ("bcast", "ompi.scatter_allgather"), ("gather", "ompi.basic_linear"), ("gather", "ompi.linear_sync"),
         ("reduce", "ompi.linear"), ("reduce", "ompi.binary"), ("allreduce", "ompi.ring"),
         ("allreduce", "ompi.recursive_doubling"), ("alltoall", "ompi.pairwise"), ("scatter", "ompi.binomial")]


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    path = tmp_path_factory.mktemp("platform") / "platform.toml"
    path.write_text(PLATFORM)
    return load_platform(path)[0]


def _placed(platform, collective: str, name: str, nprocs: int, nbytes: int, ppn: int = 8) -> PlacedSchedule:
    coll = Collective(collective)
    schedule = build(find(coll, name), Case(coll, nprocs, nbytes)).schedule
    return PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, nprocs, min(ppn, nprocs)))


def _hockney(rng) -> Hockney:
    """Hockney with every protocol law, drawn at random around a plausible machine."""
    def channel(scale: float, bulk: bool = True) -> dict:
        d = {}
        for prefix in ("", "rendezvous_", "bulk_")[:3 if bulk else 2]:
            d[f"{prefix}alpha_s"] = scale * rng.uniform(0.5, 2.0) * 1e-6
            d[f"{prefix}beta_s_per_byte"] = scale * rng.uniform(0.5, 2.0) * 1e-10
            for share in ("send_", "recv_"):
                d[f"{prefix}{share}alpha_s"] = scale * rng.uniform(0.0, 1.5) * 1e-6
                d[f"{prefix}{share}beta_s_per_byte"] = scale * rng.uniform(0.0, 1.5) * 1e-10
        return d
    data = {"pair": {**channel(0.5), "eager_limit_bytes": 4096, "copy_limit_bytes": 1024},
            "shm": {**channel(1.0), "eager_limit_bytes": 4096, "copy_limit_bytes": 1024, "backpressure_from_bytes": 0},
            "net": {**channel(3.0, bulk=False), "eager_limit_bytes": 8192}}
    model = Hockney(HockneyParams.from_dict(data))
    return model.with_reduction(ReductionLaw("r", np.array([0.0, 1.0]), np.array([0.0, rng.uniform(1e-11, 1e-9)]),
                                             beyond_m="slope"))


def _hockney_classic(rng) -> Hockney:
    """Hockney's one law per channel (alpha + beta m for the wire, the sender and the receiver alike)."""
    return Hockney(HockneyParams.from_dict({c: {"alpha_s": s * rng.uniform(0.5, 2.0) * 1e-6,
                                                "beta_s_per_byte": s * rng.uniform(0.5, 2.0) * 1e-10}
                                            for c, s in (("pair", 0.5), ("shm", 1.0), ("net", 3.0))}))


def _loggph(rng) -> LogGPH:
    def channel(scale: float) -> dict:
        return {"L_s": scale * rng.uniform(0.5, 2) * 1e-6, "o_s": scale * rng.uniform(0.1, 1) * 1e-6,
                "g_s": scale * rng.uniform(0.0, 2) * 1e-6, "G_s_per_byte": scale * rng.uniform(0.5, 2) * 1e-10}
    return LogGPH(LogGPHParams.from_dict({"pair": channel(0.5), "shm": channel(1.0), "net": channel(3.0)}))


def _loggp(rng) -> LogGP:
    return LogGP(LogGPParams(L_s=rng.uniform(0.5, 2) * 1e-6, o_s=rng.uniform(0.1, 1) * 1e-6,
                             g_s=rng.uniform(0.0, 2) * 1e-6, G_s_per_byte=rng.uniform(0.5, 2) * 1e-10))


@pytest.mark.parametrize("draw", [_hockney, _hockney_classic, _loggph, _loggp])
@pytest.mark.parametrize("collective,name", CASES)
def test_sets_priced_together_are_each_priced_as_alone(platform, draw, collective, name):
    """Random parameter sets, some of them a few finite differences of one (a fit's columns): every statistic
    of every set equals the model's own, bit for bit, on one node and on two, eager and rendezvous sizes."""
    rng = np.random.default_rng(abs(hash((draw.__name__, collective, name))) % 2**32)
    for nprocs, nbytes, ppn in ((8, 64, 8), (6, 2048, 6), (12, 16384, 6), (16, 200, 8)):
        placed = _placed(platform, collective, name, nprocs, nbytes, ppn)
        base = draw(rng)
        models = [draw(rng) for _ in range(3)] + [base]
        if isinstance(base, Hockney):  # the base nudged in one parameter at a time, as a fit's differences are
            for channel in ("pair", "shm", "net"):
                data = base.params.to_dict()
                data[channel]["alpha_s"] *= 1.001
                models.append(Hockney(HockneyParams.from_dict(data)).with_reduction(base.reduction))
        for statistic in STATISTICS:
            alone = np.array([m.statistic_s(placed, statistic) for m in models])
            together = statistics_s(models, placed, statistic)
            assert np.array_equal(together, alone), (nprocs, nbytes, statistic, together - alone)


def test_sets_whose_receivers_would_take_messages_in_another_order_are_priced_again(platform):
    """A linear gather on two nodes: the root takes its messages in order of arrival. Where the network is
    faster than shared memory the remote ranks' messages come first; where it is slower, last. Walked in the
    first set's order the second set's own order is found to differ (flagged), and priced alone it is its own
    run's number all the same."""
    placed = _placed(platform, "gather", "ompi.basic_linear", 8, 64, 4)
    fast, slow = [], []
    for net_alpha in (0.1e-6, 5e-6):
        data = {c: {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "send_alpha_s": 0.1e-6, "send_beta_s_per_byte": 0.0,
                    "recv_alpha_s": 0.5e-6, "recv_beta_s_per_byte": 1e-10, "eager_limit_bytes": 4096,
                    "rendezvous_alpha_s": 1e-6, "rendezvous_beta_s_per_byte": 1e-10,
                    "rendezvous_send_alpha_s": 0.1e-6, "rendezvous_send_beta_s_per_byte": 0.0}
                for c in ("pair", "shm", "net")}
        data["net"]["alpha_s"] = net_alpha
        (fast if net_alpha < 1e-6 else slow).append(Hockney(HockneyParams.from_dict(data)))
    models = fast + slow
    times = type(models[0]).time_columns(models, placed)
    s = placed.schedule
    args, _, _, rprev, succ_ptr, succ_idx, prev, nxt, rnext = _structure(s.src, s.dst, s.after_ptr, s.after_idx,
                                                                          s.nprocs, s.recv_prev)
    n = s.ntransmissions
    occupancy = np.ascontiguousarray(times.occupancy)
    service = np.zeros((n, 2))
    flags = [np.zeros(n, np.bool_) if f is None else np.ascontiguousarray(f) for f in (times.sync, times.pressed)]
    *_, bad = _events_columns(*args, succ_ptr, succ_idx, prev, nxt, *(np.ascontiguousarray(a) for a in
                                                                      (times.send_busy, times.inject, times.flight)),
                              service, occupancy, rprev, rnext, s.nprocs, True, *flags)
    assert list(bad) == [False, True]
    _, done = dependency_completions_columns(s.src, s.dst, s.after_ptr, s.after_idx, s.nprocs, times,
                                             recv_prev=s.recv_prev, schedule=s)
    for q, model in enumerate(models):
        assert np.array_equal(done[:, q], model.completions(placed)[1])
    assert np.array_equal(statistics_s(models, placed, "mean"), [m.statistic_s(placed, "mean") for m in models])


def test_a_fit_pricing_its_differences_together_writes_the_same_parameters(platform, monkeypatch):
    """OSU-style rows (the mean over ranks) priced from known protocol parameters with a 5% disturbance: the
    fit with the pricer (every point's finite differences in one walk) and with a plain function of theta
    (each difference priced alone) take the same steps to the same parameters, bit for bit."""
    rng = np.random.default_rng(7)
    truth = _hockney(rng)
    truth.reduction = None
    placed, points = [], []
    for collective, name in CASES[:2] + CASES[4:6]:
        for nprocs, ppn in ((8, 8), (12, 6)):
            for nbytes in (64, 2048, 16384):
                p = _placed(platform, collective, name, nprocs, nbytes, ppn)
                placed.append(p)
                y = truth.statistic_s(p, "mean") * float(np.exp(rng.normal(0, 0.05)))
                points.append(Point(collective, name, nprocs, nbytes, y, 1 + (nprocs > ppn), "mean"))
    channels = ["pair", "shm", "net"]
    limits = {"shm": 4096}  # shared memory's protocol laws fitted (rendezvous and pressed sends), the others' one law
    stated = {"shm": {"backpressure_from_bytes": 0.0}}
    layout = layout_of("hockney", channels, limits, stated)
    together = pricer("hockney", placed, channels, ["mean"] * len(placed), (), limits, stated)
    one_by_one = pricer("hockney", placed, channels, ["mean"] * len(placed), (), limits, stated)

    def alone(theta, rows=None):
        return one_by_one(theta, rows)
    alone.touches = one_by_one.touches
    import commcost.models.parameter_sets as sets
    walks = []
    monkeypatch.setattr(sets, "statistics_s", lambda *a: walks.append(1) or statistics_s(*a))
    fits = [fit_model("hockney", points, channels, price, layout=layout, max_steps=3) for price in (together, alone)]
    assert walks  # the points with enough sets were priced together
    assert np.array_equal(fits[0].theta, fits[1].theta)
    assert np.array_equal(fits[0].ratio, fits[1].ratio)
    assert fits[0].weak == fits[1].weak
    assert fits[0].steps >= 2 and np.median(np.abs(np.log(fits[0].ratio))) < 0.1


def test_sets_priced_together_on_a_folded_schedule(platform):
    """A ring allreduce on 256 ranks of 4 per node (over 20,000 transmissions: folded by one node's ranks at
    its second pricing): the sets priced together on the fold are each what their own folded run gives."""
    cluster, _ = load_platform(Path(__file__).parent.parent / "examples" / "cluster" / "platform.toml")
    schedule = build(find(Collective.ALLREDUCE, "ompi.ring"), Case(Collective.ALLREDUCE, 256, 65536)).schedule
    placed = PlacedSchedule.of(schedule, cluster, Mapping.sequential(cluster, 256, 4))
    rng = np.random.default_rng(3)
    models = []
    for _ in range(4):
        data = {c: {"alpha_s": rng.uniform(0.5, 2) * 1e-6, "beta_s_per_byte": rng.uniform(0.5, 2) * 1e-10,
                    "send_alpha_s": rng.uniform(0.1, 1) * 1e-6, "send_beta_s_per_byte": rng.uniform(0.1, 1) * 1e-10,
                    "recv_alpha_s": rng.uniform(0.1, 1) * 1e-6, "recv_beta_s_per_byte": rng.uniform(0.1, 1) * 1e-10}
                for c in ("shm", "ib")}
        models.append(Hockney(HockneyParams.from_dict(data)))
    alone = [m.statistic_s(placed, "mean") for m in models]
    assert placed_fold(placed) is not None  # found at its second pricing, kept
    alone_folded = np.array([m.statistic_s(placed, "mean") for m in models])
    assert np.array_equal(statistics_s(models, placed, "mean"), alone_folded)
    assert np.allclose(alone_folded, alone, rtol=1e-12)
