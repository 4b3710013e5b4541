"""tau-Lop as a registered model: the exact engine prices, the algebra explains."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from commcost.arrays import unique_inverse
from commcost.errors import InputError
from commcost.models.base import Cost, Model, PlacedSchedule, register_model
from commcost.models.taulop import algebra
from commcost.models.dependency_timeline import receives_alone
from commcost.models.symmetry import MIN_TRANSMISSIONS, Fold, node_period, rank_shift_fold
from commcost.models.taulop.dependency_engine import PREPARED_KEY, DependencyRun, simulate_dependencies
from commcost.models.taulop.dependency_sweep import sweep_dependencies
from commcost.models.taulop.floor import domain_loads_s, floor_times, receiver_loads_s
from commcost.models.taulop.engine import simulate_phase, staircase, staircase_phase_times
from commcost.models.taulop.jobs import PhaseJobs, build_jobs
from commcost.models.taulop.params import TauLopParams, TransmissionLaw


def channel_laws(params: TauLopParams, placed: PlacedSchedule,
                 cache: dict[tuple[str, tuple[str, ...]], TransmissionLaw] | None = None) -> list[TransmissionLaw]:
    """The compiled law of each channel the schedule uses (None for the others); ``cache`` keeps compiled
    laws between calls (a law compiles its tables once per tau)."""
    used = set(np.flatnonzero(np.bincount(placed.channel, minlength=len(placed.platform.channels))).tolist())
    cache = {} if cache is None else cache
    laws = []
    for index, ch in enumerate(placed.platform.channels):
        if index not in used:
            laws.append(None)
            continue
        key = (ch.name, ch.transfers)
        if key not in cache:
            cache[key] = params.law(ch.name, ch.transfers)
        laws.append(cache[key])
    return laws  # type: ignore[return-value]


_BEYOND_M = {"chunks": "m past the last size in whole chunks of it (paper 000, L(A m) = A L(m))",
             "slope": "m past the last size along the last segment"}
_BEYOND_TAU = {"linear": "tau past tau_max grows linearly (saturated channel)",
               "hold": "tau past tau_max holds L(m, tau_max)"}


def beyond_table_text(laws: list[TransmissionLaw | None]) -> str:
    """The rules the tables follow beyond their sizes and concurrencies, in words (for --explain)."""
    rules = sorted({tuple(law.rules.values()) for law in laws if law is not None})
    return "; ".join(f"{_BEYOND_M[m]}, {_BEYOND_TAU[t]}" for m, t in rules)


@dataclass(frozen=True, eq=False)
class _Split:
    """A schedule's jobs (keyed by phase and rank): ``easy`` ones for the staircase, the transmissions of
    chained domains as ``hard`` (indices, that phase's jobs) for the event loop."""

    jobs: PhaseJobs
    group: np.ndarray  # (phase, domain) of each job
    phase_of_job: np.ndarray
    easy: np.ndarray
    hard: list[tuple[np.ndarray, PhaseJobs]]


def _queues_matter(schedule) -> bool:
    """Whether a receiver's port can ever delay a reception of a dependency schedule: some rank receives
    more than once (a rank receiving one message takes it when it comes), or the schedule orders receptions."""
    return schedule.recv_prev is not None or not receives_alone(schedule.dst, schedule.nprocs)


def _queues(schedule) -> bool:
    """Whether a rank of a phased schedule receives more than one transmission in a phase (its receiver's
    queue then counts: the staircase alone does not price it)."""
    key = schedule.phase * schedule.nprocs + schedule.dst
    return len(key) > 0 and len(np.unique(key)) < len(key)


@register_model
class TauLop(Model):
    """tau-Lop (paper 000 section 3): transfers contend per channel (A1-A3), overhead per processor."""

    folds_by_rank_shift = True  # where its contention domains pass the check too (PlacedSchedule.of_folded)
    fold_checks_domains = True
    NAME = "taulop"
    DESCRIPTION = "tau-Lop: concurrent transfers share a channel (A1-A3); exact event-driven engine + paper algebra"
    PARAMS = TauLopParams

    def __init__(self, params: TauLopParams, fast: bool = True, merge_a1: bool = True, fold: bool = True,
                 shortcuts: bool = True) -> None:
        super().__init__(params)
        self.fast = fast
        self.merge_a1 = merge_a1
        self.fold = fold  # price symmetric dependency schedules by one node's share (exact; False: never)
        self.fold_from = MIN_TRANSMISSIONS  # ... when they have at least this many transmissions
        self.shortcuts = shortcuts  # size sweeps of large dependency schedules: .dependency_sweep's exact shortcuts
        self._laws: dict[tuple[str, tuple[str, ...]], TransmissionLaw] = {}

    def laws_for(self, placed: PlacedSchedule) -> list[TransmissionLaw]:
        """The compiled T^c(m, tau) of each channel the schedule uses (None for the others)."""
        return channel_laws(self.params, placed, self._laws)

    @classmethod
    def statistics_columns(cls, models: list["TauLop"], placed: PlacedSchedule, statistic: str) -> np.ndarray | None:
        """Each model's :meth:`statistic_s` of ``placed``, the same numbers, its event loop walked once for all
        (:func:`.dependency_columns.statistics_columns`; None where that does not apply)."""
        from commcost.models.taulop.dependency_columns import statistics_columns

        return statistics_columns(models, placed, statistic, _queues_matter(placed.schedule))

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        """The receiving side of each transmission: its channel's last transfer alone, L^k(m, 1) (the
        receiver's copy out of shared memory or the socket buffer, the RDMA into its memory). A rank takes
        one message at a time, so P - 1 messages into one rank cost it P - 1 such transfers (paper 003's
        concurrency at the receiving side, tau transfers into one rank, at its limit of one rank)."""
        return self._hold_law(placed.platform)(placed.channel, placed.schedule.nbytes)

    def _hold_law(self, platform):
        """(channel index, sizes) -> L^k(m, 1), k the channel's last transfer."""
        tables = []
        for ch in platform.channels:
            last = ch.transfers[-1] if ch.transfers else ch.name
            tables.append(self.params.tables.get(last))

        def law(channel: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
            out = np.zeros(len(nbytes))
            for index in np.flatnonzero(np.bincount(channel, minlength=len(tables))).tolist():
                table = tables[index]
                if table is None:
                    ch = platform.channels[index]
                    last = ch.transfers[-1] if ch.transfers else ch.name
                    raise InputError(f"tau-Lop parameters have no table {last!r} (needed by channel {ch.name!r}); "
                                     f"expected one of {sorted(self.params.tables)}", where=f"taulop.{last}")
                sel = channel == index
                out[sel] = table.L(nbytes[sel], 1)
            return out
        return law

    def _phase_jobs(self, placed: PlacedSchedule):
        s = placed.schedule
        for sl in s.phase_slices():
            yield sl, build_jobs(s.src[sl], placed.channel[sl], placed.domain[sl], s.nbytes[sl],
                                 s.posted[sl], merge_a1=self.merge_a1)

    def _split(self, placed: PlacedSchedule) -> "_Split":
        """All phases' jobs at once, keyed by (phase, rank), split into those the staircase prices and
        those the event loop must run.

        A contention domain of a phase is *chained* when some job in it waits
        for another job of its rank (a chain of blocking sends across
        channels). Domains do not interfere (A3), so every job of an
        unchained domain starts at 0 and the staircase is exact there; the
        jobs of chained domains (and so every job of every waiting chain) go
        to the event loop, phase by phase.
        """
        s = placed.schedule
        key = s.phase * s.nprocs + s.src  # A1 and chains are per (phase, rank)
        jobs = build_jobs(key, placed.channel, placed.domain, s.nbytes, s.posted, merge_a1=self.merge_a1)
        phase_of_job = jobs.src // s.nprocs
        group = phase_of_job * (int(placed.domain.max(initial=0)) + 1) + jobs.domain
        if jobs.all_start_together:
            return _Split(jobs, group, phase_of_job, np.ones(jobs.njobs, bool), [])
        in_chain = (jobs.chain_next >= 0) | (jobs.position > 0)
        chained_groups = np.unique(group[in_chain])
        easy = ~np.isin(group, chained_groups)
        hard_tx = ~easy[jobs.job_of_transmission]
        parts = []
        for sl in s.phase_slices():
            idx = np.flatnonzero(hard_tx[sl]) + sl.start
            if len(idx):
                parts.append((idx, build_jobs(s.src[idx], placed.channel[idx], placed.domain[idx], s.nbytes[idx],
                                              s.posted[idx], merge_a1=self.merge_a1)))
        return _Split(jobs, group, phase_of_job, easy, parts)

    def _dependency_run(self, placed: PlacedSchedule, trace: bool = False, origin: np.ndarray | None = None):
        """A dependency schedule through :mod:`.dependency_engine` (reductions inside: what waits for a
        reception waits for its reduction); folded to one node's share where the placed schedule is
        symmetric under a shift of ranks (:mod:`commcost.models.symmetry`; not when tracing pieces)."""
        s = placed.schedule
        service = self.reduction_service_s(s)
        occupancy = self.receive_occupancy_s(placed) if _queues_matter(s) else None
        fold = None if trace or origin is not None else self._fold(placed)
        keep, *arrays = self._engine_view(placed, fold)
        run = simulate_dependencies(placed.domain[keep], placed.channel[keep], s.nbytes[keep], *arrays,
                                    self.laws_for(placed), None if service is None else service[keep], trace,
                                    None if occupancy is None else occupancy[keep],
                                    s.recv_prev if fold is None else fold.recv_prev,
                                    holder=placed, key=self.prepared_key(fold), origin=origin)
        return run if fold is None else DependencyRun(run.end_s[fold.rep], run.done_s[fold.rep], run.pieces)

    def prepared_key(self, fold: Fold | None) -> str:
        """Where a placed schedule keeps the engine's preparation of what this model runs of it: the whole
        schedule, or its fold by this model's :attr:`fold_from` (:func:`.dependency_engine.prepare`)."""
        return PREPARED_KEY if fold is None else f"{PREPARED_KEY}_{self.fold_from}"

    def _fold(self, placed: PlacedSchedule) -> Fold | None:
        """The schedule folded by the shift of ranks by one node's ranks, where that is a symmetry (receptions
        queue at their receivers: the folded ranks must receive what the ranks they stand for do). Looked for
        once per placed schedule and kept on it (a fit prices the same one hundreds of times)."""
        if not self.fold:
            return None
        key = f"_taulop_fold_{self.fold_from}"
        if key not in placed.__dict__:  # (a frozen dataclass: its fields stay as they are)
            s = placed.schedule
            placed.__dict__[key] = rank_shift_fold(
                s.src, s.dst, s.phase, s.nbytes, placed.channel, placed.domain, s.after_ptr, s.after_idx, s.nprocs,
                node_period(placed.mapping.node_of_rank), same=(s.combine,), receivers=True,
                min_transmissions=self.fold_from, recv_prev=s.recv_prev)
        return placed.__dict__[key]

    @staticmethod
    def _engine_view(placed: PlacedSchedule, fold: Fold | None) -> tuple:
        """What the engine runs: the transmissions kept (all, or the fold's representatives), then their
        senders, receivers, the number of ranks and the waits."""
        s = placed.schedule
        if fold is None:
            return slice(None), s.src, s.dst, s.nprocs, s.after_ptr, s.after_idx
        return fold.keep, fold.src, fold.dst, fold.nprocs, fold.after_ptr, fold.after_idx

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        if placed.schedule.has_dependencies:
            return self._dependency_run(placed).done_s
        return self.phased_receptions(placed, self._phased_ends(placed))

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A send completes when its bytes have moved (its fixed cost paid); its receiver is done as
        :meth:`end_times` says; ``origin``: each rank's own start (:meth:`Model.completions`)."""
        run = self._dependency_run(placed, origin=origin)
        return run.end_s, run.done_s

    def _phased_ends(self, placed: PlacedSchedule) -> np.ndarray:
        """When each transmission of a phased schedule has moved its bytes (A1-A3), before its receiver's
        queue."""
        laws = self.laws_for(placed)
        if not self.fast:
            end = np.zeros(placed.schedule.ntransmissions)
            for sl, jobs in self._phase_jobs(placed):
                end[sl] = simulate_phase(jobs, laws, fast=False).job_end_s[jobs.job_of_transmission]
            return end
        split = self._split(placed)
        jobs, easy = split.jobs, split.easy
        job_end = np.zeros(jobs.njobs)
        job_end[easy], _ = staircase(split.group[easy], jobs.channel[easy], jobs.nbytes[easy], laws)
        end = job_end[jobs.job_of_transmission]
        for idx, part in split.hard:
            end[idx] = simulate_phase(part, laws, fast=False).job_end_s[part.job_of_transmission]
        return end

    def price_scaled(self, placed: PlacedSchedule, factors: np.ndarray) -> np.ndarray:
        """Total time of the schedule with every size multiplied by each factor (> 0), in one pass.

        For message-size sweeps of schedules whose sizes all scale with the
        message (unsegmented trees): equal to pricing each scaled schedule,
        but one sort and one law evaluation per piece serve every factor;
        only the domains reached by chains of blocking sends (:meth:`_split`)
        run the event loop once per factor.
        """
        factors = np.asarray(factors, dtype=np.float64)
        s = placed.schedule
        if s.has_dependencies:
            service_of = None
            if self.reduction is not None and s.combine.any():
                service_of = lambda f: self.reduction_service_s(s.scaled(f))  # noqa: E731
            fold = self._fold(placed)
            keep, *arrays = self._engine_view(placed, fold)
            kept_service = None if service_of is None else (lambda f: service_of(f)[keep])  # noqa: E731
            return sweep_dependencies(placed.domain[keep], placed.channel[keep], s.nbytes[keep], *arrays,
                                      self.laws_for(placed), factors, kept_service,
                                      phase=s.phase[keep] if self.shortcuts else None,
                                      shift=node_period(placed.mapping.node_of_rank) if self.fold else None,
                                      hold_law=self._hold_law(placed.platform) if _queues_matter(s) else None,
                                      recv_prev=s.recv_prev if fold is None else fold.recv_prev)
        if not self.fast or (self.reduction is not None and s.combine.any()) or _queues(s):
            return np.array([self.total_time_s(self._scaled(placed, f)) for f in factors])
        laws = self.laws_for(placed)
        split = self._split(placed)
        jobs, easy = split.jobs, split.easy
        phase_time = staircase_phase_times(split.group[easy], split.phase_of_job[easy], jobs.channel[easy],
                                           jobs.nbytes[easy], laws, factors, s.nphases)
        for idx, part in split.hard:
            phase = int(s.phase[idx[0]])
            for k, f in enumerate(factors.tolist()):
                scaled = replace(part, nbytes=part.nbytes * f)
                ends = simulate_phase(scaled, laws, fast=False).job_end_s
                phase_time[k, phase] = max(phase_time[k, phase], float(ends.max(initial=0.0)))
        return phase_time @ s.repeat

    @staticmethod
    def _scaled(placed: PlacedSchedule, factor: float) -> PlacedSchedule:
        """The placed schedule with every size times ``factor``."""
        return PlacedSchedule(placed.schedule.scaled(factor), placed.platform, placed.mapping, placed.channel,
                              placed.domain)

    def floor_scaled(self, placed: PlacedSchedule, factors: np.ndarray) -> np.ndarray:
        """A lower bound of :meth:`price_scaled` for a dependency schedule, at each factor, from one pass
        over its waits, the largest contention domain's load and the busiest receiver's (:mod:`.floor`): what
        branch and bound compares with the best time so far before running the event engine."""
        s = placed.schedule
        if not s.has_dependencies:
            raise ValueError("floors are for dependency schedules; a phased schedule is priced in full")
        laws = self.laws_for(placed)
        path = floor_times(laws, placed.channel, s.nbytes, s.src, s.after_ptr, s.after_idx, factors)
        carried = domain_loads_s(laws, placed.channel, placed.domain, s.nbytes)[1].max() * np.asarray(factors)
        taken = [float(row.max()) for row in self._receiver_loads_s(placed, np.asarray(factors, dtype=np.float64))]
        return np.maximum(np.maximum(path, carried), taken)

    def loads_s(self, placed: PlacedSchedule) -> tuple[np.ndarray, np.ndarray]:
        """(keys, seconds): what each contention domain's bytes take at least at its best aggregate pace (keys
        >= 0: the domains) and what each rank's receptions take at least (keys -1 - rank), :mod:`.floor`;
        the largest is a lower bound of the price of a dependency schedule."""
        keys, carried = domain_loads_s(self.laws_for(placed), placed.channel, placed.domain, placed.schedule.nbytes)
        taken = next(self._receiver_loads_s(placed, np.ones(1)))
        return np.r_[-1 - np.arange(len(taken)), keys], np.r_[taken, carried]

    def _receiver_loads_s(self, placed: PlacedSchedule, factors: np.ndarray) -> Iterator[np.ndarray]:
        """Per factor, :func:`.floor.receiver_loads_s` with every size times ``factors[k]``: holds and
        reductions evaluated at each distinct (channel, size) once per factor, the pairs found once (a floor
        at 41 sizes of a million transmissions sorted them 41 times: 6.6 s against 0.2 s to price them)."""
        s = placed.schedule
        if s.ntransmissions == 0:
            yield from (np.zeros(s.nprocs) for _ in range(len(factors)))
            return
        sizes, at = unique_inverse(s.nbytes)
        queues = _queues_matter(s)
        if queues:
            pairs, pair_at = unique_inverse(placed.channel.astype(np.int64) * len(sizes) + at)
            hold_law = self._hold_law(placed.platform)
        reduces = self.reduction is not None and s.combine.any()
        for factor in np.asarray(factors, dtype=np.float64).tolist():
            hold = hold_law(pairs // len(sizes), sizes[pairs % len(sizes)] * factor)[pair_at] if queues else None
            service = np.where(s.combine, self.reduction.times(sizes * factor)[at], 0.0) if reduces else None
            yield receiver_loads_s(s.dst, s.nprocs, hold, service)

    def formula(self, placed: PlacedSchedule) -> tuple[algebra.Sum, list[algebra.Sum]]:
        """The paper's cost expression: the whole schedule (A1-merged) and each phase."""
        phases = [algebra.phase_expression(jobs) for _, jobs in self._phase_jobs(placed)]
        runs = [expr for expr, k in zip(phases, placed.schedule.repeat.tolist()) for _ in range(k)]
        return algebra.merge_a1(algebra.concat(runs)), phases

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        if placed.schedule.has_dependencies:
            return self._explain_dependencies(placed, cost)
        laws = self.laws_for(placed)
        ids = [ch.id for ch in placed.platform.channels]
        unit = placed.schedule.unit.nbytes
        total, phases = self.formula(placed)
        formula_s = algebra.value(total, laws)
        timeline = []
        for (sl, jobs), name in zip(self._phase_jobs(placed), placed.schedule.phase_names):
            for piece in simulate_phase(jobs, laws, trace=True, fast=self.fast).pieces:
                timeline.append({
                    "phase": name, "channel": placed.platform.channels[piece.channel].name,
                    "tau": piece.tau, "nbytes": piece.nbytes, "start_s": piece.start_s,
                    "end_s": piece.end_s, "cut": piece.cut,
                })
        return {
            "beyond_table": beyond_table_text(laws),
            "formula": algebra.to_text(total, ids.__getitem__, unit),
            "formula_latex": algebra.to_latex(total, ids.__getitem__, unit),
            "formula_s": formula_s,
            "engine_s": cost.time_s,
            "formula_minus_engine_s": formula_s - cost.time_s,
            "unit": placed.schedule.unit.name,
            "phases": [
                {"name": name, "formula": algebra.to_text(expr, ids.__getitem__, unit),
                 "formula_s": algebra.value(expr, laws), "engine_s": float(t)}
                for name, expr, t in zip(placed.schedule.phase_names, phases, cost.phase_time_s)
            ],
            "timeline": timeline,
        }

    def _explain_dependencies(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        """The engine's timeline of a dependency schedule; the paper's algebra covers phased schedules only."""
        run = self._dependency_run(placed, trace=True)
        p = run.pieces
        channels = placed.platform.channels
        timeline = [{"phase": "", "channel": channels[int(c)].name, "tau": int(t), "nbytes": float(b),
                     "start_s": float(a), "end_s": float(e), "cut": bool(k)}
                    for c, t, b, a, e, k in zip(p["channel"], p["tau"], p["nbytes"], p["start_s"], p["end_s"],
                                                p["cut"])]
        timeline.sort(key=lambda piece: (piece["start_s"], piece["end_s"]))
        return {
            "beyond_table": beyond_table_text(self.laws_for(placed)),
            "engine_s": cost.time_s,
            "note": "a dependency schedule: transmissions start when what they wait for has completed; the "
                    "paper's algebra (eq. 5-10) describes phased schedules, so no formula is given",
            "unit": placed.schedule.unit.name,
            "timeline": timeline,
        }
