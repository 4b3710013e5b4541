"""Measured against predicted gains of a rules file in an HTML report (``verify --html``, ``tune --html``).

A point's gain is default / with rules: the collective timed as Open MPI
runs it by default and with the written mca-params file (``commcost
verify``). The picture puts the measured gain beside the model's
predicted one per point; a point where they disagree by more than the
measurement noise is where the model is wrong, whatever it predicted.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from commcost.report.html_page import HtmlPage
from commcost.report.palette import OKABE_ITO
from commcost.report.selection_map import figure_png
from commcost.units import format_nbytes, format_seconds

VERIFY_HEADERS = ("collective", "P", "nodes", "nbytes", "default runs", "with rules", "default", "with rules",
                  "measured gain", "predicted gain", "verdict")


def _seconds(value: float | None) -> str | None:
    return format_seconds(value) if value else None


def gains_figure(points: Sequence[Mapping[str, Any]]) -> Any:
    """Bars of measured and predicted gain per point (log scale, 1 = no change)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = [f"{p['collective']}\nP={p['nprocs']} {format_nbytes(p['nbytes'])}" for p in points]
    measured = np.array([p.get("measured_gain") or np.nan for p in points], dtype=float)
    predicted = np.array([p.get("predicted_gain") or np.nan for p in points], dtype=float)
    x = np.arange(len(points))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(points) + 2), 4.2))
    ax.bar(x - 0.2, measured, 0.4, color=OKABE_ITO[4], edgecolor="black", label="measured")
    ax.bar(x + 0.2, predicted, 0.4, color=OKABE_ITO[0], edgecolor="black", hatch="..", label="predicted by the model")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("gain = default time / time with the rules")
    ax.set_title("the rules file against Open MPI's default: measured and predicted gain")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def add_verify(page: HtmlPage, doc: Mapping[str, Any], heading: str = "Measured gains") -> None:
    """A section from ``verify.json``: the summary, the gains picture and the table per point."""
    page.section(heading)
    points = list(doc.get("points", []))
    totals = doc.get("summary", {})
    if not points:
        page.paragraph("nothing was measured (the budget was spent, or no collective was timed)", warning=True)
        return
    if totals.get("measured"):
        page.paragraph(f"Where the rules change the algorithm: measured gain {totals['measured_gain_geomean']:.2f}x "
                       f"(geometric mean of {totals['measured']} points), predicted "
                       + (f"{totals['predicted_gain_geomean']:.2f}x" if totals.get("predicted_gain_geomean")
                          else "n/a")
                       + f"; {totals.get('faster', 0)} faster, {totals.get('same', 0)} within noise, "
                       f"{len(totals.get('slower', []))} slower.", warning=bool(totals.get("slower")))
    else:
        page.paragraph(f"The rules run the same algorithms as Open MPI's default at these {len(points)} points.")
    if totals.get("noise") is not None:
        page.paragraph(f"Run-to-run noise (same algorithm both ways): up to {100 * totals['noise']:.0f} %.")
    if totals.get("launch_spread"):
        page.paragraph(f"Launch-to-launch spread (one side in its launches): up to "
                       f"{100 * totals['launch_spread']:.0f} %; a verdict needs every launch of one side ahead of "
                       "every launch of the other.")
    page.figure(figure_png(gains_figure(points)), "Measured (solid) and predicted (dotted) gain per point; "
                "above 1 the rules are faster.", alt="measured and predicted gains")
    page.table(VERIFY_HEADERS, [[p["collective"], p["nprocs"], p["nnodes"], format_nbytes(p["nbytes"]),
                                 p["default_runs"], p["rules_run"], _seconds(p.get("default_s")),
                                 _seconds(p.get("rules_s")), p.get("measured_gain"), p.get("predicted_gain"),
                                 p["verdict"]] for p in points])
    if doc.get("failed_runs"):
        page.paragraph(f"runs that failed or did not start: {', '.join(doc['failed_runs'])}", warning=True)
    if doc.get("unstarted_runs"):
        page.paragraph(f"launches the budget left no time for (the rounds measured stand): "
                       f"{', '.join(doc['unstarted_runs'])}")
