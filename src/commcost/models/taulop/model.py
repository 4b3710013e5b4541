"""tau-Lop as a registered model: the exact engine prices, the algebra explains."""

from __future__ import annotations

from typing import Any

import numpy as np

from commcost.models.base import Cost, Model, PlacedSchedule, register_model
from commcost.models.taulop import algebra
from commcost.models.taulop.engine import simulate_phase, staircase
from commcost.models.taulop.jobs import build_jobs
from commcost.models.taulop.params import TauLopParams, TransmissionLaw


def channel_laws(params: TauLopParams, placed: PlacedSchedule) -> list[TransmissionLaw]:
    """The compiled law of each channel the schedule uses (None for the others)."""
    used = set(np.unique(placed.channel).tolist())
    return [
        params.law(ch.name, ch.transfers) if index in used else None  # type: ignore[misc]
        for index, ch in enumerate(placed.platform.channels)
    ]


@register_model
class TauLop(Model):
    """tau-Lop (paper 000 section 3): transfers contend per channel (A1-A3), overhead per processor."""

    NAME = "taulop"
    DESCRIPTION = "tau-Lop: concurrent transfers share a channel (A1-A3); exact event-driven engine + paper algebra"
    PARAMS = TauLopParams

    def __init__(self, params: TauLopParams, fast: bool = True, merge_a1: bool = True) -> None:
        super().__init__(params)
        self.fast = fast
        self.merge_a1 = merge_a1

    def _phase_jobs(self, placed: PlacedSchedule):
        s = placed.schedule
        for sl in s.phase_slices():
            yield sl, build_jobs(s.src[sl], placed.channel[sl], placed.domain[sl], s.nbytes[sl],
                                 s.posted[sl], merge_a1=self.merge_a1)

    def _whole_schedule_jobs(self, placed: PlacedSchedule):
        """All phases' jobs at once, keyed by (phase, rank); None when some job waits for another."""
        s = placed.schedule
        key = s.phase * s.nprocs + s.src  # A1 and chains are per (phase, rank)
        jobs = build_jobs(key, placed.channel, placed.domain, s.nbytes, s.posted, merge_a1=self.merge_a1)
        if not jobs.all_start_together:
            return None, None
        phase_of_job = jobs.src // s.nprocs
        group = phase_of_job * (int(placed.domain.max(initial=0)) + 1) + jobs.domain
        return jobs, group

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        laws = channel_laws(self.params, placed)
        if self.fast:  # one vectorized staircase over every phase when no job waits for another
            jobs, group = self._whole_schedule_jobs(placed)
            if jobs is not None:
                job_end, _ = staircase(group, jobs.channel, jobs.nbytes, laws)
                return job_end[jobs.job_of_transmission]
        end = np.zeros(placed.schedule.ntransmissions)
        for sl, jobs in self._phase_jobs(placed):
            result = simulate_phase(jobs, laws, fast=self.fast)
            end[sl] = result.job_end_s[jobs.job_of_transmission]
        return end

    def price_scaled(self, placed: PlacedSchedule, factors: np.ndarray) -> np.ndarray:
        """Total time of the schedule with every size multiplied by each factor (> 0), in one pass.

        For message-size sweeps of schedules whose sizes all scale with the
        message (unsegmented trees): equal to pricing each scaled schedule,
        but one sort and one law evaluation per piece serve every factor.
        """
        factors = np.asarray(factors, dtype=np.float64)
        laws = channel_laws(self.params, placed)
        s = placed.schedule
        jobs, group = self._whole_schedule_jobs(placed) if self.fast else (None, None)
        if jobs is None:
            return np.array([self.price(PlacedSchedule(s.scaled(f), placed.platform, placed.mapping,
                                                       placed.channel, placed.domain)).time_s for f in factors])
        job_end, _ = staircase(group, jobs.channel, jobs.nbytes, laws, scale=factors)
        phase_of_job = jobs.src // s.nprocs
        phase_time = np.zeros((len(factors), s.nphases))
        for k in range(len(factors)):
            np.maximum.at(phase_time[k], phase_of_job, job_end[k])
        return phase_time.sum(axis=1)

    def formula(self, placed: PlacedSchedule) -> tuple[algebra.Sum, list[algebra.Sum]]:
        """The paper's cost expression: the whole schedule (A1-merged) and each phase."""
        phases = [algebra.phase_expression(jobs) for _, jobs in self._phase_jobs(placed)]
        return algebra.merge_a1(algebra.concat(phases)), phases

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        laws = channel_laws(self.params, placed)
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
