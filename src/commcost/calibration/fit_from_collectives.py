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
``least_squares``, and repeats until theta settles (a few steps): 1 + k
pricings per step instead of a Jacobian per iteration. A point's k
differences (those of the parameters that can move it) are priced in one
walk of its schedule (:meth:`.fit_pricer.Pricer.columns`,
:mod:`commcost.models.parameter_sets`), each the number its own pricing
gives: the same steps, the same parameters, faster (Peak's joint fit on
P <= 64: 32 s -> 25 s).

A channel whose platform entry states its eager limit is fitted with
Hockney's protocol parameters as well (:mod:`.fit_layout`,
:mod:`commcost.models.hockney`): the sender's and the receiver's shares of
an eager message, and a second law, with its own shares, above the limit.
Prices stay
piecewise linear and homogeneous in theta (the layout of theta is then
per channel, :func:`parameter_layout`), and a parameter only messages above
(below) the limit read moves only the points that have one.

A parameter no training schedule touches (no two-node rows: the network
channel) has a zero column in G: it is reported as *unidentified* and its
channel left out of the result rather than invented. One whose doubling and
halving both move the loss by under 1% is reported as *poorly identified*:
written, but the data barely constrain it.

tau-Lop (paper 000 section 3) is fitted the same way, per *table* rather
than per channel (a channel takes its overhead from its own table and its
transfers' times from theirs, so tables are shared: Ethernet's shm + tcp +
shm), in the family

    o(m) = o_s,        L(m, tau) = L_s + tau m G,

three numbers per table: a transfer's latency does not grow with the tau
transfers sharing its channel, its bytes share the bandwidth. It keeps the
model's constraints, L(m, 1) <= L(m, tau) <= tau L(m, 1) and tables
non-decreasing in m, and its prices are homogeneous and piecewise linear in
(o_s, L_s, G) like Hockney's. The parameter file gets ordinary tau-Lop
tables of this family at the training sizes (powers of two) and
concurrencies up to :func:`taulop_tau_max`, with ``beyond_m = "slope"`` so
larger messages keep the same line.

What each row's time summarizes over ranks is predicted as such (a
point's ``statistic``: OSU's mean over ranks, the last rank's, ...,
:meth:`commcost.models.base.Model.statistic_s`), and where rows reduce
(reduce, allreduce, reduce_scatter) a reduction's time per byte and fixed
cost are fitted beside the channels (:data:`EXTRA_STARTS`).

