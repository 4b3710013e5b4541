"""``commcost tune --html``: the whole tuning on one page an admin can read before deploying it.

In order: provenance (what ran where, with which inputs), confidence
(converged share, unconverged points, per selection the margin of the
picks and how much of the grid was measured, interpolated or
extrapolated), fit quality (mu per channel and per algorithm fit, and the
ping-pong residual plot), one section per selection (map beside Open
MPI's default, rules, the default's predicted penalty), the measured
gains of ``commcost verify`` when it ran, and how to deploy the files.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from commcost.report.fit_figures import QUALITY_HEADERS, ChannelResiduals, quality_rows, residual_figure
from commcost.report.html_page import HtmlPage
from commcost.report.selection_map import figure_png
from commcost.report.selection_page import add_cross_validation, add_selection
from commcost.report.verify_page import add_verify

MAX_UNCONVERGED_ROWS = 40


def _confidence(page: HtmlPage, report: Mapping[str, Any], warnings: Sequence[str]) -> None:
    page.section("Confidence")
    for line in warnings:
        page.paragraph(line, warning=True)
    share = report.get("converged_share")
    sizes = report.get("measured_sizes") or [None, None]
    page.table(("measured points", "converged (95% CI within 2.5%)", "calibrated ranks", "measured sizes",
                "min gain for a rule"),
               [[report.get("points"), f"{share:.0%}" if isinstance(share, (int, float)) else "unknown",
                 report.get("calibrated_procs"), f"{sizes[0]}..{sizes[1]} B" if sizes[0] is not None else None,
                 f"{report.get('min_gain', 0):.0%}"]])
    rows = []
    for name, info in report.get("selections", {}).items():
        regions = info.get("regions", {})
        rows.append([name, info.get("points"), regions.get("measured"), regions.get("interpolated"),
                     regions.get("extrapolated"), info.get("kept_default"),
                     None if info.get("margin_median") is None else f"{100 * info['margin_median']:.1f} %",
                     info.get("margin_under_5pct")])
    if rows:
        page.table(("selection", "points", "measured", "interpolated", "extrapolated", "default kept",
                    "median margin to runner-up", "picks within 5 %"), rows,
                   caption="A pick whose margin is under the fit's error is a coin toss; extrapolated points "
                           "rest on the model alone.")
    add_cross_validation(page, {name: info.get("strategy") for name, info in report.get("selections", {}).items()})
    unconverged = report.get("unconverged") or []
    if unconverged:
        page.subheading(f"Points whose confidence interval was not met ({len(unconverged)})")
        page.table(("benchmark", "channel", "P", "nbytes", "tau", "95% CI / mean"),
                   [[u.get("benchmark"), u.get("channel"), u.get("nprocs"), u.get("nbytes"), u.get("tau"),
                     u.get("ci95_rel")] for u in unconverged[:MAX_UNCONVERGED_ROWS]],
                   caption=("" if len(unconverged) <= MAX_UNCONVERGED_ROWS
                            else f"the first {MAX_UNCONVERGED_ROWS}; report.json lists all"))


def _fit_quality(page: HtmlPage, report: Mapping[str, Any], params, residuals: Sequence[ChannelResiduals]) -> None:
    page.section("Fit quality")
    page.paragraph("mu = max(measured, model) / min(measured, model) per point (paper 000 section 5.5); 1 is exact.")
    if "fit" in report:  # tune --from-measurements: one inverse fit over the collectives' times
        fit = report["fit"]
        page.table(("fitted from", "points", "measured / model (geometric mean)", "median |error| %",
                    "poorly identified"),
                   [[report.get("from_measurements"), fit.get("points"), fit.get("mu"), fit.get("median_abs_pct"),
                     "; ".join(fit.get("poorly_identified") or []) or "-"]])
    rows = quality_rows(params.meta.get("quality", {}))
    if rows:
        page.table(QUALITY_HEADERS, rows)
    if residuals:
        page.figure(figure_png(residual_figure(residuals)),
                    "Ping-pong times measured (markers) and the fitted Hockney law (lines) per channel; below, "
                    "measured / fitted per point.", alt="ping-pong residuals")


def tune_page(report: Mapping[str, Any], views: Sequence[Mapping[str, Any]], params, *, provenance: dict[str, str],
              residuals: Sequence[ChannelResiduals] = (), warnings: Sequence[str] = (), deploy: Mapping[str, Any] | None = None
              ) -> HtmlPage:
    """The page; ``views`` are tune's selections (keywords of :func:`add_selection` plus ``heading``),
    ``deploy`` holds ``mca_params`` (the file's text), ``env`` (its OMPI_MCA_ lines) and ``files``;
    ``residuals`` are the ping-pong points against their channels' laws
    (:func:`commcost.report.fit_figures.hockney_residuals`)."""
    title = ", ".join(v["heading"] for v in views) or "nothing selected"
    page = HtmlPage(f"commcost tune: {title}", provenance)
    if report.get("commcost_tune"):
        page.section("The rules' provenance")
        page.preformatted("\n".join(report["commcost_tune"]))
    _confidence(page, report, warnings)
    _fit_quality(page, report, params, residuals)
    for view in views:
        add_selection(page, **view)
    if "verify" in report:
        add_verify(page, report["verify"])
    else:
        page.section("Measured gains")
        page.paragraph("Not measured in this run: commcost verify OUT times the collectives with and without the "
                       "files on the machine they are for.")
    if deploy:
        page.section("Deploy")
        page.table(("file written",), [[f] for f in deploy.get("files", [])])
        if deploy.get("mca_params"):
            page.subheading("mca-params.conf (Open MPI 5: coll/han decides on several nodes, so both rules files "
                            "are named)")
            page.preformatted(deploy["mca_params"])
        if deploy.get("env"):
            page.subheading("The same as environment variables (an sbatch script, one job)")
            page.preformatted("\n".join(deploy["env"]))
    return page
