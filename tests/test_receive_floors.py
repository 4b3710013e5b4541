"""Physical floors of every registered algorithm under every model: no price below what its busiest rank
must receive or send.

A rank takes one message at a time (the models' receive side, issue "Receiving costs too"), so a rank that
receives k messages is busy at least the sum of what each costs it to receive; one that sends k messages,
the sum of what each costs it to send. The floors are worked here from the parameters, one formula per
model, not from the code under test:

* Hockney: each message holds its receiver and its sender alpha_c + beta_c m (single port, full duplex);
* LogGP, LogGPH, HLogGP: a receiver's port takes one message per max(g, (m-1) G) and its processor spends
  o_recv on each (the first may arrive before a full gap: its gap is left out); a sender injects
  o_send + (m-1) G per message, one after another;
* max-rate (paper 001 eq. 2): every message costs at least alpha + m / R_b of its row at either end (the
  node's injection limit only adds; inside a node the cheaper of the two socket rows), the first
  reception's left out;
* tau-Lop: a reception holds its receiver for its channel's last transfer alone, L^k(m, 1) (the first left
  out); a sender's transmissions on one channel move their bytes no faster than the channel's best
  aggregate rate over every concurrency tau, tau m / (T(m, tau) - T(0, tau)), from its tables.

Every algorithm of the registry is priced at P = 2..65 (drawn) and 1,024, 4 ranks per node on the
example cluster, at three sizes. And the linear shapes: gather and scatter, reduce and bcast, cost within
2x of each other under Hockney with one channel.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from commcost.collectives import Case, Collective, algorithms, build, find
from commcost.collectives.registry import Unsupported
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
from commcost.models.taulop.params import TauLopParams
from commcost.platform import Mapping

from test_critical_paths import one_channel

EX = Path(__file__).resolve().parent.parent / "examples"
PLATFORM, _ = load_platform(EX / "cluster" / "platform.toml")
PARAMS = load_params(EX / "params" / "illustrative.toml")
PPN = 4
SIZES = (8, 4096, 1 << 20)
ALGORITHMS = [a for a in algorithms()]
NAMES = sorted(MODELS)


def _sums(who: np.ndarray, values: np.ndarray, nprocs: int) -> np.ndarray:
    return np.bincount(who, weights=values, minlength=nprocs)


def _all_but_largest(who: np.ndarray, values: np.ndarray, nprocs: int) -> np.ndarray:
    """Per rank, the sum of its values less its largest one."""
    top = np.zeros(nprocs)
    np.maximum.at(top, who, values)
    return _sums(who, values, nprocs) - top


@lru_cache(maxsize=None)
def _aggregate_seconds_per_byte(params: TauLopParams, name: str, transfers: tuple[str, ...]) -> float:
    """The least time per byte a channel's tau concurrent transmissions take together, over every tau and
    size: inf of (T(m, tau) - T(0, tau)) / (tau m). T is piecewise linear in m, so the ratio is least at a
    table size or along the last slope; past the tables' largest tau it is o + tau S (beyond_tau = linear)
    and the ratio falls towards (S(m) - S(0)) / m."""
    law = params.law(name, transfers)
    sizes = np.unique(np.concatenate([params.tables[t].m for t in (name, *transfers)]))
    sizes = np.r_[sizes[sizes > 0], sizes.max() * 4.0]
    best = np.inf
    for tau in range(1, law.tau_saturated + 1):
        rise = law.times(sizes, np.full(len(sizes), tau)) - law.time(0.0, tau)
        best = min(best, float(np.min(rise / (tau * sizes))))
    if not law.hold:  # T = o + tau S past the tables: the S part shared by tau, the o part not
        s_of = sum(params.tables[t].L(sizes, params.tables[t].tau_max) / params.tables[t].tau_max
                   for t in transfers)
        s_zero = sum(float(params.tables[t].L(0.0, params.tables[t].tau_max)) / params.tables[t].tau_max
                     for t in transfers)
        best = min(best, float(np.min((s_of - s_zero) / sizes)))
    return max(best, 0.0)


def floors(name: str, placed: PlacedSchedule) -> tuple[float, float]:
    """(receive floor, send floor): the most any rank must spend receiving, sending (module docstring)."""
    s = placed.schedule
    p, m = s.nprocs, s.nbytes
    params = PARAMS.for_model(name)
    if name == "hockney":
        alpha = np.array([params.channels[c.name].alpha_s for c in placed.platform.channels])[placed.channel]
        beta = np.array([params.channels[c.name].beta_s_per_byte for c in placed.platform.channels])[placed.channel]
        t = alpha + beta * m
        return _sums(s.dst, t, p).max(), _sums(s.src, t, p).max()
    if name in ("loggp", "loggph", "hloggp"):
        a = params.per_transmission(s.ntransmissions) if name == "loggp" else params.per_transmission(placed)
        gap = np.maximum(a.g_s, np.maximum(m - 1, 0) * a.G_s_per_byte)
        receive = np.maximum(_all_but_largest(s.dst, gap, p), _sums(s.dst, a.o_recv_s, p))
        send = _sums(s.src, a.o_send_s + np.maximum(m - 1, 0) * a.G_s_per_byte, p)
        return receive.max(), send.max()
    if name == "maxrate":
        protocol = np.where(m <= params.short_max_bytes, 0, np.where(m <= params.eager_max_bytes, 1, 2))

        def row_time(locality: str) -> np.ndarray:
            rows = [params.rows[(locality, pro)] for pro in ("short", "eager", "rend")]
            alpha = np.array([r.alpha_s for r in rows])[protocol]
            return alpha + m / np.array([r.rate_bytes_per_s for r in rows])[protocol]

        node = placed.mapping.node_of_rank
        inside = np.minimum(row_time("intra_socket"), row_time("intra_node"))  # either socket: the cheaper
        t = np.where(node[s.src] != node[s.dst], row_time("inter_node"), inside)
        return _all_but_largest(s.dst, t, p).max(), _sums(s.src, t, p).max()
    assert name == "taulop"
    channels = placed.platform.channels
    last = np.zeros(s.ntransmissions)
    send = np.zeros(p)
    for c, channel in enumerate(channels):
        sel = placed.channel == c
        if sel.any():
            last[sel] = params.tables[channel.transfers[-1]].L(m[sel], 1)
            rate = _aggregate_seconds_per_byte(params, channel.name, channel.transfers)
            send = np.maximum(send, _sums(s.src[sel], m[sel] * rate, p))
    return _all_but_largest(s.dst, last, p).max(), send.max()


def schedule_of(algorithm, nprocs: int, nbytes: int):
    """The algorithm's schedule, built once per scale unit (:meth:`Algorithm.scale_unit`) and scaled; None
    where the library does not run it on ``nprocs`` ranks."""
    defaults = {p.name: p.default for p in algorithm.params}
    unit = algorithm.scale_unit(defaults, nprocs, nbytes)
    try:
        if unit is None:
            return build(algorithm, Case(algorithm.collective, nprocs, nbytes)).schedule
        return _built(algorithm, nprocs, unit).scaled(nbytes / unit)
    except Unsupported:
        return None


@lru_cache(maxsize=4)
def _built(algorithm, nprocs: int, nbytes: int):
    return build(algorithm, Case(algorithm.collective, nprocs, nbytes)).schedule


def check_floors(algorithm, nprocs: int, nbytes: int, names: tuple[str, ...] | list[str] = NAMES) -> None:
    schedule = schedule_of(algorithm, nprocs, nbytes)
    if schedule is None:
        return
    placed = PlacedSchedule.of(schedule, PLATFORM, Mapping.sequential(PLATFORM, nprocs, PPN))
    for name in names:
        price = MODELS[name](PARAMS.for_model(name)).total_time_s(placed)
        receive, send = floors(name, placed)
        assert price >= receive * (1 - 1e-9), (name, algorithm.key, nprocs, nbytes, "receive", price, receive)
        assert price >= send * (1 - 1e-9), (name, algorithm.key, nprocs, nbytes, "send", price, send)


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: f"{a.collective.value}-{a.key}")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nprocs=st.integers(2, 65), size=st.sampled_from(SIZES))
def test_no_price_below_what_the_busiest_rank_receives_or_sends(algorithm, nprocs, size):
    check_floors(algorithm, nprocs, size)


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: f"{a.collective.value}-{a.key}")
def test_the_floors_hold_on_1024_ranks(algorithm):
    """Every model at one of the three sizes, the sizes taken in turn (a ring on 1,024 ranks is two million
    transmissions: every model at every size would take minutes of the suite)."""
    for k, name in enumerate(NAMES):
        check_floors(algorithm, 1024, SIZES[k % len(SIZES)], [name])


def _message_times(collective: Collective, name: str, model, nprocs: int = 1024, nbytes: int = 1024) -> float:
    """A collective's price on the example cluster (4 ranks per node) in single inter-node message times."""
    mapping = Mapping.sequential(PLATFORM, nprocs, PPN)
    placed = PlacedSchedule.of(build(find(collective, name), Case(collective, nprocs, nbytes)).schedule,
                               PLATFORM, mapping)
    one = build(find(Collective.BCAST, "basic_linear"), Case(Collective.BCAST, 2, nbytes)).schedule
    single = model.total_time_s(PlacedSchedule.of(one, PLATFORM, Mapping.sequential(PLATFORM, 2, 1)))
    return model.total_time_s(placed) / single