The per-algorithm correction on top (issue 13 item 3, paper 004 section
5.2's T = a_s + b T_model) is chosen per collective among none, scale
(a_s = 0) and affine by forward cross-validation over P
(:mod:`.algorithm_corrections`), never by training error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import least_squares
from threadpoolctl import threadpool_limits

from commcost.calibration.fit_summary import confounded, figures
from commcost.calibration.fit_layout import (MODEL_PARAMS, complete_groups, stated_limits, layout_of,  # noqa: F401
                                             nominal_priors, parameter_layout, protocol_limits, start_of)
from commcost.calibration.fit_pricer import (Pricer, pricer, reduction_law, taulop_tables,  # noqa: F401
                                             taulop_tau_max)
from commcost.errors import InputError

LOSS = "soft_l1"
F_SCALE = 0.1  # log residual (~10%) where soft_l1 turns from quadratic to linear
# the models fitted this way: their per-channel parameters, and where they start before the first step
# parameters of no channel, fitted beside the channels' where the rows need them: what a rank takes to reduce
# a received vector of m bytes into its own (reduce, allreduce, reduce_scatter), gamma(m) = g0 + g m: a time
# per byte and a fixed cost per reduction (the call of the operation and what the algorithm does around it
# each step: on Peak's one node a recursive-doubling allreduce of 4 bytes takes 0.3-0.5 us more per step than
# a recursive-doubling barrier's zero-byte exchange)
EXTRA_STARTS = {"reduction_s_per_byte": 1e-10, "reduction_s": 1e-7}
REDUCING = ("reduce", "allreduce", "reduce_scatter")
WEAK_LOSS = 0.01  # a parameter is poorly identified when doubling and halving it move the loss by less


@dataclass(frozen=True)
class Point:
    """One training point: what ran (labels for the report), the priced schedule's key, the measured time."""

    collective: str
    algorithm: str
    nprocs: int
    nbytes: int
    time_s: float
    nodes: int = 1  # the nodes its ranks span
    statistic: str = "max"  # what time_s summarizes over ranks (Measurement.rank_statistic): the model predicts it


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
    per_algorithm_corrected: dict[str, dict[str, float]] = field(default_factory=dict)  # with the kept corrections
    weak: list[str] = field(default_factory=list)  # parameters few points depend on: poorly identified
    confounded: list[str] = field(default_factory=list)  # groups only whose combination is identified
    correction_choices: dict[str, "CorrectionChoice"] = field(default_factory=dict)
    corrections: dict[str, dict[str, "Correction"]] = field(default_factory=dict)
    units: str = "channel"  # what params are keyed by: channel, or table (tau-Lop)
    tau_max: int = 0  # tau-Lop: the concurrencies its tables cover (taulop_tau_max)
    extra: dict[str, float] = field(default_factory=dict)  # the EXTRA_STARTS parameters fitted (reduction rate)
    assumed: list[str] = field(default_factory=list)  # parameters no row identifies, taken from their prior
    barrier: str = ""  # the barrier each rank's time was priced after (ompi5, ompi4); "": ranks start together
    barrier_trials: dict[str, float] = field(default_factory=dict)  # --barrier-skew auto: loss of each way tried

    def barrier_summary(self) -> dict:
        """What was kept of the barrier before each timed call (``none``: ranks started together) and, for
        ``--barrier-skew auto``, each way's loss: the reports' ``barrier_skew``."""
        return {"kept": self.barrier or "none", "loss": dict(self.barrier_trials)}

    def loss(self) -> float:
        """The fit's robust loss at its end (:func:`fit_model`'s: soft_l1 of log(measured / model) at
        :data:`F_SCALE`)."""
        r = np.log(np.asarray(self.ratio, dtype=np.float64)) / F_SCALE
        return float(np.sum(2 * (np.sqrt(1 + r * r) - 1)))

    def summary(self) -> dict[str, float]:
        """Geometric-mean ratio measured/model (mu), median and 90th percentile of |log ratio| over all points."""
        return figures(self.ratio)


def fit_model(model: str, points: Sequence[Point], channels: Sequence[str],
              price: Callable[[np.ndarray], np.ndarray], max_steps: int = 12, tol: float = 1e-4,
              start: np.ndarray | None = None, extra: Sequence[str] = (),
              prior: dict[int, float] | None = None, prior_weight: float = 1.0,
              layout: Sequence[tuple[str, str]] | None = None,
              fixed: dict[str, dict[str, float]] | None = None) -> CollectiveFit:
    """Fit ``model``'s parameters per channel (module docstring). ``price(theta)`` gives every point's model
    time for ``theta``: the :data:`MODEL_PARAMS` of each channel in turn, in ``channels`` order, then the
    ``extra`` parameters (:data:`EXTRA_STARTS`: the reduction rate). ``start``: where the steps begin (a fit
    of similar rows: the folds of a cross-validation), else :data:`STARTS` scaled to the rows. ``prior``:
    theta's index -> a value said of it (a channel's nominal latency or time per byte,
    :func:`nominal_priors`): a residual log(theta_j / prior_j) weighing ``prior_weight`` measured points
    joins the fit, and a parameter no row moves takes its prior (``assumed``) instead of going unwritten.
    ``layout``: theta's (unit, parameter) entries when not every channel has the same ones
    (:func:`parameter_layout`); ``fixed``: values written beside a unit's fitted ones (its eager limit)."""
    if not points:
        raise InputError("no collective rows to fit; expected measured times of forced algorithms "
                         "(e.g. commcost import coltune)")
    y = np.array([p.time_s for p in points], dtype=np.float64)
    if np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise InputError("expected measured times > 0 in every row")
    layout = list(layout) if layout is not None else parameter_layout(model, channels)
    k = len(layout) + len(extra)
    defaults = np.array([start_of(model, name) for _, name in layout] + [EXTRA_STARTS[n] for n in extra])
    theta = defaults.copy()
    if start is not None and len(start) == k and np.all(np.isfinite(start)) and np.any(np.asarray(start) > 0):
        theta = np.asarray(start, dtype=np.float64).copy()
    base = price(theta)
    theta *= np.exp(np.median(np.log(y / np.maximum(base, 1e-300))))  # homogeneous: one common scale first
    prior = {int(j): float(v) for j, v in (prior or {}).items() if 0 <= j < k and v > 0}
    for j, value in prior.items():
        theta[j] = value
    weight = float(np.sqrt(max(prior_weight, 0.0)))
    pj = np.array(sorted(prior), dtype=np.int64)
    pv = np.array([prior[j] for j in pj.tolist()])
    # the smallest step and scale a parameter gets (it may reach its bound 0; a start from another fit may
    # hold an exact 0, whose step would be 0: its default start then)
    floor = 1e-3 * np.where(theta > 0, theta, defaults)
    t0 = price(theta)  # the model's times at theta, carried from step to step
    touches = getattr(price, "touches", None)  # a Pricer: which points each parameter can move
    if touches is not None and touches.shape != (len(points), k):
        touches = None

    def repriced(new: np.ndarray, j: int, base: np.ndarray) -> np.ndarray:
        """Every point's time at ``new``, which differs from the theta of ``base`` in parameter j only: the
        points j cannot move keep their time in ``base``."""
        if touches is None:
            return price(new)
        t = base.copy()
        rows = np.flatnonzero(touches[:, j])
        if len(rows):
            t[rows] = price(new, rows)
        return t

    together = getattr(price, "columns", None)  # a Pricer: every point's sets priced in one walk

    def priced_at(thetas: list[np.ndarray], moves: list[int], base: np.ndarray) -> list[np.ndarray]:
        """:func:`repriced` of each ``thetas[q]`` (theta of ``base`` with parameter ``moves[q]`` changed), each
        point's sets priced together where the pricer can."""
        if together is None or touches is None:
            return [repriced(new, j, base) for new, j in zip(thetas, moves)]
        at = together(thetas, touches[:, moves])
        out = []
        for q, j in enumerate(moves):
            t = base.copy()
            t[touches[:, j]] = at[touches[:, j], q]
            out.append(t)
        return out
    pricings = 2

    def loss(t: np.ndarray) -> float:
        """The robust loss of the module docstring (scipy's soft_l1 at f_scale F_SCALE, times 2/f_scale^2)."""
        r = np.log(np.maximum(t, 1e-300) / y) / F_SCALE
        return float(np.sum(2 * (np.sqrt(1 + r * r) - 1)))

    used = np.zeros(k, bool)
    steps = 0
    for steps in range(1, max_steps + 1):
        G = np.empty((len(points), k))
        steps_h = [1e-3 * max(theta[j], floor[j]) for j in range(k)]  # a parameter at its bound 0 still moves
        moved = [theta + np.where(np.arange(k) == j, steps_h[j], 0.0) for j in range(k)]
        for j, t in enumerate(priced_at(moved, list(range(k)), t0)):
            G[:, j] = (t - t0) / steps_h[j]
        pricings += k
        used |= np.abs(G).max(axis=0) > 0
        G[:, ~used] = 0.0

        scale = np.where(used, np.maximum(theta, floor), 1.0)  # solve for u = x / scale, every u near 1
        Gs = G * scale

        low = 1e-6 * y  # the linearized time's floor: a piece's finite differences may be negative (tau-Lop:
        # more latency, other overlaps), and a time near 0 would blow the log residual and its Jacobian up

        held = pj[used[pj]] if len(pj) else pj  # priors of parameters the rows move (the others stay at theirs)
        said = pv[used[pj]] if len(pj) else pv

        def residual(u: np.ndarray) -> np.ndarray:
            r = np.log(np.maximum(Gs @ u, low) / y)
            if not len(held):
                return r
            return np.r_[r, weight * np.log(np.maximum(u[held] * scale[held], 1e-300) / said)]

        def jacobian(u: np.ndarray) -> np.ndarray:
            t = Gs @ u
            J = np.where((t > low)[:, None], Gs / np.maximum(t, low)[:, None], 0.0)
            if not len(held):
                return J
            P = np.zeros((len(held), k))
            P[np.arange(len(held)), held] = weight / np.maximum(u[held], 1e-300)
            return np.r_[J, P]

        upper = np.where(used, np.inf, 1e-300)
        with threadpool_limits(limits=1, user_api="blas"):  # an SVD of k columns a step, thousands of steps:
            # BLAS threads cost more than they give (Peak's bcast on platform-caches.toml: 28 s on one thread,
            # 48 s on two of a quiet 2-core machine, 629 s beside two other fits)
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
    scaled = [(j, theta * np.where(np.arange(k) == j, f, 1.0))
              for j in np.flatnonzero(used).tolist() for f in (2.0, 0.5)]
    times = priced_at([t for _, t in scaled], [j for j, _ in scaled], modelled) if scaled else []
    pricings += len(scaled)
    for q in range(0, len(scaled), 2):
        moved = [loss(times[q]), loss(times[q + 1])]
        if max(abs(m - here) for m in moved) < WEAK_LOSS * here:  # (a perfect fit, loss 0, moves any way)
            flat.append(scaled[q][0])
    names = [f"{name} of {unit}" for unit, name in layout] + list(extra)
    assumed = [j for j in prior if not used[j]]
    known = used.copy()
    known[assumed] = True
    params = {}
    for c in channels:
        mine = [j for j, (unit, _) in enumerate(layout) if unit == c]
        core = [j for j in mine if layout[j][1] in MODEL_PARAMS[model]]  # a protocol share may stay unsaid
        if mine and (known[core].all() or used[mine].any()):
            params[c] = complete_groups({layout[j][1]: float(theta[j]) for j in mine if known[j]},
                                         dict((fixed or {}).get(c, {})))
    fitted_extra = {name: float(theta[len(layout) + q]) for q, name in enumerate(extra) if used[len(layout) + q]}
    per_algorithm: dict[str, dict[str, float]] = {}
    keys = [f"{p.collective}.{p.algorithm}" for p in points]
    for key in sorted(set(keys)):
        mask = np.array([kk == key for kk in keys])
        per_algorithm[key] = figures(ratio[mask])
    weak = [f"{names[j]}: doubling or halving it moves the fit's loss by under {100 * WEAK_LOSS:.0f}%" for j in flat]
    together = confounded(G, modelled, used, names)
    shares = [("_send_" in f"_{name}" or "_recv_" in f"_{name}") for _, name in layout] + [False] * len(extra)
    # (a protocol share no row moves is left unsaid: the wire's time, not a parameter missing)
    return CollectiveFit(model, params, theta, [n for n, u, sh in zip(names, known, shares) if not u and not sh],
                         ratio, points, steps,
                         pricings, per_algorithm, weak=weak, confounded=together, extra=fitted_extra,
                         assumed=[names[j] for j in assumed])


ONE_MESSAGE = ("pingpong", "osu_latency", "imb_pingpong")  # point-to-point rows timing one message


def collective_points(rows, platform, collectives: Sequence[str] | None = None, max_procs: int | None = None,
                      library: str = "ompi", fold: bool = False, fold_domains: bool = False):
    """The training points of measurement rows, one per (collective, algorithm, P, ranks per node, n) with the
    median of its runs, each with its schedule placed in blocks: forced algorithms only (Open MPI's
    ``default`` rows say nothing about a schedule), and ping-pong rows of a platform channel as one message
    on that channel (collective ``p2p``, algorithm the channel: a combined fit where both are present);
    returns (points, placed schedules, channel names used). Each schedule counts the row's elements
    (:attr:`Measurement.element_size`: OSU's reductions 4-byte floats). ``fold``: for a model that prices a
    schedule folded by one node's ranks as the whole (:attr:`commcost.models.Model.folds_by_rank_shift`),
    each schedule invariant under that shift is built and held folded (a ring on 2,048 ranks of 4 per node:
    a 512th of its transmissions; :func:`commcost.selection.folded_place.placed_folded`); ``fold_domains``: the
    model's transmissions share contention domains, checked too (tau-Lop)."""
    from commcost.collectives import Case, Collective, build, build_folded, find
    from commcost.models.symmetry import fold_shift
    from commcost.collectives.recorder import held_limit
    from commcost.models import PlacedSchedule
    from commcost.platform import Mapping

    names = [c.name for c in platform.channels]
    held, limit = 0, held_limit()
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        if row.case_nbytes <= 0 or (max_procs is not None and row.nprocs > max_procs):
            continue
        if not row.collective and row.benchmark in ONE_MESSAGE and row.channel in names and row.nprocs == 2:
            key = ("p2p", row.channel, 2, 0, row.nbytes, 0, "max", 1)  # one message: its time, whoever times it
        elif row.collective and row.algorithm and row.algorithm != "default":
            if collectives is not None and row.collective not in collectives:
                continue
            key = (row.collective, row.algorithm, row.nprocs, row.ppn or row.nprocs, row.case_nbytes, row.segsize or 0,
                   row.rank_statistic, row.element_size)
        else:
            continue
        groups.setdefault(key, []).append(row.fit_time_s)
    one = find(Collective.BCAST, "ompi.basic_linear")  # on 2 ranks: one message 0 -> 1
    points, placed, used = [], [], set()
    for (coll, alg, nprocs, ppn, nbytes, segsize, statistic, element), times in sorted(groups.items()):
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
            case, values = Case(collective, nprocs, nbytes, element_bytes=element), algorithm.resolve_params(given)
            mapping = Mapping.sequential(platform, nprocs, min(ppn, nprocs))
            folded = build_folded(algorithm, case, fold_shift(mapping.node_of_rank[:nprocs]), values) if fold else None
            where = None if folded is None else PlacedSchedule.of_folded(folded[0].schedule, folded[1], nprocs,
                                                                         platform, mapping, fold_domains)
            if where is None:
                where = PlacedSchedule.of(build(algorithm, case, values).schedule, platform, mapping)
            label = algorithm.name
        held += where.schedule.ntransmissions
        if held > limit:
            raise held_too_many(limit, coll, alg, nprocs, nbytes)
        used.update(platform.channels[c].name for c in np.unique(where.channel))
        nodes = where.mapping.nodes_of_first(nprocs) if coll != "p2p" else 1
        points.append(Point(coll, label, nprocs, nbytes, float(np.median(times)), nodes, statistic))
        placed.append(where)
    channels = [c.name for c in platform.channels if c.name in used]
    return points, placed, channels


def fitted_units(model: str, platform, channels: Sequence[str]) -> list[str]:
    """What ``model``'s parameters are fitted per: the ``channels`` the training schedules use (Hockney,
    LogGPH), or for tau-Lop the tables they read: each channel's own (its overhead o) and its transfers'
    (their L), in order of first use."""
    if model != "taulop":
        return list(channels)
    by_name = {c.name: c for c in platform.channels}
    return list(dict.fromkeys(name for c in channels for name in (c, *by_name[c].transfers)))


def extra_parameters(points: Sequence[Point]) -> tuple[str, ...]:
    """The :data:`EXTRA_STARTS` parameters the rows need: the reduction's rate and fixed cost where some
    reduce."""
    return ("reduction_s_per_byte", "reduction_s") if any(p.collective in REDUCING for p in points) else ()


def held_too_many(limit: int, collective: str, algorithm: str, nprocs: int, nbytes: int) -> InputError:
    """The one-line refusal of a fit whose training schedules, held together, pass ``limit`` transmissions
    (:func:`commcost.collectives.recorder.held_limit`), at the point where they did."""
    from commcost.collectives.recorder import BYTES_PER_TRANSMISSION
    from commcost.units import format_nbytes

    return InputError(f"the training points' schedules pass {limit:,} transmissions together (about "
                      f"{format_nbytes(limit * BYTES_PER_TRANSMISSION)}) at {collective} {algorithm} on {nprocs:,} "
                      f"ranks, {nbytes:,} bytes; expected fewer or smaller points (--max-procs, --collectives) or a "
                      f"larger --max-memory", where="rows")
