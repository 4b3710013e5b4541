"""Inverse calibration: a model's per-channel parameters from measured times of known collective algorithms.

The data most sites hold are OSU sweeps of collectives, one run per forced
algorithm (issue 13), not ping-pongs. Here the parameters theta of a model,
per channel c of the platform (Hockney: alpha_c seconds and beta_c seconds
per byte; LogGPH: L_c, o_c, g_c, G_c), are chosen so that the model's prices
of the *measured algorithms' schedules* match the measured times over every
algorithm, size and process count of the training rows:

    minimize  sum_i rho( log(T_i(theta) / y_i) ),   theta >= 0

with rho scipy's ``soft_l1`` (robust: a disturbed run does not pull the
fit) on log-time residuals (every size weighs the same), T_i the model's
price of point i's schedule placed in blocks of its ranks per node.

Hockney's price of a schedule is the longest path through it of sums of
alpha_c + beta_c m: piecewise linear and positively homogeneous in theta,
so T_i(theta) = g_i . theta with g_i the message counts and bytes per
channel along the critical path (LogGPH's, with its max(g, o + (m-1) G)
gaps, is too). Each outer step prices every point at
theta and at theta + h e_k (forward differences, exact on the current
linear piece) to get G, fits the linearized problem T = G theta with
``least_squares``, and repeats until theta settles (a few steps): 1 + 2C
pricings per step instead of a Jacobian per iteration.

A parameter no training schedule touches (no two-node rows: the network
channel) has a zero column in G: it is reported as *unidentified* and its
channel left out of the result rather than invented. One whose doubling and
halving both move the loss by under 1% is reported as *poorly identified*:
written, but the data barely constrain it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import least_squares

from commcost.errors import InputError

LOSS = "soft_l1"
F_SCALE = 0.1  # log residual (~10%) where soft_l1 turns from quadratic to linear
# the models fitted this way: their per-channel parameters, and where they start before the first step
MODEL_PARAMS = {"hockney": ("alpha_s", "beta_s_per_byte"), "loggph": ("L_s", "o_s", "g_s", "G_s_per_byte")}
STARTS = {"hockney": (1e-6, 1e-10), "loggph": (1e-6, 5e-7, 5e-7, 1e-10)}
WEAK_LOSS = 0.01  # a parameter is poorly identified when doubling and halving it move the loss by less


@dataclass(frozen=True)
class Point:
    """One training point: what ran (labels for the report), the priced schedule's key, the measured time."""

    collective: str
    algorithm: str
    nprocs: int
    nbytes: int
    time_s: float


@dataclass
class CollectiveFit:
    """The fitted parameters per channel, what the data could not identify, and how well it fits."""

    model: str
    params: dict[str, dict[str, float]]  # channel -> {parameter: value} (channels the data identify)
    theta: np.ndarray  # every parameter, channel by channel in the order fitted
    unidentified: list[str]  # "alpha_s of ib", ...
    ratio: np.ndarray  # measured / model per point
    points: Sequence[Point]
    steps: int
    pricings: int
    per_algorithm: dict[str, dict[str, float]] = field(default_factory=dict)
    weak: list[str] = field(default_factory=list)  # parameters few points depend on: poorly identified
    scale_choices: dict[str, "ScaleChoice"] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        """Geometric-mean ratio measured/model (mu), median and 90th percentile of |log ratio| over all points."""
        return _figures(self.ratio)


def _figures(ratio: np.ndarray) -> dict[str, float]:
    lr = np.abs(np.log(ratio))
    return {"points": int(len(ratio)), "mu": float(np.exp(np.mean(np.log(ratio)))),
            "median_abs_pct": float(100 * np.expm1(np.median(lr))),
            "p90_abs_pct": float(100 * np.expm1(np.percentile(lr, 90)))}


