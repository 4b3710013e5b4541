"""Fits from collective sweeps: every training row priced under one model, and the fitted sections a
parameter file keeps."""

from __future__ import annotations

from commcost.errors import InputError


def fit_collective_rows(rows, platform, model: str, collectives=None, max_procs=None, start=None,
                        prior_weight: float = 1.0):
    """The inverse calibration of :mod:`commcost.calibration.fit_from_collectives` on measurement rows, with
    the per-algorithm corrections cross-validation keeps (``start``: a fit's theta to begin from); the
    platform's nominal channel values as priors weighing ``prior_weight`` points each, and as the values of
    a channel no row uses."""
    import numpy as np

    from commcost.calibration.algorithm_corrections import choose_corrections, corrections
    from commcost.calibration.fit_from_collectives import (MODEL_PARAMS, collective_points, extra_parameters,
                                                           fit_model, fitted_units, layout_of, nominal_priors,
                                                           pricer, protocol_limits, stated_limits,
                                                           taulop_tau_max)

    if model not in MODEL_PARAMS:
        raise InputError(f"fitting {model} to collective times is not built yet; expected --model "
                         f"{' or '.join(MODEL_PARAMS)}", where="--model")
    points, placed, channels = collective_points(rows, platform, collectives, max_procs)
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
    fit = fit_model(model, points, units, pricer(model, placed, units, [p.statistic for p in points], extra, limits,
                                                 stated),
                    start=start, extra=extra, prior=nominal_priors(model, platform, units, layout),
                    prior_weight=prior_weight, layout=layout,
                    fixed={u: {"eager_limit_bytes": float(v), **stated.get(u, {})} for u, v in limits.items()})
    fit.units = "table" if model == "taulop" else "channel"
    fit.tau_max = taulop_tau_max(placed) if model == "taulop" else 0
    fit.unidentified += [f"{', '.join(MODEL_PARAMS[model])} of {c.name} (no training schedule uses it)"
                         for c in platform.channels if c.name not in channels and c.name not in said]
    modelled = np.array([p.time_s for p in points]) / fit.ratio
    fit.correction_choices = choose_corrections(points, modelled)
    fit.corrections = corrections(points, modelled, fit.correction_choices)
    return fit


def collective_fit_sections(fit) -> dict:
    """The parameter-file sections of a collective fit: the model's (``[hockney.<channel>]``, ...; tau-Lop:
    ``[taulop.<table>]`` tables of the fitted family at the training sizes, read with ``beyond_m =
    "slope"``), and the per-algorithm corrections cross-validation kept
    (:func:`commcost.calibration.algorithm_corrections.choose_corrections`) as
    ``[algorithm_fit.<collective>.<name>]`` a_s, b: paper 004 section 5.2's T = a_s + b T_model."""
    import numpy as np

    from commcost.calibration.fit_from_collectives import taulop_tables

    fits = {collective: {name: {"a_s": c.a_s, "b": c.b, "model": fit.model} for name, c in per.items()}
            for collective, per in fit.corrections.items()}
    reduction = {}
    if "reduction_s_per_byte" in fit.extra:  # the fitted rate as a table every command reads ([reduction.<op>])
        reduction = {"reduction": {"fitted": {"m": [0.0, 1.0], "time_s": [0.0, fit.extra["reduction_s_per_byte"]],
                                              "beyond_m": "slope"}}}
    if fit.model == "taulop":
        top = max(p.nbytes for p in fit.points)
        sizes = [float(2 ** k) for k in range(max(1, int(np.ceil(np.log2(max(top, 2))))) + 1)]
        names = list(fit.params)
        theta = np.array([fit.params[n][q] for n in names for q in ("o_s", "L_s", "G_s_per_byte")])
        return {"taulop": {"beyond_m": "slope", **taulop_tables(theta, names, fit.tau_max, sizes)},
                "algorithm_fit": fits, **reduction}
    return {fit.model: fit.params, "algorithm_fit": fits, **reduction}
