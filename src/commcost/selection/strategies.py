"""How to choose, chosen by forward cross-validation over P: the model, the model anchored in measurements,
the best constant algorithm, or the library's own default.

What for: a model fitted to a site's sweeps (P up to some P_train) is asked
for picks at process counts nobody measured. It may extrapolate well, or
not at all; the measured times at P_train may carry what the model misses;
one algorithm may simply be best everywhere; or nothing may beat what the
library already does. Which of these holds is itself learnt from the
training rows, never assumed (issue "Selections that beat Open MPI's
default on machines we never saw", items 4 and 5):

* **model**: the algorithm the model prices fastest at (P, n);
* **anchored**: each algorithm's level taken from its own measured time at
  the anchor P* (the largest trained P, at the same size) and only its
  growth in P from the model:
  T_a(P, n) = T_measured,a(P*, n) x T_model,a(P, n) / T_model,a(P*, n);
* **constant**: the one algorithm with the least mean penalty on the
  training rows (what a site tuned once would keep);
* **default**: no rule; the library decides (scored by its measured time).

Forward cross-validation: each of the ``folds`` largest training process
counts with a smaller one below it is held out in turn; the model is
refitted (``fit_below(P)``: on the rows of fewer ranks), the constant and
the anchor are taken from those rows, and every strategy's picks at the
held-out P are scored against the measured best there (paper 004 Table 3's
penalty). Only process counts in the regime of the largest trained P are
held out (several nodes, or one): what wins inside a node says little of
what wins across nodes, and the picks are for the larger P. The strategy with the least mean penalty over
the folds is kept; ways within :data:`TIE_PCT` points of it tie (a mean penalty resolves no finer than the
runs it is measured from), and a tie keeps the one listed first of default, anchored, constant, model (the
safest: no rule at all; then the way that reproduces the measurements nearest the picks, the largest
trained P, exactly and departs from them only by the model's relative growth; then one algorithm for every
P and size; then the model alone). Another way than the default is kept only where its mean beats the
default's by a margin: :data:`SINGLE_FOLD_MARGIN_PCT` points with one fold (one held-out P is one sample),
that divided by the square root of the number of folds with more (the standard error of a mean of k
independent folds). A strategy some fold cannot price (its refit lacks a channel the
held-out P uses: one node's rows say nothing of the network) is not
chosen: nothing vouches for it there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from commcost.selection.evaluate import best_single

Point = tuple[int, int]
Measured = Mapping[Point, Mapping[Hashable, float]]
ModelTimes = Callable[[Hashable, int, Sequence[int]], np.ndarray]  # (choice, P, sizes) -> predicted seconds
Pick = Callable[[int, int], "Hashable | None"]  # (P, n) -> choice, None: the library's default

STRATEGIES = ("default", "anchored", "constant", "model")  # ties keep the first (the safest)
FOLDS = 3
# Cross-validated mean penalties this close (percentage points) are a tie: the runs they come from differ by
# more (Peak's three runs of one forced algorithm at one point: a median 7% between the slowest and fastest).
TIE_PCT = 1.0
# With a single held-out P, another way must beat the default's cross-validated mean penalty by this many
# percentage points (the tolerance the selections are held to): one process count is one sample, and a
# smaller gain there was seen to turn into a loss a few nodes further (Peak's allgather and alltoall). With
# k folds, this over sqrt(k) (margin_pct): Peak's alltoall trained on P <= 128 gained 3.6 points over two
# folds (64: 9.8% against 13.6%, 128: 5.3% against 8.7%) and lost 20.6 at 256-512 ranks.
SINGLE_FOLD_MARGIN_PCT = 15.0


def margin_pct(folds: int) -> float:
    """How many points another way's cross-validated mean penalty must beat the default's by, over ``folds``
    held-out process counts: :data:`SINGLE_FOLD_MARGIN_PCT` / sqrt(folds)."""
    return SINGLE_FOLD_MARGIN_PCT / max(folds, 1) ** 0.5


def model_pick(times: ModelTimes, choices: Sequence[Hashable]) -> Pick:
    """The choice the model prices fastest at (P, n)."""
    cache: dict[Point, Hashable | None] = {}

    def pick(nprocs: int, nbytes: int) -> Hashable | None:
        key = (nprocs, nbytes)
        if key not in cache:
            priced = [float(times(c, nprocs, [nbytes])[0]) for c in choices]
            cache[key] = choices[int(np.argmin(priced))] if np.isfinite(min(priced)) else None
        return cache[key]
    return pick


def anchored_pick(times: ModelTimes, choices: Sequence[Hashable], measured: Measured) -> Pick:
    """The choice whose measured time at the anchor P* (the largest measured P not above P, at the same
    size), carried to P by the model's growth, is least (module docstring); the model's own time where an
    algorithm was not measured at the anchor."""
    procs = sorted({p for p, _ in measured})
    cache: dict[Point, Hashable | None] = {}

    def pick(nprocs: int, nbytes: int) -> Hashable | None:
        key = (nprocs, nbytes)
        if key in cache:
            return cache[key]
        below = [p for p in procs if p <= nprocs and (p, nbytes) in measured]
        best, best_t = None, np.inf
        for c in choices:
            model_here = float(times(c, nprocs, [nbytes])[0])
            t = model_here
            if below:
                anchor = below[-1]
                seen = measured[(anchor, nbytes)].get(c)
                model_there = float(times(c, anchor, [nbytes])[0]) if seen is not None else np.nan
                if seen is not None and model_there > 0 and np.isfinite(model_there):
                    t = seen * model_here / model_there
            if t < best_t:
                best, best_t = c, t
        cache[key] = best
        return best
    return pick


@dataclass
class StrategyChoice:
    """The cross-validated choice among :data:`STRATEGIES`: each one's mean penalty (%) over the folds it was
    scored in, the held-out process counts, the one kept, and each one's penalty per held-out P."""

    penalties: dict[str, float]
    folds: list[int]
    chosen: str
    scored_in: dict[str, int] = field(default_factory=dict)
    per_fold: dict[str, dict[int, float]] = field(default_factory=dict)  # strategy -> held-out P -> penalty %
    regime: Hashable | None = None  # the regime of the held-out P (several nodes or not); None: not told
    unvouched: list[int] = field(default_factory=list)  # P it is applied to in another regime (said by callers)
    beyond: str = "default"  # the way kept at those P (:func:`beyond_regime`)
    trained_up_to: int = 0  # the largest trained P: only P past it are extrapolated, and can be unvouched

    def way_at(self, nprocs: int) -> str:
        """The way of choosing at ``nprocs`` ranks: :attr:`chosen`, or :attr:`beyond` at the :attr:`unvouched` P."""
        return self.beyond if nprocs in self.unvouched else self.chosen

    def to_dict(self) -> dict:
        """Plain data for reports."""
        return {"chosen": self.chosen, "folds": list(self.folds), "cv_mean_penalty_pct": dict(self.penalties),
                "folds_scored": dict(self.scored_in), "not_cross_validated_at": list(self.unvouched),
                "kept_there": self.beyond,
                "cv_penalty_pct_per_fold": {name: {str(p): v for p, v in folds.items()}
                                            for name, folds in self.per_fold.items()}}