def fit_model(model: str, points: Sequence[Point], channels: Sequence[str],
              price: Callable[[np.ndarray], np.ndarray], max_steps: int = 12, tol: float = 1e-4) -> CollectiveFit:
    """Fit ``model``'s parameters per channel (module docstring). ``price(theta)`` gives every point's model
    time for ``theta``: the :data:`MODEL_PARAMS` of each channel in turn, in ``channels`` order."""
    if not points:
        raise InputError("no collective rows to fit; expected measured times of forced algorithms "
                         "(e.g. commcost import coltune)")
    y = np.array([p.time_s for p in points], dtype=np.float64)
    if np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise InputError("expected measured times > 0 in every row")
    per = len(MODEL_PARAMS[model])
    k = per * len(channels)
    theta = np.array([STARTS[model][j % per] for j in range(k)], dtype=np.float64)
    base = price(theta)
    theta *= np.exp(np.median(np.log(y / np.maximum(base, 1e-300))))  # homogeneous: one common scale first
    floor = 1e-3 * theta  # the smallest step and scale a parameter gets (it may reach its bound 0)
    t0 = price(theta)  # the model's times at theta, carried from step to step
    pricings = 2

    def loss(t: np.ndarray) -> float:
        """The robust loss of the module docstring (scipy's soft_l1 at f_scale F_SCALE, times 2/f_scale^2)."""
        r = np.log(np.maximum(t, 1e-300) / y) / F_SCALE
        return float(np.sum(2 * (np.sqrt(1 + r * r) - 1)))

    used = np.zeros(k, bool)
    steps = 0
    for steps in range(1, max_steps + 1):
        G = np.empty((len(points), k))
        for j in range(k):
            h = 1e-3 * max(theta[j], floor[j])  # a parameter at its bound 0 still gets its column
            moved = theta.copy()
            moved[j] += h
            G[:, j] = (price(moved) - t0) / h
        pricings += k
        used |= np.abs(G).max(axis=0) > 0
        G[:, ~used] = 0.0

        scale = np.where(used, np.maximum(theta, floor), 1.0)  # solve for u = x / scale, every u near 1
        Gs = G * scale

        def residual(u: np.ndarray) -> np.ndarray:
            return np.log(np.maximum(Gs @ u, 1e-300) / y)

        def jacobian(u: np.ndarray) -> np.ndarray:
            return Gs / np.maximum(Gs @ u, 1e-300)[:, None]

        upper = np.where(used, np.inf, 1e-300)
        fit = least_squares(residual, np.where(used, np.minimum(theta / scale, 1.0), 0.0), jac=jacobian,
                            bounds=(np.zeros(k), upper),
                            loss=LOSS, f_scale=F_SCALE, ftol=1e-12, xtol=1e-12, gtol=1e-12)
        fit.x = fit.x * scale  # (solved tightly: a parameter few points constrain must not stop short)
        target = np.where(used, fit.x, theta)
        # the linearized optimum may lie on another linear piece: step towards it while the true loss falls
        current = loss(t0)
        for step in (1.0, 0.5, 0.25):
            new = theta + step * (target - theta)
            t_new = price(new)
            candidate = loss(t_new)
            pricings += 1
            if candidate < current:
                break
        else:
            break  # no step along the linearized optimum lowers the loss: converged
        change = np.max(np.abs(new - theta)[used] / np.maximum(theta[used], 1e-300)) if used.any() else 0.0
        theta, t0 = new, t_new
        if change < tol or current - candidate < 1e-9 * current:
            break
    modelled = t0
    ratio = y / modelled

    here = loss(modelled)
    flat = []  # parameters whose doubling and halving both move the loss by under WEAK_LOSS
    for j in np.flatnonzero(used):
        moved = [loss(price(theta * np.where(np.arange(k) == j, f, 1.0))) for f in (2.0, 0.5)]
        pricings += 2
        if max(abs(m - here) for m in moved) < WEAK_LOSS * here:  # (a perfect fit, loss 0, moves any way)
            flat.append(j)
    names = [f"{MODEL_PARAMS[model][j % per]} of {channels[j // per]}" for j in range(k)]
    params = {c: {name: float(theta[per * i + q]) for q, name in enumerate(MODEL_PARAMS[model])}
              for i, c in enumerate(channels) if used[per * i:per * (i + 1)].any()}
    per_algorithm: dict[str, dict[str, float]] = {}
    keys = [f"{p.collective}.{p.algorithm}" for p in points]
    for key in sorted(set(keys)):
        mask = np.array([kk == key for kk in keys])
        per_algorithm[key] = _figures(ratio[mask])
    weak = [f"{names[j]}: doubling or halving it moves the fit's loss by under {100 * WEAK_LOSS:.0f}%" for j in flat]
    return CollectiveFit(model, params, theta, [n for n, u in zip(names, used) if not u], ratio, points, steps,
                         pricings, per_algorithm, weak=weak)


ONE_MESSAGE = ("pingpong", "osu_latency", "imb_pingpong")  # point-to-point rows timing one message


