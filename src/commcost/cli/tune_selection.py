"""One collective's selection inside ``commcost tune``: select, refine, keep the default where the gain is
small, and say how far to trust each pick (margins, measured / interpolated / extrapolated regions)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def select_one(args, collective, library: str, model: str, params_path: Path, platform_path: Path,
                procs: list[int], sizes: list[int], calibration: dict):
    """One selection through the select command's own pieces, midpoints priced where picks change and
    Open MPI's default kept where the predicted gain is under ``--min-gain``; returns (the Selection to
    write, report text, the per-point confidence for report.json, the HTML report's view of it)."""
    from commcost.cli.select_command import finite_or_none, predicted_penalty, make_pricer, ompi_default_times, variables
    from commcost.report.selection_map import plot_map
    from commcost.report.selection_report import render_penalties, render_rules
    from commcost.selection.confidence import margins, region_counts, regions
    from commcost.selection.select import candidates, keep_default, picks_or_default, refine, select

    opts = argparse.Namespace(params=params_path, platform=platform_path, model=model, library=library,
                              collective=collective.value, ppn=None, mapping=None, root=0, segsizes=args.segsizes,
                              fanouts="", radixes="")
    choices = candidates(collective, library, variables(opts))
    price = make_pricer(opts, procs)
    source = f"commcost tune, model {model}"
    result = select(collective, library, choices, procs, sizes, price, source=source, prune=False)
    result = refine(result, price, prune=False)
    procs, sizes = list(result.procs), list(result.sizes)
    default, default_s = ompi_default_times(opts, collective, procs, sizes, price, result)
    kept = np.zeros((len(procs), len(sizes)), bool)
    selection = result.selection
    if default:
        selection, kept = keep_default(result, default_s, args.min_gain, source)
    chosen = picks_or_default(result, kept)
    title = f"{collective.value} ({library}): best algorithm by {model}"
    margin, runner_up = margins(result.time_s, [c.algorithm.key for c in result.choices])
    region = regions(procs, sizes, calibration["procs"], calibration["sizes"],
                     calibration["measured"].get(collective.value, ()))
    default_title = "Open MPI's default (han on several nodes, else tuned's fixed decision)"
    png = plot_map(args.out / f"{collective.value}-{library}-map.png", procs, sizes, chosen, title,
                   size_title=collective.size_meaning, default=default or None, default_title=default_title,
                   regions=region)
    text = render_rules(selection, title)
    counts = region_counts(region)
    changed = ~kept
    finite = margin[changed & np.isfinite(margin)]
    text += (f"\n  {int(kept.sum())} of {kept.size} points keep Open MPI's default (predicted gain under "
             f"{args.min_gain:.0%}: no rule written there)" if default else "")
    if finite.size:
        text += (f"\n  margin of the rules' picks to the runner-up: median {100 * np.median(finite):.1f}%, under 5% "
                 f"at {int((finite < 0.05).sum())} of {finite.size} points")
    text += (f"\n  points: {counts['measured']} measured, {counts['interpolated']} interpolated, "
             f"{counts['extrapolated']} extrapolated (beyond {calibration['procs']} ranks or the measured sizes "
             f"{calibration['sizes'][0]}..{calibration['sizes'][1]} B)")
    penalty = {"Open MPI default": predicted_penalty(default_s, result)} if default else None
    if default:
        text += "\n" + render_penalties(penalty, f"  {default_title}, priced by the same model:")
    best = result.best_index
    points = []
    for i, nprocs in enumerate(procs):
        for j, nbytes in enumerate(sizes):
            runner = result.choices[runner_up[i, j]] if runner_up[i, j] >= 0 else None
            points.append({
                "nprocs": nprocs, "nbytes": nbytes, "best": result.choices[best[i, j]].label,
                "best_s": finite_or_none(result.time_s[best[i, j], i, j]),
                "runner_up": runner.label if runner is not None else None, "margin": finite_or_none(margin[i, j]),
                "default": (default[i][j].label if default and default[i][j] is not None else None),
                "default_s": finite_or_none(default_s[i, j]) if default else None,
                "rule": None if kept[i, j] else result.choices[best[i, j]].label, "region": region[i][j]})
    info = {"kept_default": int(kept.sum()), "points": kept.size, "regions": counts,
            "margin_median": float(np.median(finite)) if finite.size else None,
            "margin_under_5pct": int((finite < 0.05).sum()), "grid": points}
    view = {"heading": f"{collective.value} ({library})", "title": title, "size_title": collective.size_meaning,
            "procs": procs, "sizes": sizes, "chosen": chosen, "rules_text": text, "default": default or None,
            "default_title": default_title, "regions": region, "penalties": penalty, "map_png": png,
            "penalty_caption": f"{default_title} against the rules' picks, both priced by {model}"}
    return selection, text, info, view
