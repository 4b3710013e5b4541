"""A selection in an HTML report: its map beside the default's, its rules, and how much it beats the default.

Used by ``select --html``, ``tune --html`` and ``evaluate-selection
--html``; the pieces are those of the text report
(:mod:`commcost.report.selection_report`) and the picture
(:mod:`commcost.report.selection_map`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from commcost.report.html_page import HtmlPage
from commcost.report.selection_map import figure_png, map_figure
from commcost.selection.decision import Choice
from commcost.selection.strategies import STRATEGIES

PENALTY_HEADERS = ("strategy", "points", "mean penalty %", "max penalty %", "within 5 %", "within 10 %")


def penalty_rows(rows: Mapping[str, Mapping[str, Any]]) -> list[list[Any]]:
    """Table rows of :func:`commcost.selection.evaluate.summary_of` summaries, one per strategy."""
    return [[name, s.get("points"), s.get("mean_pct"), s.get("max_pct"),
             f"{100 * s['within_5pct']:.0f} %" if s.get("within_5pct") is not None else None,
             f"{100 * s['within_10pct']:.0f} %" if s.get("within_10pct") is not None else None]
            for name, s in rows.items()]


def add_selection(page: HtmlPage, heading: str, *, title: str, size_title: str, procs: Sequence[int],
                  sizes: Sequence[int], chosen: Sequence[Sequence[Choice | None]], rules_text: str,
                  default: Sequence[Sequence[Choice | None]] | None = None, default_title: str = "",
                  regions: Sequence[Sequence[str]] | None = None, penalties: Mapping[str, Mapping] | None = None,
                  penalty_caption: str = "", map_png: bytes | None = None) -> bytes:
    """A section: the map (drawn here unless ``map_png`` is given), the rules as the terminal prints them,
    and the default's predicted penalty; returns the map's PNG."""
    page.section(heading)
    if map_png is None:
        map_png = figure_png(map_figure(procs, sizes, chosen, title, size_title=size_title, default=default,
                                        default_title=default_title or "the library's default", regions=regions))
    caption = (f"{title}. Each colour and marker is one algorithm (library id in brackets)"
               + ("; the right panel is what the library runs without rules" if default is not None else "")
               + ("; outlined cells were measured, hatched ones extrapolated" if regions is not None else "") + ".")
    page.figure(map_png, caption, alt=f"selection map: {title}")
    if penalties:
        page.subheading("Predicted penalty of the default")
        page.table(PENALTY_HEADERS, penalty_rows(penalties), caption=penalty_caption)
    page.subheading("Rules")
    page.preformatted(rules_text)
    return map_png


CV_CAPTION = ("Forward cross-validation over P: each held-out process count is scored with the model refitted on "
              "fewer ranks; mean penalty (%) against the measured best of each way of choosing (default: no "
              "rule, the library decides; constant: the one algorithm best on the training rows; anchored: each "
              "algorithm's measured time at the largest trained P carried by the model's growth; model: the "
              "model's fastest). The least is kept, a tie keeps the safer; '-' could not be scored in any fold.")


def cross_validation_rows(strategies: Mapping[str, Mapping[str, Any] | None]) -> list[list[Any]]:
    """Table rows, one per collective, of :meth:`commcost.selection.strategies.StrategyChoice.to_dict` data:
    held-out P, each way's cross-validated mean penalty and the way kept."""
    rows = []
    for name, info in strategies.items():
        if not info:
            continue
        pens = info.get("cv_mean_penalty_pct") or {}
        rows.append([name, ", ".join(map(str, info.get("folds") or [])) or "none",
                     *(None if pens.get(way) is None else round(float(pens[way]), 1) for way in STRATEGIES),
                     _kept(info)])
    return rows


def _kept(info: Mapping[str, Any]) -> str:
    """The way kept, and the process counts it was applied to in a regime no fold held out."""
    unvouched = info.get("not_cross_validated_at") or []
    if not unvouched or info.get("chosen") == "default":
        return str(info.get("chosen"))
    return f"{info.get('chosen')} (not cross-validated at P = {', '.join(map(str, unvouched))})"


def add_cross_validation(page: HtmlPage, strategies: Mapping[str, Mapping[str, Any] | None]) -> None:
    """A subsection: the cross-validated way of choosing per collective (tune --from-measurements,
    evaluate-selection); nothing when no collective was cross-validated."""
    rows = cross_validation_rows(strategies)
    if not rows:
        return
    page.subheading("How to choose, by cross-validation over P")
    page.table(("collective", "held-out P", *(f"{way} %" for way in STRATEGIES), "kept"), rows, caption=CV_CAPTION)