def collective_points(rows, platform, collectives: Sequence[str] | None = None, max_procs: int | None = None,
                      library: str = "ompi"):
    """The training points of measurement rows, one per (collective, algorithm, P, ranks per node, n) with the
    median of its runs, each with its schedule placed in blocks: forced algorithms only (Open MPI's
    ``default`` rows say nothing about a schedule), and ping-pong rows of a platform channel as one message
    on that channel (collective ``p2p``, algorithm the channel: a combined fit where both are present);
    returns (points, placed schedules, channel names used)."""
    from commcost.collectives import Case, Collective, build, find
    from commcost.models import PlacedSchedule
    from commcost.platform import Mapping

    names = [c.name for c in platform.channels]
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        if row.nbytes <= 0 or (max_procs is not None and row.nprocs > max_procs):
            continue
        if not row.collective and row.benchmark in ONE_MESSAGE and row.channel in names and row.nprocs == 2:
            key = ("p2p", row.channel, 2, 0, row.nbytes, 0)
        elif row.collective and row.algorithm and row.algorithm != "default":
            if collectives is not None and row.collective not in collectives:
                continue
            key = (row.collective, row.algorithm, row.nprocs, row.ppn or row.nprocs, row.nbytes, row.segsize or 0)
        else:
            continue
        groups.setdefault(key, []).append(row.time_s_median or row.time_s_mean)
    one = find(Collective.BCAST, "ompi.basic_linear")  # on 2 ranks: one message 0 -> 1
    points, placed, used = [], [], set()
    for (coll, alg, nprocs, ppn, nbytes, segsize), times in sorted(groups.items()):
        if coll == "p2p":
            schedule = build(one, Case(Collective.BCAST, 2, nbytes)).schedule
            where = next((w for w in (PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, 2, k))
                                      for k in (2, 1)) if platform.channels[int(w.channel[0])].name == alg), None)
            if where is None:
                continue  # a channel two ranks cannot be placed on
            label = alg
        else:
            collective = Collective(coll)
            algorithm = find(collective, alg if "." in alg or alg.isdigit() else f"{library}.{alg}")
            given = {"segsize": segsize} if segsize and any(p.name == "segsize" for p in algorithm.params) else {}
            schedule = build(algorithm, Case(collective, nprocs, nbytes), algorithm.resolve_params(given)).schedule
            where = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, nprocs, min(ppn, nprocs)))
            label = algorithm.name
        used.update(platform.channels[c].name for c in np.unique(where.channel))
        points.append(Point(coll, label, nprocs, nbytes, float(np.median(times))))
        placed.append(where)
    channels = [c.name for c in platform.channels if c.name in used]
    return points, placed, channels


def pricer(model: str, placed, channels: Sequence[str]) -> Callable[[np.ndarray], np.ndarray]:
    """``price(theta)``: every placed schedule's time under ``model`` (hockney or loggph) with the
    :data:`MODEL_PARAMS` of each channel in ``channels`` order taken from ``theta``."""
    from commcost.models import MODELS

    names = MODEL_PARAMS[model]
    params_class = MODELS[model].PARAMS

    def price(theta: np.ndarray) -> np.ndarray:
        per = len(names)
        data = {c: {name: float(theta[per * i + q]) for q, name in enumerate(names)} for i, c in enumerate(channels)}
        priced = MODELS[model](params_class.from_dict(data))
        return np.array([priced.total_time_s(p) for p in placed])
    return price


@dataclass(frozen=True)
class ScaleChoice:
    """Whether a collective's per-algorithm scale helps, by leave-largest-P-out: the mean penalty (%) of the
    picks among the measured algorithms at the held-out P, without and with the scale fitted on the rest."""

    collective: str
    held_out_procs: int
    points: int
    without_pct: float
    with_pct: float

    @property
    def keep(self) -> bool:
        return self.with_pct < self.without_pct


def choose_scales(points: Sequence[Point], placed: Sequence, channels: Sequence[str], theta: np.ndarray,
                  model: str = "hockney") -> dict[str, ScaleChoice]:
    """Per collective, :class:`ScaleChoice` (issue 13 item 3: chosen by cross-validation over P, never by
    training error): the scales fitted on the points below the largest P, the picks scored at the largest P.
    The channel parameters ``theta`` are the fit on all points: the largest P is often the only one that
    crosses nodes, so leaving it out would leave the network unidentified."""
    out: dict[str, ScaleChoice] = {}
    largest = max(p.nprocs for p in points)
    modelled = pricer(model, placed, channels)(theta)
    ratio = np.array([p.time_s for p in points]) / modelled
    below = np.array([p.nprocs < largest for p in points])
    keys = np.array([f"{p.collective}.{p.algorithm}" for p in points])
    scale = {key: float(np.exp(np.mean(np.log(ratio[below & (keys == key)]))))
             for key in set(keys[below])}
    by_point: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    for i in np.flatnonzero(~below):
        p = points[i]
        factor = scale.get(keys[i], 1.0)
        by_point.setdefault((p.collective, p.nbytes), []).append((p.time_s, modelled[i], factor * modelled[i]))
    penalties: dict[str, list[tuple[float, float]]] = {}
    for (collective, _), rows in by_point.items():
        if len(rows) < 2:
            continue
        measured = np.array([r[0] for r in rows])
        best = measured.min()
        plain = measured[int(np.argmin([r[1] for r in rows]))] / best - 1
        scaled = measured[int(np.argmin([r[2] for r in rows]))] / best - 1
        penalties.setdefault(collective, []).append((plain, scaled))
    for collective, pairs in sorted(penalties.items()):
        values = np.array(pairs)
        out[collective] = ScaleChoice(collective, largest, len(pairs), float(100 * values[:, 0].mean()),
                                      float(100 * values[:, 1].mean()))
    return out
