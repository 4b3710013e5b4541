"""A Cost as a JSON document or as a text report for the terminal."""

from __future__ import annotations

from typing import Any

from commcost.models.base import Cost
from commcost.units import format_nbytes, format_seconds


def cost_to_dict(cost: Cost, schedule_name: str = "") -> dict[str, Any]:
    """Plain data: ``time_s``, ``model``, per-phase, per-channel and per-rank times, and the explanation."""
    doc: dict[str, Any] = {
        "schedule": schedule_name,
        "model": cost.model,
        "time_s": cost.time_s,
        "phases": [{"name": n, "time_s": float(t)} for n, t in zip(cost.phase_names, cost.phase_time_s)],
        "times_from_start": cost.from_start,
        "channels": [
            {"name": c, "time_s": cost.channel_time_s[c], "nbytes": cost.channel_nbytes[c],
             "transmissions": cost.channel_count[c]}
            for c in cost.channel_time_s
        ],
        "rank_time_s": [float(t) for t in cost.rank_time_s],
    }
    explain = dict(cost.explain)
    for entry, extra in zip(doc["phases"], explain.pop("phases", [])):
        entry.update({k: v for k, v in extra.items() if k != "name"})
    doc.update(explain)
    return doc


def render_text(cost: Cost, schedule_name: str = "", max_rows: int = 20, unit: str | None = None) -> str:
    """A short report: total, phases, channels and, when explained, the formula and the timeline; the
    phase and channel tables in ``unit`` (:data:`commcost.units.TIME_UNITS`; None: each time in its own)."""
    lines = [f"{schedule_name or 'schedule'} under {cost.model}: {format_seconds(cost.time_s, unit)}"]
    lines.append("")
    lines.append(f"  {'phase':<24} {'ends at' if cost.from_start else 'time':>12}")
    shown = list(zip(cost.phase_names, cost.phase_time_s))
    for name, t in shown[:max_rows]:
        lines.append(f"  {name:<24} {format_seconds(float(t), unit):>12}")
    if len(shown) > max_rows:
        lines.append(f"  ... {len(shown) - max_rows} more phases")
    lines.append("")
    lines.append(f"  {'channel':<12} {'transmissions':>14} {'bytes':>12} {'time':>12}")
    for c in cost.channel_time_s:
        if cost.channel_count[c]:
            lines.append(f"  {c:<12} {cost.channel_count[c]:>14} {format_nbytes(cost.channel_nbytes[c]):>12} "
                         f"{format_seconds(cost.channel_time_s[c], unit):>12}")
    explain = cost.explain
    if explain.get("beyond_table"):
        lines += ["", f"  tau-Lop tables beyond their range: {explain['beyond_table']}"]
    if "formula" in explain:
        size_unit = explain.get("unit", "B")
        lines += ["", f"  tau-Lop algebra (sizes in {size_unit}; paper 000 rules A1-A3, eq. 5-7):",
                  f"    {explain['formula']}",
                  f"    = {format_seconds(explain['formula_s'], unit)} by the paper's algebra",
                  f"    = {format_seconds(explain['engine_s'], unit)} by the exact engine "
                  f"(difference {format_seconds(explain['formula_minus_engine_s'], unit)})"]
        if len(explain.get("phases", [])) > 1:
            lines.append("  per phase:")
            for p in explain["phases"][:max_rows]:
                lines.append(f"    {p['name']}: {p['formula']}")
                lines.append(f"      algebra {format_seconds(p['formula_s'], unit)}, "
                             f"engine {format_seconds(p['engine_s'], unit)}")
        timeline = explain.get("timeline", [])
        if timeline:
            lines += ["", "  engine timeline (each piece: tau transmissions moving nbytes each):"]
            for piece in timeline[:max_rows]:
                cut = "  (cut: a transmission joined)" if piece["cut"] else ""
                lines.append(
                    f"    {piece['phase']:<10} {piece['channel']:<6} tau={piece['tau']:<4} "
                    f"{format_nbytes(piece['nbytes']):>10}  {format_seconds(piece['start_s'], unit):>10} -> "
                    f"{format_seconds(piece['end_s'], unit):<10}{cut}"
                )
            if len(timeline) > max_rows:
                lines.append(f"    ... {len(timeline) - max_rows} more pieces")
    elif "law" in explain:
        lines += ["", f"  {explain['law']}"]
    return "\n".join(lines)


def render_comparison(header: dict[str, Any], rows: list[tuple[str, int | None, dict, int, int, Cost]],
                      unit: str | None = None) -> str:
    """Algorithms side by side: one row per (name, id, params, transmissions, phases, cost), best marked;
    times in ``unit`` (None: each in its own)."""
    best = min((cost.time_s for *_, cost in rows), default=0.0)
    lines = [f"{header['collective']} of {format_nbytes(header['nbytes'])} on {header['procs']} ranks "
             f"(root {header['root']}, {header['mapping']}) under {header['model']}", ""]
    texts = [", ".join(f"{k}={v}" for k, v in params.items()) or "-" for _, _, params, *_ in rows]
    wide_name = max([len("algorithm")] + [len(row[0]) for row in rows])  # columns as wide as their contents
    wide_text = max([len("parameters")] + [len(text) for text in texts])
    times = [format_seconds(row[-1].time_s, unit) for row in rows]
    wide_time = max([11] + [len(text) for text in times])
    lines.append(f"  {'id':>3}  {'algorithm':<{wide_name}} {'parameters':<{wide_text}} {'transm.':>9} {'phases':>7} "
                 f"{'time':>{wide_time}} {'vs best':>8}")
    for (name, ident, params, ntx, nphases, cost), text, time in zip(rows, texts, times):
        ratio = cost.time_s / best if best > 0 else 1.0
        mark = "  <- best" if cost.time_s == best else ""
        lines.append(f"  {'' if ident is None else ident:>3}  {name:<{wide_name}} {text:<{wide_text}} {ntx:>9} "
                     f"{nphases:>7} {time:>{wide_time}} {ratio:>7.2f}x{mark}")
    return "\n".join(lines)