def _penalty(measured_at: Mapping[Hashable, float], pick: Hashable | None, default_s: float | None) -> float:
    """The measured penalty (%) of a pick at one point (None: the library's default, by its measured time)."""
    best = min(measured_at.values())
    t = default_s if pick is None else measured_at.get(pick)
    return np.nan if t is None or not np.isfinite(t) else 100.0 * (t / best - 1.0)


def strategy_picks(times: ModelTimes | None, choices: Sequence[Hashable], measured: Measured) -> dict[str, Pick]:
    """Each strategy's pick function, from a fitted model's times (None: no model) and the training rows."""
    constant = best_single(measured)
    picks: dict[str, Pick] = {"default": lambda nprocs, nbytes: None,
                              "constant": lambda nprocs, nbytes: constant}
    if times is not None:
        picks["anchored"] = anchored_pick(times, choices, measured)
        picks["model"] = model_pick(times, choices)
    return picks


def choose_strategy(measured: Measured, defaults: Mapping[Point, float], choices: Sequence[Hashable],
                    fit_below: Callable[[int], ModelTimes | None], folds: int = FOLDS,
                    regime: Callable[[int], Hashable] | None = None) -> StrategyChoice:
    """Forward cross-validation over P among :data:`STRATEGIES` (module docstring): ``measured`` the training
    rows' times of the forced algorithms, ``defaults`` the library's own measured times, ``fit_below(P)``
    the model refitted on the rows of fewer than P ranks (None where it cannot be). ``regime(P)`` (one node,
    or several): only process counts in the regime of the largest trained P are held out, the one the picks
    are for; with none to hold out, the default is kept (nothing vouches for another way there)."""
    procs = sorted({p for p, _ in measured})
    target = None if regime is None else regime(procs[-1])
    held = [p for p in procs if p > procs[0] and (regime is None or regime(p) == target)][-folds:]
    per_fold: dict[str, dict[int, float]] = {name: {} for name in STRATEGIES}  # strategy -> held-out P -> %
    folds_run = 0
    for p in held:
        train = {pt: t for pt, t in measured.items() if pt[0] < p}
        test = {pt: t for pt, t in measured.items() if pt[0] == p and pt in defaults}
        if not train or not test:
            continue
        folds_run += 1
        for name, pick in strategy_picks(fit_below(p), choices, train).items():
            try:
                values = [_penalty(test[pt], pick(*pt), defaults[pt]) for pt in sorted(test)]
            except Exception:  # noqa: BLE001 - a refit that cannot price this P (a channel it never saw)
                continue
            values = [v for v in values if v == v]
            if values:
                per_fold[name][p] = float(np.mean(values))
    means = {name: float(np.mean(list(v.values()))) for name, v in per_fold.items() if v and len(v) == folds_run}
    least = min(means.values(), default=0.0)
    chosen = min((name for name in means if means[name] <= least + TIE_PCT), key=STRATEGIES.index, default="default")
    if chosen != "default" and "default" in means and means["default"] - means[chosen] < margin_pct(folds_run):
        chosen = "default"  # a gain within what so few samples resolve is not evidence
    return StrategyChoice(means, held, chosen, {name: len(v) for name, v in per_fold.items()},
                          {name: folds for name, folds in per_fold.items() if folds}, target,
                          beyond=beyond_regime(chosen, means), trained_up_to=procs[-1])


