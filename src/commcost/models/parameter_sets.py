"""One placed schedule priced under many parameter sets of one model: a fit's finite differences.

A fit of model parameters to collective timings
(:mod:`commcost.calibration.fit_from_collectives`) prices each training
schedule at theta and at theta + h e_j for every parameter j that can move
it. Priced one set at a time, each pricing pays again for everything the
sets share (the schedule's structure, its walk, the statistic's
bookkeeping). :func:`statistics_s` prices them together: every model's
:meth:`~commcost.models.base.Model.transmission_times`, then one walk of
the schedule for all of them (:mod:`.dependency_batch`), then each set's
statistic over ranks. The numbers are each model's own
:meth:`~commcost.models.base.Model.statistic_s`, to the last bit: the same
recurrences on the same values in the same order.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from commcost.jit import njit
from commcost.models.base import STATISTICS, Model, PlacedSchedule
from commcost.models.dependency_batch import dependency_completions_columns
from commcost.models.symmetry import placed_fold
from commcost.schedule import Schedule


@njit
def _rank_ends(nprocs, src, dst, sent, done):  # pragma: no cover - compiled
    """(sets, ranks): each rank's last send completed and last reception done, at least 0, per set."""
    n, c = sent.shape
    out = np.zeros((c, nprocs))
    for i in range(n):
        s, d = src[i], dst[i]
        for q in range(c):
            if sent[i, q] > out[q, s]:
                out[q, s] = sent[i, q]
            if done[i, q] > out[q, d]:
                out[q, d] = done[i, q]
    return out


def _statistics(schedule: Schedule, sent: np.ndarray, done: np.ndarray, statistic: str) -> np.ndarray:
    """:meth:`~commcost.models.base.Model.statistic_s` of every column's (sent, done), the same numbers."""
    if statistic in ("max", ""):
        return done.max(axis=0, initial=0.0)
    if statistic not in ("mean", "min", "rank0"):
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {STATISTICS}")
    if schedule.nprocs == 0:
        return np.zeros(sent.shape[1])
    ends = _rank_ends(schedule.nprocs, np.ascontiguousarray(schedule.src, dtype=np.int64),
                      np.ascontiguousarray(schedule.dst, dtype=np.int64), np.ascontiguousarray(sent),
                      np.ascontiguousarray(done))
    if statistic == "mean":  # along each contiguous row: the pairwise sum of one set's ranks, as alone
        return ends.mean(axis=1)
    return ends.min(axis=1) if statistic == "min" else ends[:, 0].copy()


def statistics_s(models: Sequence[Model], placed: PlacedSchedule, statistic: str = "max") -> np.ndarray:
    """``[m.statistic_s(placed, statistic) for m in models]``, the same numbers, in one walk of the schedule
    where the models (of one class) give their :meth:`~commcost.models.base.Model.time_columns`, or walk
    their own columns (a ``statistics_columns`` class method: tau-Lop's,
    :func:`commcost.models.taulop.dependency_columns.statistics_columns`); one at a time otherwise."""
    s = placed.schedule
    kind = type(models[0]) if models else None
    alike = len(models) > 1 and all(type(m) is kind for m in models)
    walk = getattr(kind, "statistics_columns", None) if alike else None  # a model walking its own columns (tau-Lop)
    got = None if walk is None else walk(list(models), placed, statistic)
    if got is not None:
        return got
    times = kind.time_columns(list(models), placed) if s.has_dependencies and alike else None
    if times is None:
        return np.array([m.statistic_s(placed, statistic) for m in models], dtype=np.float64)
    sent, done = dependency_completions_columns(s.src, s.dst, s.after_ptr, s.after_idx, s.nprocs, times,
                                                recv_prev=s.recv_prev, schedule=s, folded=placed_fold(placed))
    return _statistics(s, sent, done, statistic)
