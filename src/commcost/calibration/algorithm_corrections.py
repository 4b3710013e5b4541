"""Per-algorithm corrections of a fitted model, chosen by forward cross-validation over P.

On top of the parameters fitted to a site's collective sweeps
(:mod:`.fit_from_collectives`), each measured algorithm may get
T = a_s + b T_model (issue 13 item 3, paper 004 section 5.2). Per
collective the form is one of none, scale (a_s = 0) and affine, chosen by
forward cross-validation over P (:func:`choose_corrections`): each of the
largest training process counts of a regime (across nodes, or one node)
is held out in turn, corrections are fitted on that regime's points of
fewer ranks, and the picks among the measured algorithms at the held-out
P are scored against the measured best; never by training error.

A correction serves the regime it was chosen in: one learnt where the
network is absent says nothing about where it dominates, and the other
way round. The regime of the collective's largest training P comes first
(a model is asked to extrapolate upwards); where that is across nodes, the
one-node points get a choice of their own (:attr:`CorrectionChoice.one_node`),
applied to calls whose ranks share one node (:attr:`Correction.one_node`).
On Peak's bcast at P <= 64 (one node up to 32 ranks) cross-validation at
P = 8, 16 and 32 keeps the affine form on one node: chain's price is
1.15 times the model's there, scatter_allgather's 0.78 times.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from commcost.calibration.fit_from_collectives import Point

FORMS = ("none", "scale", "affine")  # the per-algorithm corrections, simplest first (a tie keeps the simpler)
FOLDS = 3  # held-out process counts of the forward cross-validation


@dataclass(frozen=True)
class Correction:
    """T = a_s + b T_model for one measured algorithm (paper 004 section 5.2's per-algorithm calibration);
    ``one_node``: the one for calls on one node where that regime has its own (module docstring)."""

    a_s: float
    b: float
    one_node: "Correction | None" = None

    def at(self, on_one_node: bool) -> "Correction":
        """The correction of a call on one node (``on_one_node``) or across nodes."""
        return self.one_node if on_one_node and self.one_node is not None else self


def fit_correction(form: str, modelled: np.ndarray, measured: np.ndarray) -> Correction:
    """One algorithm's correction of ``form``: ``scale`` b = the geometric mean of measured / model
    (a_s = 0); ``affine`` a_s >= 0 and b by :func:`commcost.calibration.fit_collectives.fit_scale`'s Huber
    fit on relative residuals (a_s an offset the model lacks, such as the benchmark's own per-call
    overhead, so not negative: a negative one would price small messages below zero at scale)."""
    from commcost.calibration.fit_collectives import fit_scale

    if form == "none":
        return Correction(0.0, 1.0)
    b = float(np.exp(np.mean(np.log(measured / modelled))))
    if form == "scale" or len(modelled) < 2:
        return Correction(0.0, b)
    fitted = fit_scale(modelled, measured)
    if fitted.a_s < 0:
        return Correction(0.0, b)
    return Correction(fitted.a_s, fitted.b)


@dataclass(frozen=True)
class CorrectionChoice:
    """A collective's per-algorithm correction chosen by forward cross-validation over P: ``pct`` is the
    mean penalty (%) of the picks among the measured algorithms at the ``held_out`` process counts, each
    with the corrections fitted on the points below it, per form of :data:`FORMS`; ``form`` the lowest.
    No fold (``held_out`` empty): ``none``, for ``why``."""

    collective: str
    held_out: tuple[int, ...]
    points: int
    pct: dict[str, float]
    multi_node: bool = True  # the regime the corrections are fitted and scored in
    why: str = ""
    one_node: "CorrectionChoice | None" = None  # across nodes first: the one-node points' own choice

    @property
    def form(self) -> str:
        if not self.held_out:
            return "none"
        return min(FORMS, key=lambda f: (round(self.pct[f], 9), FORMS.index(f)))

    @property
    def keep(self) -> bool:
        """Whether this regime, or the one-node one beside it, keeps a correction."""
        return self.form != "none" or (self.one_node is not None and self.one_node.keep)


def _pick_penalty(rows: list[tuple[float, float]]) -> float:
    """The penalty of picking, among (measured, predicted) rows of one point, the lowest predicted."""
    measured = np.array([r[0] for r in rows])
    return float(measured[int(np.argmin([r[1] for r in rows]))] / measured.min() - 1)


def _regime(points: Sequence[Point], collective: str, across: bool | None = None) -> tuple[np.ndarray, bool]:
    """The points of ``collective`` across nodes (``across``) or on one node; None: in the regime of its
    largest training P, since a model is asked to extrapolate upwards."""
    if across is None:
        across = max((p for p in points if p.collective == collective), key=lambda p: p.nprocs).nodes > 1
    return np.array([p.collective == collective and (p.nodes > 1) == across for p in points]), across


def choose_corrections(points: Sequence[Point], modelled: np.ndarray,
                       folds: int = FOLDS) -> dict[str, CorrectionChoice]:
    """Per collective, :class:`CorrectionChoice` (issue 13 item 3: by cross-validation over P, never by
    training error). Forward folds within the regime of the collective's largest P (:func:`_regime`): each of
    the ``folds`` largest training process counts with a smaller one of the same regime below it is held out
    in turn, the corrections are fitted per algorithm on that regime's points of fewer ranks only, and the
    picks at the held-out P are scored against the measured best; where that regime is across nodes, the
    one-node points get their own choice so (``one_node``). ``modelled`` are the model's times of ``points``
    under the parameters fitted on all of them (the largest P is often the only one that crosses nodes:
    without it the network would be unidentified)."""
    out: dict[str, CorrectionChoice] = {}
    for collective in sorted({p.collective for p in points} - {"p2p"}):
        choice = _choose(points, modelled, folds, collective, None)
        if choice.multi_node and any(p.collective == collective and p.nodes == 1 for p in points):
            choice = replace(choice, one_node=_choose(points, modelled, folds, collective, False))
        out[collective] = choice
    return out


def _choose(points: Sequence[Point], modelled: np.ndarray, folds: int, collective: str,
            across: bool | None) -> CorrectionChoice:
    """:func:`choose_corrections` of one collective in one regime (:func:`_regime`)."""
    measured = np.array([p.time_s for p in points])
    keys = np.array([f"{p.collective}.{p.algorithm}" for p in points])
    procs = np.array([p.nprocs for p in points])
    regime, across = _regime(points, collective, across)
    scores: dict[str, list[float]] = {f: [] for f in FORMS}
    used = []
    for q in sorted(set(procs[regime].tolist()))[1:][-folds:]:
        train = regime & (procs < q)
        test = np.flatnonzero(regime & (procs == q))
        corrections = {f: {k: fit_correction(f, modelled[train & (keys == k)], measured[train & (keys == k)])
                           for k in set(keys[train].tolist())} for f in FORMS}
        by_size: dict[int, list[int]] = {}
        for i in test:
            by_size.setdefault(points[i].nbytes, []).append(i)
        scored = False
        for members in by_size.values():
            if len(members) < 2:
                continue
            for f in FORMS:
                rows = []
                for i in members:
                    c = corrections[f].get(keys[i], Correction(0.0, 1.0))
                    rows.append((measured[i], c.a_s + c.b * modelled[i]))
                scores[f].append(_pick_penalty(rows))
            scored = True
        if scored:
            used.append(q)
    where = "across nodes" if across else "on one node"
    why = "" if used else (f"no fold: cross-validation needs two training process counts {where} with "
                           f"two or more algorithms measured")
    return CorrectionChoice(collective, tuple(used), len(scores["none"]),
                            {f: float(100 * np.mean(v)) if v else float("nan") for f, v in scores.items()},
                            across, why)


def corrections(points: Sequence[Point], modelled: np.ndarray,
                choices: dict[str, CorrectionChoice]) -> dict[str, dict[str, Correction]]:
    """The corrections the cross-validation kept, fitted on every training point of their regime
    (:func:`_regime`): collective -> algorithm -> :class:`Correction`, its ``one_node`` the one-node
    regime's (collectives where neither regime keeps one are absent). A correction learnt on one node only
    serves calls on one node: its general form is none."""
    measured = np.array([p.time_s for p in points])
    keys = np.array([f"{p.collective}.{p.algorithm}" for p in points])

    def fitted(choice: CorrectionChoice | None) -> dict[str, Correction]:
        if choice is None or choice.form == "none":
            return {}
        regime, _ = _regime(points, choice.collective, choice.multi_node)
        return {key.partition(".")[2]: fit_correction(choice.form, modelled[regime & (keys == key)],
                                                      measured[regime & (keys == key)])
                for key in sorted(set(keys[regime].tolist()))}
    out: dict[str, dict[str, Correction]] = {}
    for collective, choice in choices.items():
        main, alone = fitted(choice), fitted(choice.one_node)
        if not choice.multi_node:  # learnt on one node: for calls on one node only
            main, alone = {}, main
        for name in sorted(set(main) | set(alone)):
            general = main.get(name, Correction(0.0, 1.0))
            out.setdefault(collective, {})[name] = replace(general, one_node=alone.get(name))
    return out


def corrected(points: Sequence[Point], modelled: np.ndarray,
              kept: dict[str, dict[str, Correction]]) -> np.ndarray:
    """Each point's model time with its algorithm's kept correction for its regime (one node or across)."""
    out = np.asarray(modelled, dtype=np.float64).copy()
    for i, p in enumerate(points):
        c = kept.get(p.collective, {}).get(p.algorithm)
        if c is not None:
            c = c.at(p.nodes == 1)
            out[i] = c.a_s + c.b * out[i]
    return out
