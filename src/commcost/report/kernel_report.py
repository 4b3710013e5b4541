"""A kernel's predicted cost per iteration and in total, per model and channel (paper 000 eq. 11, 14).

Runs of identical iterations (:func:`commcost.kernels.iterations.iteration_groups`)
are one row each: the cost of one iteration is the sum of its phases' times,
and the run costs that times its repeat count.
"""

from __future__ import annotations

from typing import Any

from commcost.kernels.iterations import iteration_groups
from commcost.models.base import Cost
from commcost.schedule import Schedule
from commcost.units import format_seconds


def kernel_to_dict(schedule: Schedule, costs: list[Cost]) -> dict[str, Any]:
    """Plain data: per model, the total, the channels' times and each run's per-iteration cost."""
    groups = iteration_groups(schedule)
    return {
        "kernel": schedule.name,
        "iterations": sum(r for *_, r in groups),
        "models": [{
            "model": cost.model,
            "time_s": cost.time_s,
            "channel_time_s": cost.channel_time_s,
            "runs": [{"iterations": label, "repeat": r,
                      "iteration_s": float(sum(cost.phase_time_s[k] for k in phases)),
                      "phases": {schedule.phase_names[k].split(" ", 1)[0]: float(cost.phase_time_s[k])
                                 for k in phases}}
                     for label, phases, r in groups],
        } for cost in costs],
    }


def render_kernel(schedule: Schedule, costs: list[Cost], max_rows: int = 30, unit: str | None = None) -> str:
    """Text: one row per run of identical iterations (cost of one iteration per model), then totals; times in
    ``unit`` (:data:`commcost.units.TIME_UNITS`; None: each in its own)."""
    groups = iteration_groups(schedule)
    iterations = sum(r for *_, r in groups)
    lines = [f"{schedule.name}: {iterations} iterations; {schedule.ntransmissions} transmissions stored, "
             f"{schedule.transmissions_run} run", ""]
    lines.append(f"  {'iterations':<16} {'runs':>5}" + "".join(f" {c.model + '/iter':>18}" for c in costs))
    for label, phases, r in groups[:max_rows]:
        cells = "".join(f" {format_seconds(float(sum(c.phase_time_s[k] for k in phases)), unit):>18}" for c in costs)
        lines.append(f"  {label:<16} {r:>5}{cells}")
    if len(groups) > max_rows:
        lines.append(f"  ... {len(groups) - max_rows} more runs")
    lines.append(f"  {'total':<16} {iterations:>5}" + "".join(f" {format_seconds(c.time_s, unit):>18}" for c in costs))
    lines.append("")
    for c in costs:
        channels = ", ".join(f"{name} {format_seconds(t, unit)}" for name, t in c.channel_time_s.items()
                             if c.channel_count[name])
        lines.append(f"  {c.model}: total {format_seconds(c.time_s, unit)}; "
                     f"per channel (phase ends, summed): {channels}")
    return "\n".join(lines)
