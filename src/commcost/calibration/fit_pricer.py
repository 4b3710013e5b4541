"""What a fit to collective timings prices: every training point's schedule under one model at a theta.

:class:`Pricer` is the ``price(theta)`` of :func:`~.fit_from_collectives.fit_model`: each placed training
schedule priced with the parameters theta lays out (:mod:`.fit_layout`), the statistic over ranks its
benchmark reported, and, for the fit's finite differences, many thetas at once
(:meth:`Pricer.columns`, :mod:`commcost.models.parameter_sets`). tau-Lop is priced from the tables of its
fitted family (:func:`taulop_tables`), reductions at a fitted rate (:func:`reduction_law`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from commcost.calibration.fit_layout import layout_of
from commcost.collectives.recorder import read_whole_number


def taulop_tau_max(placed) -> int:
    """The concurrencies the fitted tau-Lop tables cover: twice the largest training P (a linear
    algorithm's root alone has P - 1 transmissions on its channel at once)."""
    return 2 * max((max(p.schedule.nprocs, p.mapping.nprocs) for p in placed), default=1)  # a folded one: its P


def taulop_tables(theta: np.ndarray, tables: Sequence[str], tau_max: int,
                  sizes: Sequence[float] = (1.0, 2.0)) -> dict[str, dict[str, list]]:
    """The tau-Lop tables of :mod:`.fit_from_collectives`'s family for ``theta`` (o_s, L_s, G per table in
    ``tables`` order), rows at ``sizes``, concurrencies 1..tau_max: o(m) = o_s, L(m, tau) = L_s + tau m G.
    Two rows suffice to price (the tables are read with ``beyond_m = "slope"``)."""
    m = np.asarray(sizes, dtype=np.float64)
    tau = np.arange(1, tau_max + 1, dtype=np.float64)
    out = {}
    for i, name in enumerate(tables):
        o, latency, per_byte = (float(v) for v in theta[3 * i:3 * i + 3])
        out[name] = {"m": m.tolist(), "o_s": [o] * len(m), "L_s": (latency + np.outer(m, tau) * per_byte).tolist()}
    return out


def reduction_law(rate_s_per_byte: float, fixed_s: float = 0.0):
    """gamma(m) = fixed + rate x m as a :class:`~commcost.models.reduction.ReductionLaw` (a two-point table at
    0 and 1 byte, continued along its slope): what a fitted reduction prices, an affine cost of the local
    operation as Hockney's alpha + beta m is of a message."""
    from commcost.models.reduction import ReductionLaw

    return ReductionLaw("fitted", np.array([0.0, 1.0]), np.array([float(fixed_s), float(fixed_s + rate_s_per_byte)]),
                        beyond_m="slope")


# fewer sets of one point than this, on a schedule of fewer transmissions than that, are priced one at a time:
# the walk's bookkeeping costs more than it saves (Peak's bcast and allreduce extract under Hockney's one law,
# at most 5 sets a point: 2.9 s together against 2.6 s alone; with the protocol laws, 25 sets: 5.8 s against
# 6.9 s, the same with these thresholds); on a large schedule the walk itself dominates (LogGPH on the
# 2,048-rank synthetic sweep, 4 sets on its one-rank-per-node points: 22-23 s together, 25 s alone)
MIN_SETS_TOGETHER = 6
MIN_TRANSMISSIONS_TOGETHER = 5000


THREAD_FROM = 2000  # transmissions: a point's schedule with fewer is priced in the calling thread (a thread's
# hand-off costs more than its pricing saves)
THREADS_VARIABLE = "COMMCOST_FIT_THREADS"


def fit_threads() -> int:
    """The threads a fit prices its points on: ``$COMMCOST_FIT_THREADS`` when set (an integer >= 1), else the
    cores this process may run on, at most 16."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if text:
        return read_whole_number(text, THREADS_VARIABLE, 1, "a whole number >= 1 of threads")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 16))


class Pricer:
    """``price(theta)``: every placed schedule's time under ``model`` (hockney, loggph or taulop) with the
    :data:`~.fit_layout.MODEL_PARAMS` of each of ``channels`` (tau-Lop: tables,
    :func:`~.fit_from_collectives.fitted_units`) in order taken
    from ``theta``: the statistic over ranks each point's benchmark reported (``statistics``, one per
    schedule, :meth:`Model.statistic_s`; None: the last rank's, the schedule's total). A mean or a minimum
    over ranks of piecewise-linear ends is piecewise linear in theta too: the fit's steps stay exact.
    ``extra``: the trailing parameters of theta beyond the channels' (:func:`~.fit_from_collectives.extra_parameters`).

    ``price(theta, rows)`` prices only the points ``rows`` (indices); ``touches[i, j]`` says whether
    parameter j can move point i at all (its schedule has a transmission on the parameter's channel, or
    reads its tau-Lop table; the reduction rate moves schedules with a combining transmission only), so a finite
    difference in j need only price the points it touches: the others' prices are the same numbers.

    ``barriers``: per point, the placed barrier the benchmark ran before each timed call (None: its ranks
    start together), each rank's time then taken from when that barrier let it go
    (:func:`commcost.models.barrier_start.after_barrier_statistic_s`: three pricings, set by set)."""

    def __init__(self, model: str, placed, channels: Sequence[str], statistics: Sequence[str] | None = None,
                 extra: Sequence[str] = (), limits: dict[str, int] | None = None,
                 stated: dict[str, dict[str, float]] | None = None, barriers: Sequence[Any] | None = None):
        from commcost.models import MODELS

        self.model, self.placed, self.channels = model, list(placed), list(channels)
        self.statistics = None if statistics is None else list(statistics)
        self.barriers = [None] * len(self.placed) if barriers is None else list(barriers)
        self.extra = list(extra)
        self.limits = dict(limits or {})  # Hockney: channel -> eager limit (its protocol parameters fitted)
        self.stated = dict(stated or {})  # channel -> its copy limit (its bulk law fitted), its backpressure
        self.copies = {u: v["copy_limit_bytes"] for u, v in self.stated.items() if "copy_limit_bytes" in v}
        self.layout = layout_of(model, channels, self.limits, self.stated)
        self.params_class = MODELS[model].PARAMS
        self.tau_max = taulop_tau_max(self.placed)
        self.touches = self._touches()
        self._laws: dict[tuple, Any] = {}  # tau-Lop: compiled laws by the numbers of the tables they read

    def _touches(self) -> np.ndarray:
        layout, n = self.layout, len(self.layout)
        out = np.ones((len(self.placed), n + len(self.extra)), bool)
        for i, p in enumerate(self.placed):
            by_name = {c.name: c for c in p.platform.channels}
            names = [c.name for c in p.platform.channels]
            used = {names[c] for c in np.unique(p.channel).tolist()}
            if self.barriers[i] is not None:  # the barrier's messages too
                used |= {names[c] for c in np.unique(self.barriers[i].channel).tolist()}
            if self.model == "taulop":
                used |= {t for c in list(used) for t in by_name[c].transfers}
            sizes = {u: p.schedule.nbytes[np.asarray(p.channel) == names.index(u)] for u in self.limits if u in used}
            if self.barriers[i] is not None:  # its zero-byte messages are eager
                sizes = {u: np.r_[m, 0.0] for u, m in sizes.items()}
            above = {u for u, m in sizes.items() if np.any(m > self.limits[u])}
            below = {u for u, m in sizes.items() if np.any(m <= self.limits[u])}
            bulk = {u for u, m in sizes.items() if u in self.copies
                    and np.any((m > self.copies[u]) & (m <= self.limits[u]))}
            for j, (unit, name) in enumerate(layout):
                if name.startswith("rendezvous_"):  # only messages above the eager limit read them
                    out[i, j] = unit in above
                elif name.startswith("bulk_"):  # only eager messages above the copy limit
                    out[i, j] = unit in bulk
                elif unit in self.limits:
                    out[i, j] = unit in below
                else:
                    out[i, j] = unit in used
            for name in ("reduction_s_per_byte", "reduction_s"):  # only a combining transmission pays gamma(m)
                if name in self.extra:
                    out[i, n + self.extra.index(name)] = bool(p.schedule.combine.any())
        return out

    def model_at(self, theta: np.ndarray):
        """The model priced with ``theta``'s parameters (and its reduction rate)."""
        from commcost.models import MODELS

        n, channels = len(self.layout), self.channels
        if self.model == "taulop":
            data: dict = {"beyond_m": "slope", **taulop_tables(theta[:n], channels, self.tau_max)}
        else:
            data = {c: ({"eager_limit_bytes": float(self.limits[c])} if c in self.limits else {}) for c in channels}
            for c, values in self.stated.items():
                data[c].update(values)
            for j, (unit, name) in enumerate(self.layout):
                data[unit][name] = float(theta[j])
        priced = MODELS[self.model](self.params_class.from_dict(data))
        if self.model == "taulop":
            self._share_laws(priced, theta[:n])
        if "reduction_s_per_byte" in self.extra:
            fixed = theta[n + self.extra.index("reduction_s")] if "reduction_s" in self.extra else 0.0
            priced.with_reduction(reduction_law(theta[n + self.extra.index("reduction_s_per_byte")], fixed))
        return priced

    def _share_laws(self, priced, theta: np.ndarray) -> None:
        """Give a tau-Lop model the compiled law of each channel that another parameter set of this pricer
        compiled from the same numbers (the o, L, G of every table the channel reads): a fit's finite
        differences move one table each, so the sets' laws, their flattened arrays and the walk's stacked
        columns (:mod:`commcost.models.taulop.dependency_columns`) are made once, not once per set. The same
        numbers give the same law, so every price is the one the set's own law gives."""
        if not self.placed:
            return
        at = {name: i for i, name in enumerate(self.channels)}
        if len(self._laws) > 4096:  # laws of earlier steps: drop them
            self._laws.clear()
        for ch in self.placed[0].platform.channels:
            names = (ch.name, *ch.transfers)
            if not all(name in at for name in names):
                continue
            key = (ch.name, ch.transfers, tuple(theta[3 * at[name] + q] for name in names for q in range(3)))
            law = self._laws.get(key)
            if law is None:
                law = self._laws[key] = priced.params.law(ch.name, ch.transfers)
            priced._laws[(ch.name, ch.transfers)] = law

    def __call__(self, theta: np.ndarray, rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        priced = self.model_at(theta)
        index = list(range(len(self.placed))) if rows is None else np.asarray(rows, dtype=np.int64).tolist()
        return np.array(self._each(lambda i: self.statistic_s(priced, i), index), dtype=np.float64)

    def statistic_s(self, priced, i: int) -> float:
        """Point i's figure under the model ``priced``: the statistic over ranks its benchmark reported (the
        schedule's total where none is said), each rank's time from its barrier's release where it has one."""
        statistic = "max" if self.statistics is None else self.statistics[i]
        if self.barriers[i] is not None:
            from commcost.models.barrier_start import after_barrier_statistic_s

            return after_barrier_statistic_s(priced, self.placed[i], self.barriers[i], statistic)
        if self.statistics is None:
            return priced.total_time_s(self.placed[i])
        return priced.statistic_s(self.placed[i], statistic)

    def _each(self, price: Callable[[int], Any], index: list[int]) -> list:
        """``price(i)`` for every point i of ``index``, in order: those of :data:`THREAD_FROM` transmissions or
        more on :func:`fit_threads` threads (the models' compiled loops release the GIL, and each point is
        priced by one thread, so the numbers are the ones a single thread gives), the rest meanwhile in this
        one."""
        threads = fit_threads()
        large = [i for i in index if self.placed[i].schedule.ntransmissions >= THREAD_FROM] if threads > 1 else []
        if len(large) < 2:
            return [price(i) for i in index]
        with ThreadPoolExecutor(threads) as pool:
            running = {i: pool.submit(price, i) for i in large}
            here = {i: price(i) for i in index if i not in running}
            return [running[i].result() if i in running else here[i] for i in index]

    def columns(self, thetas: Sequence[np.ndarray], which: np.ndarray) -> np.ndarray:
        """Every point's price at each of ``thetas`` where ``which[i, j]`` (NaN elsewhere): what ``self(thetas[j],
        rows)`` gives, the same numbers, with each point's sets priced together
        (:func:`commcost.models.parameter_sets.statistics_s`: one walk of its schedule for all of them) where
        the model prices by its :meth:`~commcost.models.base.Model.transmission_times` and the point has at
        least :data:`MIN_SETS_TOGETHER` of them or a schedule of :data:`MIN_TRANSMISSIONS_TOGETHER`, or walks
        its own columns (tau-Lop, from two sets); set by set otherwise."""
        from commcost.models import MODELS
        from commcost.models.base import Model
        from commcost.models.parameter_sets import statistics_s

        out = np.full((len(self.placed), len(thetas)), np.nan)
        walks = hasattr(MODELS[self.model], "statistics_columns")  # its own walk of many sets (tau-Lop)
        if MODELS[self.model].transmission_times is Model.transmission_times and not walks:
            for j, theta in enumerate(thetas):
                rows = np.flatnonzero(which[:, j])
                if len(rows):
                    out[rows, j] = self(theta, rows)
            return out
        models = [self.model_at(theta) for theta in thetas]

        def point(i: int) -> list[float] | np.ndarray:
            placed, cols = self.placed[i], np.flatnonzero(which[i])
            statistic = "max" if self.statistics is None else self.statistics[i]
            if self.barriers[i] is not None:
                return [self.statistic_s(models[j], i) for j in cols.tolist()]
            if len(cols) < (2 if walks else MIN_SETS_TOGETHER) \
                    and placed.schedule.ntransmissions < MIN_TRANSMISSIONS_TOGETHER:
                return [models[j].statistic_s(placed, statistic) for j in cols.tolist()]
            return statistics_s([models[j] for j in cols.tolist()], placed, statistic)

        index = np.flatnonzero(which.any(axis=1)).tolist()
        for i, got in zip(index, self._each(point, index)):
            out[i, np.flatnonzero(which[i])] = got
        return out


def barriers_before(placed, decision: str) -> list:
    """The barrier Open MPI runs between a benchmark's timed calls (:func:`commcost.collectives.barrier.
    fixed_decision` of ``decision``: ``ompi5`` or ``ompi4``) for each placed schedule, on its ranks and
    mapping; one placed barrier per rank count and mapping. A folded schedule (one node's share) has none to
    pair with: place them whole."""
    from commcost.collectives.barrier import barrier_schedule
    from commcost.models.base import PlacedSchedule

    out, made = [], {}
    for p in placed:
        if p.schedule.nprocs != p.mapping.nprocs:
            raise ValueError("a barrier before a folded schedule: place the schedules whole")
        key = (p.schedule.nprocs, id(p.mapping), id(p.platform))
        if key not in made:
            made[key] = PlacedSchedule.of(barrier_schedule(p.schedule.nprocs, decision=decision), p.platform,
                                          p.mapping)
        out.append(made[key])
    return out


def pricer(model: str, placed, channels: Sequence[str], statistics: Sequence[str] | None = None,
           extra: Sequence[str] = (), limits: dict[str, int] | None = None,
           stated: dict[str, dict[str, float]] | None = None, barriers: Sequence[Any] | None = None) -> Pricer:
    """The :class:`Pricer` of ``placed`` (``limits``: :func:`protocol_limits`; ``stated``:
    :func:`stated_limits`; ``barriers``: :class:`Pricer`'s)."""
    return Pricer(model, placed, channels, statistics, extra, limits, stated, barriers)