def beyond_regime(chosen: str, means: Mapping[str, float]) -> str:
    """The way kept at process counts past the largest trained P in another regime than the folds held out
    (one node's folds, rules across nodes): what wins in one regime says nothing of the other unless the
    model carried it. So the model or its anchored form is kept there only where it beat the best constant
    algorithm in the folds by more than a tie (:data:`TIE_PCT`): its picks came from the model's growth in
    P, not from one algorithm winning on every held-out P; otherwise, and after a kept constant, the library's
    default (no rule). A constant's win is a fact of its regime.

    Peak trained on one node and scored across nodes, 64..512 ranks: on P <= 32 the anchored form tied the
    constant in allgather's folds (0.9% against 0.0%) and lost to the default across nodes (49.6% against
    6.4%), while it beat the constant by 6 to 64 points for bcast, reduce, allreduce and gather (and alltoall
    by 1.6, losing 12.3% against the default's 9.1%); on P <= 16 gather's anchored form beat the constant by
    6.2 points and scored 1.1% across nodes, where the default costs 1,342%: the margin a way needs to beat
    the default (:func:`margin_pct`, 8.7 points) would have thrown that away."""
    if chosen not in ("model", "anchored") or "constant" not in means:
        return "default"
    return chosen if means["constant"] - means[chosen] > TIE_PCT else "default"
