"""Scoring a selection against measurements: the penalty of each way of choosing, per point and overall.

Paper 004 Table 3 compares, at each (P, n), the measured time of the
algorithm a strategy picks with the measured time of the best algorithm:

    penalty(%) = 100 * (T_measured(choice) / min_a T_measured(a) - 1)

Strategies scored here: the model-based selection, Open MPI's fixed
decision (when the algorithm it picks was measured), and the best single
algorithm (the one candidate with the least mean penalty over all points,
chosen with hindsight: the baseline a tuned-once site would use). Summary
figures: mean and max penalty, share of points within 5% and 10% of the
best.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

Point = tuple[int, int]  # (nprocs, nbytes)


@dataclass(frozen=True)
class PointScore:
    """One (P, n): the measured best, and each strategy's pick with its measured time and penalty."""

    nprocs: int
    nbytes: int
    best: Hashable
    best_time_s: float
    picks: dict[str, tuple[Hashable | None, float, float]]  # strategy -> (choice, measured time, penalty %)


def penalties(measured: Mapping[Point, Mapping[Hashable, float]],
              strategies: Mapping[str, Callable[[int, int], Hashable | None]],
              timed: Mapping[str, Mapping[Point, float]] | None = None) -> list[PointScore]:
    """Score every strategy at every measured point (a pick that was not measured scores nan).

    ``measured[(P, n)][choice] = seconds``. The best single algorithm is
    added as the strategy ``best single algorithm``. ``timed[name][(P, n)]``
    scores strategies measured as such rather than picked among the
    algorithms (Open MPI's own decision, run with no algorithm forced),
    against the same best.
    """
    points = sorted(measured)
    keys = sorted({k for times in measured.values() for k in times}, key=str)
    table = np.array([[measured[p].get(k, np.nan) for k in keys] for p in points])
    best_time = np.nanmin(table, axis=1)
    single = best_single(measured)
    every = dict(strategies)
    every["best single algorithm"] = lambda nprocs, nbytes: single
    out = []
    for i, (nprocs, nbytes) in enumerate(points):
        picks = {}
        for name, choose in every.items():
            pick = choose(nprocs, nbytes)
            t = measured[(nprocs, nbytes)].get(pick, np.nan) if pick is not None else np.nan
            picks[name] = (pick, float(t), float(100.0 * (t / best_time[i] - 1.0)))
        for name, times in (timed or {}).items():
            t = times.get((nprocs, nbytes), np.nan)
            picks[name] = (name if t == t else None, float(t), float(100.0 * (t / best_time[i] - 1.0)))
        best = keys[int(np.nanargmin(table[i]))]
        out.append(PointScore(nprocs, nbytes, best, float(best_time[i]), picks))
    return out


def summary(scores: Sequence[PointScore], strategy: str) -> dict[str, float]:
    """Mean and max penalty (%), shares within 5% and 10%, over the points where the pick was measured."""
    values = np.array([s.picks[strategy][2] for s in scores], dtype=np.float64)
    return summary_of(values, np.isfinite(values))


def summary_of(penalty_pct: np.ndarray, scored: np.ndarray) -> dict[str, float]:
    """The summary figures of penalties (%) where ``scored`` is true; the rest count as unscored."""
    values = np.asarray(penalty_pct, dtype=np.float64).ravel()
    scored = np.asarray(scored, dtype=bool).ravel()
    kept = values[scored]
    if not len(kept):
        return {"points": 0, "unscored": int(len(values)), "mean_pct": float("nan"), "max_pct": float("nan"),
                "within_5pct": float("nan"), "within_10pct": float("nan")}
    return {"points": int(len(kept)), "unscored": int(len(values) - len(kept)),
            "mean_pct": float(kept.mean()), "max_pct": float(kept.max()),
            "within_5pct": float(np.mean(kept <= 5.0 + 1e-9)),
            "within_10pct": float(np.mean(kept <= 10.0 + 1e-9))}


def best_single(measured: Mapping[Point, Mapping[Hashable, float]]) -> Hashable | None:
    """The algorithm with the least mean penalty over the points where every candidate was measured (the one
    a site tuned once on these points would keep everywhere)."""
    points = sorted(measured)
    keys = sorted({k for times in measured.values() for k in times}, key=str)
    if not points or not keys:
        return None
    table = np.array([[measured[p].get(k, np.nan) for k in keys] for p in points])
    pen = table / np.nanmin(table, axis=1)[:, None] - 1.0
    with np.errstate(invalid="ignore"):
        mean_pen = np.where(np.isnan(pen).any(axis=0), np.inf, np.nanmean(pen, axis=0))
    return keys[int(np.argmin(mean_pen))]
