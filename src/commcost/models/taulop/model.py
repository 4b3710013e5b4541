"""tau-Lop as a registered model: the exact engine prices, the algebra explains."""

from __future__ import annotations

from typing import Any

import numpy as np

from commcost.models.base import Cost, Model, PlacedSchedule, register_model
from commcost.models.taulop import algebra
from commcost.models.taulop.engine import simulate_phase
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

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        laws = channel_laws(self.params, placed)
        end = np.zeros(placed.schedule.ntransmissions)
        for sl, jobs in self._phase_jobs(placed):
            result = simulate_phase(jobs, laws, fast=self.fast)
            end[sl] = result.job_end_s[jobs.job_of_transmission]
        return end

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
