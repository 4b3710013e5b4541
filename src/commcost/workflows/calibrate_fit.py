"""calibrate's fits: every model a calibration's rows allow, as ``params.toml`` sections with their quality.

What for: after the runs, :func:`commcost.workflows.calibrate.calibrate`
fits Hockney (with eager/rendezvous segments in the report) per channel,
tau-Lop tables from Ring_tau, paper 004's parameters from NBFT and broadcast
rows, gamma(m, op) tables from ``MPI_Reduce_local``, the per-algorithm fit
T = a + b T_model of each collective and paper 001's queue search;
:func:`fit_calibration` gathers them, a model the rows do not allow noted
instead of fitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from commcost.calibration.plan import COLLECTIVE_BENCHMARKS
from commcost.errors import InputError


@dataclass
class CalibrationFits:
    """What the fits of a calibration gave: ``sections`` (``params.toml``'s tables), ``quality`` (each fit's
    summary, into ``[meta.quality]``), ``notes`` (why a model asked for was not fitted, or the sources of
    paper 004's fit) and ``fits`` (the Hockney and tau-Lop fits per channel, for the printed summary)."""

    sections: dict = field(default_factory=dict)
    quality: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    fits: dict = field(default_factory=dict)


def fit_calibration(columns, benchmarks: tuple[str, ...]) -> CalibrationFits:
    """Fit every model the measured ``columns`` allow (:func:`commcost.io.measurements.fit_times` of the
    rows); a model whose benchmark was asked for but cannot be fitted gets a note instead."""
    from commcost.calibration.from_measurements import fit_channels, model_section

    out = CalibrationFits()
    sections, quality, notes, fits = out.sections, out.quality, out.notes, out.fits
    for model, needs in (("hockney", "pingpong"), ("taulop", "ringtau")):
        try:
            fits[model] = fit_channels(columns, model, complete_only=True)
        except InputError as exc:
            if needs in benchmarks:
                notes[model] = exc.message
            continue
        sections[model] = model_section(model, fits[model])
        quality[model] = {f.channel: fit_quality(f.report, f.npoints) for f in fits[model]}
    if "bcast" in benchmarks or "nbft" in benchmarks:
        from commcost.closedform.ompi_bcast_calibration import calibrate_paper004
        from commcost.closedform.ompi_bcast_params import SECTION

        try:
            params, _, report = calibrate_paper004(columns)
            sections[SECTION] = params.to_dict()
            quality[SECTION] = {a: {k: v for k, v in r.items() if k != "residuals_s"}
                                for a, r in report["algorithms"].items()}
            notes[SECTION] = report["sources"]
        except InputError as exc:
            notes[SECTION] = exc.message
    if "reduction" in benchmarks:
        from commcost.calibration.fit_collectives import reduction_tables

        try:
            sections["reduction"], quality["reduction"] = reduction_tables(columns)
        except InputError as exc:
            notes["reduction"] = exc.message
    if set(benchmarks) & set(COLLECTIVE_BENCHMARKS):
        fit_algorithms(columns, sections, quality, notes)
    if "hvpp" in benchmarks:
        from commcost.calibration.from_measurements import fit_queue_search_channels

        try:
            quality["queue_search"] = fit_queue_search_channels(columns)
        except InputError as exc:
            notes["queue_search"] = exc.message
    return out


def fit_algorithms(columns, sections: dict, quality: dict, notes: dict) -> None:
    """Issue 7 item 3: T_measured = a + b T_model per measured (collective, algorithm), T_model under
    the run's tau-Lop parameters if fitted, else Hockney's; into ``[algorithm_fit.<collective>.<name>]``
    (a_s, b, model) and ``[meta.quality.algorithm_fit]`` (points, mu)."""
    from commcost.calibration.fit_collectives import fit_algorithms as fit_each, one_node_pricer

    model = "taulop" if "shm" in sections.get("taulop", {}) else "hockney"
    if "shm" not in sections.get(model, {}):
        notes["algorithm_fit"] = ("no shm point-to-point parameters (pingpong or ringtau) to price the "
                                  "schedules with; the per-algorithm fit needs them")
        return
    try:
        fits, failed = fit_each(columns, one_node_pricer(model, sections))
    except InputError as exc:
        notes["algorithm_fit"] = exc.message
        return
    if fits:
        sections["algorithm_fit"] = {c: {a: {"a_s": f.a_s, "b": f.b, "model": model} for a, f in d.items()}
                                     for c, d in fits.items()}
        quality["algorithm_fit"] = {c: {a: f.report() for a, f in d.items()} for c, d in fits.items()}
    if failed:
        notes["algorithm_fit"] = failed


def fit_quality(report: dict, npoints: int) -> dict:
    """The fit-quality summary of a channel kept in ``[meta.quality]``."""
    out = {"points": npoints, "mu_mean": report.get("mu_mean"), "mu_max": report.get("mu_max")}
    segments = report.get("segments", {}).get("segments", [])
    if len(segments) > 1:
        out["segments"] = [{"nbytes_range": s["nbytes_range"], **s["params"], "mu_mean": s["mu_mean"]}
                           for s in segments]
    return out
