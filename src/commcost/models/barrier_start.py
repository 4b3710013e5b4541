"""What a benchmark that times each rank's call between barriers reports: every rank's start skewed by the barrier.

OSU's collective benchmarks (5.x-7.x) time each iteration on every rank as
``t0 = now; call; t1 = now; barrier``, and report the mean of t1 - t0 over
ranks (``-f``: also the least and the largest). A rank's clock thus starts
when the previous iteration's barrier released it, not when every rank
does: a leaf the barrier lets go early waits for its data inside its timed
call, a root let go late finds its children already there. In steady state
(issue "Selections that beat Open MPI's default", item 1):

    e_r    = each rank's end of the call, all ranks starting at 0
    x_r    = each rank's exit from the barrier entered at e_r
             (the barrier's schedule priced from those starts, same model)
    e'_r   = each rank's end of the call, rank r starting at x_r
    time_r = e'_r - x_r

and the row's figure is the statistic of time_r over ranks (mean, max,
min, rank 0; :data:`commcost.models.base.STATISTICS`). Each start is a
max of sums of the model's piecewise-linear times, so the figure stays
piecewise linear in the parameters (the fit's steps stay exact).

Three pricings per point (the call, the barrier, the call again); more
rounds (``rounds``) repeat the last two. Which barrier runs is the
library's choice (:mod:`commcost.collectives.barrier`); the models only
need its placed schedule.
"""

from __future__ import annotations

import numpy as np

from commcost.models.base import STATISTICS, Model, PlacedSchedule


def barrier_starts_s(model: Model, placed: PlacedSchedule, barrier: PlacedSchedule,
                     rounds: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)`` per rank, seconds on one clock, of the call ``placed`` timed after the barrier
    ``barrier`` in a loop of call and barrier (module docstring): ``start`` when the barrier let each rank go,
    ``end`` when its part of the call was over, after ``rounds`` rounds (>= 1) from all ranks at 0."""
    if barrier.schedule.nprocs != placed.schedule.nprocs:
        raise ValueError(f"a barrier of {barrier.schedule.nprocs} ranks before a call of {placed.schedule.nprocs}")
    ends = model.rank_ends_s(placed)
    start = np.zeros_like(ends)
    for _ in range(max(1, int(rounds))):
        start = model.rank_ends_s(barrier, ends)
        ends = model.rank_ends_s(placed, start)
    return start, ends


def after_barrier_statistic_s(model: Model, placed: PlacedSchedule, barrier: PlacedSchedule,
                              statistic: str = "mean", rounds: int = 1) -> float:
    """``statistic`` over ranks of each rank's own time of the call (its end minus its start), every rank
    started as ``barrier`` released it (:func:`barrier_starts_s`): what OSU's Avg (``mean``), Min and Max
    Latency report. ``max`` here is the largest rank's own time, not the schedule's last end."""
    if statistic == "":
        statistic = "max"
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {STATISTICS}")
    start, ends = barrier_starts_s(model, placed, barrier, rounds)
    times = ends - start
    if len(times) == 0:
        return 0.0
    if statistic == "mean":
        return float(times.mean())
    if statistic == "max":
        return float(times.max())
    return float(times.min()) if statistic == "min" else float(times[0])