@pytest.mark.parametrize("name", ["hockney", "taulop"])
@pytest.mark.parametrize("collective,algorithm", [(Collective.GATHER, "basic_linear"), (Collective.REDUCE, "linear")])
def test_a_root_receiving_1023_messages_pays_for_them(collective, algorithm, name):
    """Linear gather and reduce on 1,024 ranks, 1 KiB: the root takes 1,023 messages one at a time, at least
    500 single-message times (a rank took them all at once before: one)."""
    model = MODELS[name](PARAMS.for_model(name))
    assert _message_times(collective, algorithm, model) >= 500


@pytest.mark.parametrize("nprocs", [2, 3, 8, 33, 200])
@pytest.mark.parametrize("nbytes", [1, 1024, 1 << 20])
def test_linear_shapes_cost_alike_both_ways(nprocs, nbytes):
    """Under Hockney with one channel a root that sends P - 1 messages one after another (scatter, bcast)
    and one that receives them one at a time (gather, reduce) cost within 2x of each other."""
    platform, mapping = one_channel(nprocs)
    model = Hockney(HockneyParams({"net": HockneyChannel(2e-6, 1e-9)}))

    def price(collective: Collective, name: str) -> float:
        schedule = build(find(collective, name), Case(collective, nprocs, nbytes)).schedule
        return model.total_time_s(PlacedSchedule.of(schedule, platform, mapping))

    for (c1, a1), (c2, a2) in (((Collective.GATHER, "basic_linear"), (Collective.SCATTER, "basic_linear")),
                               ((Collective.REDUCE, "linear"), (Collective.BCAST, "basic_linear"))):
        one, other = price(c1, a1), price(c2, a2)
        assert 0.5 <= one / other <= 2.0, (a1, a2, one, other)
