"""Model parameters from a measurements CSV (``commcost fit``), and fits from collective sweeps: every
training row priced under one model, and the fitted sections a parameter file keeps.

Models: ``hockney``, ``loggp`` and ``taulop`` per channel from point-to-point
rows (:mod:`commcost.calibration.from_measurements`), ``maxrate`` (paper 001's
rows from ping-pongs per channel), and ``ompi_bcast_model``, paper 004's gamma,
Q and per-algorithm o, L from NBFT and broadcast + flat gather rows
(:mod:`commcost.closedform.ompi_bcast_calibration`); with ``from_collectives``
the model's channels fitted to measured times of forced collective algorithms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from commcost.errors import InputError
from commcost.workflows.pricing import PAPER004, collectives, transfer_counts


def fit_collective_rows(rows, platform, model: str, collectives=None, max_procs=None, start=None,
                        prior_weight: float = 1.0, barrier: str | None = None):
    """The inverse calibration of :mod:`commcost.calibration.fit_from_collectives` on measurement rows, with
    the per-algorithm corrections cross-validation keeps (``start``: a fit's theta to begin from); the
    platform's nominal channel values as priors weighing ``prior_weight`` points each, and as the values of
    a channel no row uses. ``barrier``: the fixed decision (``ompi5``, ``ompi4``) of the barrier the
    benchmark ran between its timed calls, each rank's time then priced from when that barrier let it go
    (:mod:`commcost.models.barrier_start`); None: every rank starts together; ``auto``: the three fitted,
    the one of least loss kept (``fit.barrier_trials`` says each one's)."""
    import numpy as np

    from commcost.calibration.algorithm_corrections import choose_corrections, corrected, corrections
    from commcost.calibration.fit_pricer import barriers_before
    from commcost.calibration.fit_summary import figures
    from commcost.calibration.fit_from_collectives import (MODEL_PARAMS, collective_points, extra_parameters,
                                                           fit_model, fitted_units, layout_of, nominal_priors,
                                                           pricer, protocol_limits, stated_limits,
                                                           taulop_tau_max)

    if model not in MODEL_PARAMS:
        raise InputError(f"fitting {model} to collective times is not built yet; expected --model "
                         f"{' or '.join(MODEL_PARAMS)}", where="--model")
    from commcost.models import MODELS

    points, placed, channels = collective_points(rows, platform, collectives, max_procs,
                                                 fold=MODELS[model].folds_by_rank_shift and barrier is None,
                                                 fold_domains=MODELS[model].fold_checks_domains)
    if not points:
        raise InputError("no rows of forced collective algorithms to fit (algorithm 'default' rows, Open MPI's "
                         "own pick, cannot be priced)" + (f" with at most {max_procs} ranks" if max_procs else ""))
    said = [c.name for c in platform.channels if c.name not in channels
            and (c.nominal_latency_s is not None or c.nominal_bandwidth is not None)]
    units = fitted_units(model, platform, [c.name for c in platform.channels if c.name in channels or c.name in said])
    extra = extra_parameters(points)
    limits = protocol_limits(model, platform, units)  # Hockney: channels that say their eager limit
    stated = stated_limits(model, platform, units)  # and their copy limit and backpressure
    layout = layout_of(model, units, limits, stated)

    def fit_after(decision: str | None):
        barriers = None if decision is None else barriers_before(placed, decision)
        out = fit_model(model, points, units, pricer(model, placed, units, [p.statistic for p in points], extra,
                                                     limits, stated, barriers),
                        start=start, extra=extra, prior=nominal_priors(model, platform, units, layout),
                        prior_weight=prior_weight, layout=layout,
                        fixed={u: {"eager_limit_bytes": float(v), **stated.get(u, {})} for u, v in limits.items()})
        out.barrier = decision or ""
        return out

    if barrier == "auto":
        from commcost.collectives.barrier import DECISIONS

        tried = [fit_after(decision) for decision in (None, *DECISIONS)]
        fit = min(tried, key=lambda f: f.loss())  # ties: ranks starting together, the simpler
        fit.barrier_trials = {f.barrier or "none": f.loss() for f in tried}
    else:
        fit = fit_after(barrier)
    fit.units = "table" if model == "taulop" else "channel"
    fit.tau_max = taulop_tau_max(placed) if model == "taulop" else 0
    fit.unidentified += [f"{', '.join(MODEL_PARAMS[model])} of {c.name} (no training schedule uses it)"
                         for c in platform.channels if c.name not in channels and c.name not in said]
    modelled = np.array([p.time_s for p in points]) / fit.ratio
    fit.correction_choices = choose_corrections(points, modelled)
    fit.corrections = corrections(points, modelled, fit.correction_choices)
    if fit.corrections:  # in sample with the kept corrections, each point's regime's
        ratio = np.array([p.time_s for p in points]) / corrected(points, modelled, fit.corrections)
        keys = [f"{p.collective}.{p.algorithm}" for p in points]
        fit.per_algorithm_corrected = {key: figures(ratio[np.array([k == key for k in keys])])
                                       for key in sorted(set(keys))}
    return fit


def collective_fit_sections(fit) -> dict:
    """The parameter-file sections of a collective fit: the model's (``[hockney.<channel>]``, ...; tau-Lop:
    ``[taulop.<table>]`` tables of the fitted family at the training sizes, read with ``beyond_m =
    "slope"``), and the per-algorithm corrections cross-validation kept
    (:func:`commcost.calibration.algorithm_corrections.choose_corrections`) as
    ``[algorithm_fit.<collective>.<name>]`` a_s, b: paper 004 section 5.2's T = a_s + b T_model."""
    import numpy as np

    from commcost.calibration.fit_from_collectives import taulop_tables

    fits = {collective: {name: {"a_s": c.a_s, "b": c.b, "model": fit.model,
                                **({"one_node": {"a_s": c.one_node.a_s, "b": c.one_node.b}} if c.one_node else {})}
                         for name, c in per.items()}
            for collective, per in fit.corrections.items()}
    reduction = {}
    if "reduction_s_per_byte" in fit.extra:  # the fitted law as a table every command reads ([reduction.<op>])
        from commcost.calibration.fit_pricer import reduction_law

        reduction = {"reduction": {"fitted": reduction_law(fit.extra["reduction_s_per_byte"],
                                                           fit.extra.get("reduction_s", 0.0)).to_dict()}}
    if fit.model == "taulop":
        top = max(p.nbytes for p in fit.points)
        sizes = [float(2 ** k) for k in range(max(1, int(np.ceil(np.log2(max(top, 2))))) + 1)]
        names = list(fit.params)
        theta = np.array([fit.params[n][q] for n in names for q in ("o_s", "L_s", "G_s_per_byte")])
        return {"taulop": {"beyond_m": "slope", **taulop_tables(theta, names, fit.tau_max, sizes)},
                "algorithm_fit": fits, **reduction}
    return {fit.model: fit.params, "algorithm_fit": fits, **reduction}


@dataclass
class FitOptions:
    """What ``commcost fit`` fits and where it writes (its options, by their argparse names)."""

    measurements: Path | None = None  # measurements CSV (commcost calibrate / commcost import)
    model: str | None = None  # hockney, loggp, taulop, loggph (from collectives), maxrate, ompi_bcast_model
    out: Path | None = None  # the parameter file to write (.toml)
    transfers: list[str] = field(default_factory=list)  # tau-Lop: CHANNEL=K transfers per transmission
    benchmark: list[str] = field(default_factory=list)  # fit only rows of these benchmarks
    statistic: str = "median"  # per-point time to fit: median or mean
    shm_channel: str | None = None  # ompi_bcast_model: the shared-memory channel's name (default shm)
    network_channel: str | None = None  # ompi_bcast_model: the network channel's name (default tcp)
    from_collectives: bool = False  # fit to measured times of forced collective algorithms
    platform: Path | None = None  # from_collectives or maxrate: the platform the rows ran on
    collectives: str | None = None  # from_collectives: comma list of collectives to fit on (default all)
    max_procs: int | None = None  # from_collectives: only rows of at most this many ranks
    prior_weight: float | None = None  # from_collectives: points the nominal channel values weigh (default 1)
    barrier_skew: str | None = None  # from_collectives: the barrier before each timed call (ompi5, ompi4)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class ChannelFit:
    """A per-channel fit to point-to-point rows (hockney, loggp, taulop) and what it wrote."""

    options: FitOptions
    fits: list
    meta: dict
    left_out: dict

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        return {"out": str(self.options.out), "meta": self.meta, "left_out": self.left_out,
                "channels": {f.channel: {**f.report, "benchmarks": f.benchmarks} for f in self.fits}}


@dataclass
class MaxrateFit:
    """Paper 001's max-rate rows fitted from ping-pongs, and the fit's report."""

    options: FitOptions
    section: dict
    report: dict

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        return {"out": str(self.options.out), "maxrate": self.section, "report": self.report}


@dataclass
class Paper004Fit:
    """Paper 004's parameters (gamma, Q, per-algorithm o and L), the per-algorithm fits and the report."""

    options: FitOptions
    params: Any  # commcost.closedform.ompi_bcast_params.Paper004Params
    fits: list
    report: dict
    meta: dict

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        return {"out": str(self.options.out), "meta": self.meta, "params": self.params.to_dict(),
                "report": self.report}


@dataclass
class CollectivesFit:
    """A model fitted to collective times (inverse calibration), its summary and the seconds it took."""

    options: FitOptions
    fit: Any  # commcost.calibration.fit_from_collectives.CollectiveFit
    total: dict
    seconds: float

    def to_dict(self) -> dict:
        """The JSON document ``--format json`` prints."""
        fit = self.fit
        return {"out": str(self.options.out), "params": fit.params, "fitted": fit.extra,
                "assumed": fit.assumed, "unidentified": fit.unidentified,
                "poorly_identified": fit.weak, "confounded": fit.confounded,
                "summary": self.total, "per_algorithm": fit.per_algorithm, "seconds": self.seconds,
                "corrections": {c: {**_choice(v), **({"one_node": _choice(v.one_node)} if v.one_node else {})}
                                for c, v in fit.correction_choices.items()},
                "per_algorithm_corrected": fit.per_algorithm_corrected,
                "steps": fit.steps, "pricings": fit.pricings,
                "barrier_skew": fit.barrier_summary()}


def barrier_line(summary: dict) -> str | None:
    """The report's line on the barrier before each timed call (:meth:`CollectiveFit.barrier_summary`), or
    None where ranks started together and nothing else was tried."""
    if summary.get("loss"):
        tried = ", ".join(f"{k} {v:.1f}" for k, v in summary["loss"].items())
        return f"barrier before each timed call: {summary['kept']} kept, of the least loss ({tried})"
    if summary.get("kept", "none") != "none":
        return f"each rank's time priced from when Open MPI's barrier ({summary['kept']}) let it go"
    return None


def _choice(v) -> dict:
    """A :class:`~commcost.calibration.algorithm_corrections.CorrectionChoice` as plain data."""
    return {"form": v.form, "held_out_procs": list(v.held_out), "sizes": v.points,
            "mean_penalty_pct": {f: (None if pct != pct else pct) for f, pct in v.pct.items()},  # no fold: null
            "across_nodes": v.multi_node, "why": v.why}


def fit_measurements(options: FitOptions) -> ChannelFit | MaxrateFit | Paper004Fit | CollectivesFit:
    """Fit ``options.model`` to the rows of ``options.measurements`` and write the parameter file
    ``options.out``; the fit, by kind (its ``to_dict()`` is what ``commcost fit --format json`` prints)."""
    from commcost.calibration.from_measurements import benchmark_rows, fit_channels, model_section
    from commcost.io.measurements import fit_times, measurement_columns, read_some_measurements
    from commcost.io.params_file import write_params

    check_fit_options(options)
    transfers = transfer_counts(options.transfers)
    rows = read_some_measurements(options.measurements)
    if options.from_collectives:
        return fit_from_collectives(options, rows)
    if options.model == "loggph":
        raise InputError("LogGPH is fitted to collective times; expected --from-collectives", where="--model")
    columns = fit_times(measurement_columns(rows), options.statistic)
    if options.model == PAPER004:
        return fit_ompi_bcast(options, columns)
    if options.model == "maxrate":
        return fit_maxrate(options, columns)
    try:
        left_out = benchmark_rows(columns, options.benchmark)[1]
        fits = fit_channels(columns, options.model, transfers, options.benchmark)
    except InputError as exc:
        raise exc.located(source=str(options.measurements)) from None
    benchmarks = sorted({b for f in fits for b in f.benchmarks})
    meta = {
        "fitted_from": str(options.measurements),
        "fitted_at": _now(),
        "model": options.model,
        "statistic": options.statistic,
        "points": sum(f.npoints for f in fits),
        "benchmarks": benchmarks,
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "quality": {f.channel: {"points": f.npoints, "mu_mean": f.report.get("mu_mean"),
                                "mu_max": f.report.get("mu_max")} for f in fits},
    }
    if options.model == "loggp":  # a ping-pong identifies G and 2o + L only: no [loggph] section a model could use
        meta["loggp"] = {f.channel: f.params for f in fits}
        meta["loggp_note"] = ("ping-pong times identify G and 2o + L only; o, L and g need a measured "
                              "overhead and gap, so no [loggph] section is written")
        write_params(options.out, {}, meta)
    else:
        write_params(options.out, {options.model: model_section(options.model, fits)}, meta)
    return ChannelFit(options, fits, meta, left_out)


def fit_maxrate(options: FitOptions, columns) -> MaxrateFit:
    """Paper 001's max-rate rows from ping-pongs (:mod:`commcost.calibration.fit_maxrate`)."""
    from commcost.calibration.fit_maxrate import maxrate_from_pingpongs
    from commcost.io.params_file import write_params

    platform = None
    if options.platform is not None:
        from commcost.io.platform_file import load_platform
        from commcost.platform.platform import CACHE_LEVEL, NODE_LEVEL, SOCKET_LEVEL

        platform, _ = load_platform(options.platform)
        intra = {c.name for c in platform.channels if c.level in (NODE_LEVEL, SOCKET_LEVEL, CACHE_LEVEL)}
    else:
        intra = {"shm"}
    try:
        section, report = maxrate_from_pingpongs(columns, intra, options.benchmark, platform)
    except InputError as exc:
        raise exc.located(source=str(options.measurements)) from None
    meta = {"fitted_from": str(options.measurements), "model": "maxrate",
            "fitted_at": _now(),
            "method": "paper 001 Table 1's rows from per-channel Hockney fits with protocol breaks",
            "quality": report}
    write_params(options.out, {"maxrate": section}, meta)
    return MaxrateFit(options, section, report)


def fit_ompi_bcast(options: FitOptions, columns) -> Paper004Fit:
    """Paper 004: gamma and Q from NBFT rows (eq. 14-15), o and L per algorithm from bcast+gather rows (eq. 16-19)."""
    from commcost.closedform.ompi_bcast_calibration import calibrate_paper004
    from commcost.closedform.ompi_bcast_params import SECTION
    from commcost.io.params_file import write_params

    try:
        params, fits, report = calibrate_paper004(columns, shm=options.shm_channel or "shm",
                                                  network=options.network_channel or "tcp")
    except InputError as exc:
        raise exc.located(source=str(options.measurements)) from None
    meta = {
        "fitted_from": str(options.measurements),
        "fitted_at": _now(),
        "model": SECTION, "method": "paper 004 section 5: gamma, Q from NBFTs (eq. 14-15); o, L per "
                                    "algorithm from bcast + flat gather (eq. 16-19), Huber, relative residuals",
        "statistic": options.statistic,
        "points": sum(int(f.measured_s.size) for f in fits),
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "sources": report["sources"],
        "quality": {a: {k: v for k, v in r.items() if k != "residuals_s"} for a, r in report["algorithms"].items()},
    }
    write_params(options.out, {SECTION: params.to_dict()}, meta)
    return Paper004Fit(options, params, fits, report, meta)


def check_fit_options(options: FitOptions) -> None:
    """Refuse an option of another kind of fit (it would be ignored) and an empty or impossible value."""
    only = {"--collectives": (options.collectives, options.from_collectives, "--from-collectives"),
            "--max-procs": (options.max_procs, options.from_collectives, "--from-collectives"),
            "--prior-weight": (options.prior_weight, options.from_collectives, "--from-collectives"),
            "--barrier-skew": (options.barrier_skew, options.from_collectives, "--from-collectives"),
            "--platform": (options.platform, options.from_collectives or options.model == "maxrate",
                           "--from-collectives or --model maxrate"),
            "--shm-channel": (options.shm_channel, options.model == PAPER004, f"--model {PAPER004}"),
            "--network-channel": (options.network_channel, options.model == PAPER004, f"--model {PAPER004}")}
    for flag, (value, applies, mode) in only.items():
        if value is not None and not applies:
            raise InputError(f"applies only with {mode}; this fit would ignore it", where=flag)
    for flag, value in (("--shm-channel", options.shm_channel), ("--network-channel", options.network_channel)):
        if value is not None and not value.strip():
            raise InputError("expected a channel's name, got an empty one", where=flag)
    if options.prior_weight is not None and not (math.isfinite(options.prior_weight) and options.prior_weight >= 0):
        raise InputError(f"expected a number of points >= 0, got {options.prior_weight}", where="--prior-weight")
    if options.max_procs is not None and options.max_procs < 2:
        raise InputError(f"expected --max-procs >= 2 (a collective's ranks), got {options.max_procs}",
                         where="--max-procs")
    if options.collectives is not None:
        chosen = [c.strip() for c in options.collectives.split(",") if c.strip()]
        known = [c.value for c in collectives()]
        if not chosen or any(c not in known for c in chosen):
            raise InputError(f"expected a comma list of {', '.join(known)}, got {options.collectives!r}",
                             where="--collectives")


def fit_from_collectives(options: FitOptions, rows) -> CollectivesFit:
    """The model's channels fitted to the rows' forced collective algorithms (:func:`fit_collective_rows`),
    written with the per-algorithm corrections (:func:`collective_fit_sections`)."""
    import time

    from commcost.io.params_file import write_params
    from commcost.io.platform_file import load_platform

    if options.platform is None:
        raise InputError("fitting to collective times prices schedules on a platform; expected --platform",
                         where="--platform")
    platform, _ = load_platform(options.platform)
    chosen = [c.strip() for c in options.collectives.split(",") if c.strip()] if options.collectives else None
    started = time.perf_counter()
    try:
        fit = fit_collective_rows(rows, platform, options.model, chosen, options.max_procs,
                                  prior_weight=1.0 if options.prior_weight is None else options.prior_weight,
                                  barrier=options.barrier_skew)
    except InputError as exc:
        raise exc.located(source=str(options.measurements)) from None
    spent = time.perf_counter() - started
    total = fit.summary()
    meta = {"fitted_from": str(options.measurements), "method": "inverse calibration on collective times",
            "fitted_at": _now(),
            **({"barrier_skew": fit.barrier or "none"} if options.barrier_skew else {}),
            "quality": {"points": total["points"], "mu": total["mu"], "median_abs_pct": total["median_abs_pct"],
                        "unidentified": fit.unidentified, "poorly_identified": fit.weak,
                        "confounded": fit.confounded,
                        "per_algorithm": fit.per_algorithm}}
    write_params(options.out, collective_fit_sections(fit), meta)
    return CollectivesFit(options, fit, total, spent)
