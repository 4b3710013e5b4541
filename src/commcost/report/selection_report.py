"""A selection as text, JSON rows and CSV rows (its map: :mod:`commcost.report.selection_map`)."""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from commcost.report.selection_map import DEFAULT_LABEL
from commcost.selection.decision import Selection
from commcost.units import format_nbytes


def rule_rows(selection: Selection) -> list[dict[str, Any]]:
    """One plain row per rule: ranges, algorithm, Open MPI id, tunables."""
    return [{"procs": [r.procs_lo, r.procs_hi], "nbytes": [r.nbytes_lo, r.nbytes_hi],
             "algorithm": r.choice.algorithm.key, "id": r.choice.algorithm.id, "params": dict(r.choice.params)}
            for r in selection.rules]


def render_rules(selection: Selection, title: str) -> str:
    """The rules, one block per band of process counts."""
    lines = [title, ""]
    for lo, hi in selection.procs_bands():
        lines.append(f"  P {lo}..{hi}:" if hi > lo else f"  P {lo}:")
        rules = selection.rules_for(lo, hi)
        for k, rule in enumerate(rules):
            ident = "" if rule.choice.algorithm.id is None else f"id {rule.choice.algorithm.id}"
            upto = (f"< {format_nbytes(rule.nbytes_hi + 1)}" if k < len(rules) - 1
                    else f"<= {format_nbytes(rule.nbytes_hi)}")
            lines.append(f"    {format_nbytes(rule.nbytes_lo):>9} <= n {upto:<12} {rule.choice.label:<36} {ident}")
            after = rules[k + 1].nbytes_lo if k + 1 < len(rules) else None
            if after is not None and after > rule.nbytes_hi + 1:  # no rule: the library's default decides
                gap = f"< {format_nbytes(after)}"
                lines.append(f"    {format_nbytes(rule.nbytes_hi + 1):>9} <= n {gap:<12} {DEFAULT_LABEL}")
    return "\n".join(lines)


def grid_csv(procs: Sequence[int], sizes: Sequence[int], columns: dict[str, Any]) -> str:
    """CSV text, one row per (P, n): ``columns`` maps a header to a [p][m] table (or a callable of p, m)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["nprocs", "nbytes", *columns])
    for p_index, nprocs in enumerate(procs):
        for m_index, nbytes in enumerate(sizes):
            row = [nprocs, nbytes]
            for value in columns.values():
                cell = value(p_index, m_index) if callable(value) else value[p_index][m_index]
                row.append(f"{cell:.6g}" if isinstance(cell, float) else cell)
            writer.writerow(row)
    return out.getvalue()


def render_penalties(rows: dict[str, dict[str, float]], title: str) -> str:
    """A small table: per choice strategy, mean/max penalty and within-5%/10% shares."""
    lines = [title, f"  {'strategy':<28} {'points':>6} {'mean':>9} {'max':>9} {'<=5%':>7} {'<=10%':>7}"]
    for name, s in rows.items():
        missing = f"   ({s['unscored']} picks not measured)" if s.get("unscored") else ""
        if not s["points"]:  # nothing to average (a default whose every pick went unpriced): no nan
            lines.append(f"  {name:<28} {0:>6} {'-':>9} {'-':>9} {'-':>7} {'-':>7}{missing}")
            continue
        lines.append(f"  {name:<28} {s['points']:>6} {s['mean_pct']:>8.1f}% {s['max_pct']:>8.1f}% "
                     f"{100 * s['within_5pct']:>6.0f}% {100 * s['within_10pct']:>6.0f}%{missing}")
    return "\n".join(lines)
