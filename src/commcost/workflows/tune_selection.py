"""One collective's selection inside ``commcost tune``: select, refine, keep the default where the gain is
small, and say how far to trust each pick (margins, measured / interpolated / extrapolated regions)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from commcost.errors import InputError


def select_one(args, collective, library: str, model: str, params_path: Path, platform_path: Path,
                procs: list[int], sizes: list[int], calibration: dict):
    """One selection through the select command's own pieces, midpoints priced where picks change and
    Open MPI's default kept where the predicted gain is under ``--min-gain``; returns (the Selection to
    write, report text, the per-point confidence for report.json, the HTML report's view of it, the han
    configuration chosen or None)."""
    from commcost.workflows.select import (finite_or_none, predicted_penalty, make_pricer, ompi_default_times,
        variables)
    from commcost.report.selection_map import plot_map
    from commcost.report.selection_report import render_penalties, render_rules
    from commcost.selection.confidence import margins, region_counts, regions
    from commcost.collectives.ompi_han import is_han
    from commcost.selection.han_config import choose_han_config, han_variants, shared_segments_pricer
    from commcost.selection.select import candidates, keep_default, picks_or_default, refine, select

    statistic, element = (getattr(args, "row_terms", None) or {}).get(collective.value, ("max", 1))
    opts = argparse.Namespace(params=params_path, platform=platform_path, model=model, library=library,
                              collective=collective.value, ppn=None, mapping=None, root=0, segsizes=args.segsizes,
                              fanouts="", radixes="", statistic=statistic, element_bytes=element)
    choices = candidates(collective, library, variables(opts))
    han_values = han_decision_values(args)
    if library == "ompi" and han_values:  # han's global tunables: every configuration priced, one deployed
        choices = [c for c in choices if not is_han(c.algorithm)] + han_variants(collective, library, han_values)
    price = shared_segments_pricer(make_pricer(opts, procs, sizes=sizes))
    source = f"commcost tune, model {model}"
    result = select(collective, library, choices, procs, sizes, price, source=source, prune=False)
    # on the grid asked for (the midpoints are priced for the configuration kept only)
    result, han_config = choose_han_config(result, args.min_gain)
    result = refine(result, price, prune=False)
    procs, sizes = list(result.procs), list(result.sizes)
    default, default_s = ompi_default_times(opts, collective, procs, sizes, price, result)
    kept = np.zeros((len(procs), len(sizes)), bool)
    selection = result.selection
    if default:
        # where no rule is written han runs under the deployed configuration: that is the default to beat
        deployed_s = default_s if han_config is None or not han_config.changed else ompi_default_times(
            opts, collective, procs, sizes, price, result, han_config.apply)[1]
        selection, kept = keep_default(result, deployed_s, args.min_gain, source)
    strategy_text = ""
    strategy, pick = (getattr(args, "strategies", None) or {}).get(collective.value, (None, None)) \
        if library == "ompi" else (None, None)
    if strategy is not None:
        from commcost.io.platform_file import load_platform
        from commcost.workflows.evaluate import other_regime
        from commcost.workflows.pricing import load_mapping

        platform, spec = load_platform(platform_path)
        strategy.unvouched = other_regime(strategy, procs, lambda nprocs: load_mapping(opts, platform, spec, nprocs))
        selection, kept, strategy_text = _as_cross_validated(result, selection, kept, strategy, pick, source)
    chosen = picks_or_default(result, kept) if strategy is None or strategy.chosen != "constant" else \
        [[None if p in strategy.unvouched else pick(p, n) for n in sizes] for p in procs]
    title = f"{collective.value} ({library}): best algorithm by {model}"
    margin, runner_up = margins(result.time_s, [c.algorithm.key for c in result.choices])
    region = regions(procs, sizes, calibration["procs"], calibration["sizes"],
                     calibration["measured"].get(collective.value, ()))
    default_title = "Open MPI's default (han on several nodes, else tuned's fixed decision)"
    png = plot_map(args.out / f"{collective.value}-{library}-map.png", procs, sizes, chosen, title,
                   size_title=collective.size_meaning, default=default or None, default_title=default_title,
                   regions=region)
    text = render_rules(selection, title) + strategy_text
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
    if han_config is not None:
        text += "\n  " + han_config_line(han_config, args.min_gain)
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
            "margin_under_5pct": int((finite < 0.05).sum()), "grid": points,
            "strategy": None if strategy is None else strategy.to_dict(),
            "han_config": None if han_config is None else {
                "values": han_config.values, "defaults": han_config.defaults, "changed": han_config.changed,
                "geomean_s": finite_or_none(han_config.geomean_s),
                "default_geomean_s": finite_or_none(han_config.default_geomean_s)}}
    view = {"heading": f"{collective.value} ({library})", "title": title, "size_title": collective.size_meaning,
            "procs": procs, "sizes": sizes, "chosen": chosen, "rules_text": text, "default": default or None,
            "default_title": default_title, "regions": region, "penalties": penalty, "map_png": png,
            "penalty_caption": f"{default_title} against the rules' picks, both priced by {model}"}
    return selection, text, info, view, han_config


def _as_cross_validated(result, selection, kept, strategy, pick, source: str):
    """The selection as the cross-validated way of choosing says (:mod:`commcost.selection.strategies`): no
    rule at all where the library's default won, the best constant algorithm everywhere where it did, the
    model's picks otherwise; returns (selection, the [p, m] mask of points with no rule, a line for the
    report)."""
    from commcost.workflows.evaluate import strategy_line
    from commcost.selection.decision import compress
    from commcost.selection.select import picks_or_default

    procs, sizes = list(result.procs), list(result.sizes)
    coll, library = result.selection.collective, result.selection.library
    line = "\n  " + strategy_line(strategy)
    if strategy.chosen == "default":
        kept = np.ones((len(procs), len(sizes)), bool)
        return (compress(coll, library, procs, sizes, picks_or_default(result, kept), source), kept,
                line + ": no rule written (nothing beat Open MPI's default in cross-validation)")
    elsewhere = np.array([p in strategy.unvouched for p in procs])  # rows where the default is kept instead
    if strategy.chosen == "constant":
        constant = pick(procs[0], sizes[0])
        rows = [[None if far else constant for _ in sizes] for far in elsewhere]
        return (compress(coll, library, procs, sizes, rows, source), np.repeat(elsewhere[:, None], len(sizes), 1),
                line + f": {constant.label} everywhere" + (" else" if elsewhere.any() else ""))
    if strategy.chosen == "anchored":
        line += " (the rules are the model's: anchoring needs measured times at the rules' own sizes)"
    if strategy.beyond == "default" and elsewhere.any():
        kept = kept | elsewhere[:, None]
        selection = compress(coll, library, procs, sizes, picks_or_default(result, kept), source)
    return selection, kept, line


def cross_validated_strategies(args, collectives, platform, rows, whole=None) -> dict:
    """Per collective, the way of choosing forward cross-validation over the measured P keeps (model,
    anchored, best constant or Open MPI's default) and its pick function
    (:func:`commcost.workflows.evaluate.strategy_for`), the ranks placed in blocks of what the rows ran;
    ``whole``: the fit of every row, already made."""
    from collections import Counter

    from commcost.workflows.evaluate import RowFits, most_common, strategy_for, strategy_line
    from commcost.platform import Mapping

    out = {}
    args.row_terms = {}  # collective -> (statistic, element bytes) of its rows
    fits = RowFits(rows, platform, "hockney", {None: whole} if whole is not None else None,  # shared folds
                   barrier=getattr(args, "barrier_skew", None))
    for collective in collectives:
        mine = [r for r in rows if r.collective == collective.value]
        ppn = {p: Counter(r.ppn or p for r in mine if r.nprocs == p).most_common(1)[0][0]
               for p in {r.nprocs for r in mine}}

        def mapping_of(nprocs: int, ppn=ppn) -> Mapping:
            return Mapping.sequential(platform, nprocs, min(ppn.get(nprocs, args.ppn), nprocs))
        statistic = most_common(rows, collective, "rank_statistic", "max")
        # the rules priced as the rows were measured and cross-validation scored them
        args.row_terms[collective.value] = (statistic, most_common(rows, collective, "element_size", 1))
        try:
            strategy, ways = strategy_for(args.from_measurements, collective, "ompi", "hockney", platform, mapping_of,
                                          0, statistic, fits=fits)
        except InputError:  # no two forced algorithms measured at one point: nothing to cross-validate
            continue
        if strategy is not None:
            out[collective.value] = (strategy, ways.get(strategy.chosen))
            print(f"  {collective.value}: {strategy_line(strategy)}", flush=True)
        print(f"  {collective.value}: rules priced as the rows were measured: the {statistic} over ranks, "
              f"{args.row_terms[collective.value][1]}-byte elements", flush=True)
    return out


def han_decision_values(args) -> dict[str, list[int]]:
    """The values of han's global tunables to try (``--han-segsizes``, ``--han-modules``); {} keeps han's
    defaults."""
    from commcost.workflows.grid import parse_points

    out: dict[str, list[int]] = {}
    text = getattr(args, "han_segsizes", "") or ""
    if text.strip():
        out["segsize"] = parse_points(text, "--han-segsizes", 1, sizes=True)
    modules = getattr(args, "han_modules", "default")
    if modules in ("all", "adapt"):
        out["up"] = [0, 1]
    if modules == "all":
        out["low"] = [0, 1]
    return out


def han_config_line(config, min_gain: float) -> str:
    """One line saying which han configuration the rules deploy, and why."""
    from commcost.collectives.ompi_han import LOW_MODULES, UP_MODULES

    def show(key: str, value: int) -> str:
        if key == "up":
            return f"up {UP_MODULES[value]}"
        if key == "low":
            return f"low {LOW_MODULES[value]}"
        return f"{key} {value}"

    values = ", ".join(show(k, v) for k, v in sorted(config.values.items()))
    if not config.changed:
        return (f"coll/han keeps its defaults ({values}): no other configuration priced is faster by "
                f"{min_gain:.0%} (geometric mean) where it changes the best time")
    gain = config.default_geomean_s / config.geomean_s - 1.0
    return (f"coll/han configured: {values} (mca-params.conf); geometric mean of the best times "
            f"{gain:.1%} below han's defaults")
