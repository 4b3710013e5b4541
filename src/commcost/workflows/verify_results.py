"""verify's results: per point the measured and predicted times and gains, the verdict, and their summary.

What for: after the launches, :func:`commcost.workflows.verify.verify` reads
``verify.csv`` back with :func:`results`: a side's time is the median of its
launches' medians, and a point's verdict needs a gain beyond both CIs and
every launch of the faster side ahead of every launch of the other
(:func:`verdict`); beside it the gain the model predicts where ``RULES_DIR``
holds the ``params.toml`` and ``platform.toml`` that tune wrote.
:func:`summary` gathers the points.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

from commcost.errors import InputError

LABELS = ("default", "rules")
# a gain whose distance from 1 is within the two points' 95% CIs (relative) is "same"
NOISE_FLOOR = 0.02


def _pricer(rules_dir: Path, collective, nprocs: int):
    """A pricer under the parameters and platform tune wrote into ``rules_dir`` (None without them), with the
    platform's nodes of the mapping for ``nprocs`` ranks."""
    from commcost.workflows.select import make_pricer
    from commcost.workflows.pricing import selection_model
    from commcost.io.params_file import load_params

    params, platform = rules_dir / "params.toml", rules_dir / "platform.toml"
    if not (params.is_file() and platform.is_file()):
        return None
    model, _ = selection_model(load_params(params))
    if model is None:
        return None
    opts = SimpleNamespace(params=params, platform=platform, model=model, library="ompi",
                           collective=collective.value, ppn=None, mapping=None, root=0)
    return make_pricer(opts, [nprocs]), model


def _predicted(price, choice, nprocs: int, nbytes: int) -> float | None:
    if price is None or choice is None:
        return None
    try:
        value = float(price(choice, nprocs, [nbytes], None)[0])
    except InputError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def verdict(entry: dict) -> str:
    """"faster", "slower", "same" or "not measured" for one point (``entry`` as :func:`results` fills it).

    A gain must lie beyond both sides' 95% CIs and :data:`NOISE_FLOOR`; and where a side ran in several
    launches, every launch of the faster side must beat every launch of the other (their ranges apart), as
    one launch's CI says nothing of the next's placement."""
    gain = entry.get("measured_gain")
    if gain is None:
        return "not measured"
    noise = sum(entry.get(f"{label}_ci95_rel") or 0.0 for label in LABELS) + NOISE_FLOOR
    if abs(gain - 1.0) <= noise:
        return "same"
    default, rules = entry.get("default_launches_s") or [], entry.get("rules_launches_s") or []
    if len(default) > 1 or len(rules) > 1:
        apart = min(default) > max(rules) if gain > 1 else max(default) < min(rules)
        if not apart:
            return "same"
    return "faster" if gain > 1 else "slower"


def _side(label: str, runs: list) -> dict:
    """One side of a point over its launches: the median of the launches' medians, the largest CI, whether
    every launch converged, each launch's time, and their spread (largest / smallest - 1; 0 for one)."""
    import statistics

    times = [r.fit_time_s for r in sorted(runs, key=lambda r: r.run)]
    times = [t for t in times if t and t > 0]
    cis = [r.ci95_rel for r in runs if r.ci95_rel is not None]
    return {f"{label}_s": statistics.median(times) if times else None,
            f"{label}_ci95_rel": max(cis) if cis else None,
            f"{label}_converged": all(bool(r.converged) for r in runs) if runs else None,
            f"{label}_launches_s": times,
            f"{label}_launch_spread": max(times) / min(times) - 1.0 if len(times) > 1 else 0.0}


def results(rules_dir: Path, rules, nprocs: int, plan: dict, csv_path: Path) -> list[dict]:
    """One entry per planned point with what runs either way, the measured and predicted times and gains."""
    from commcost.collectives.ompi_han import tuned_rules_inside
    from commcost.io.deployed_rules import open_mpi_default
    from commcost.io.measurements import read_measurements

    rows: dict[tuple, list] = {}
    for row in read_measurements(csv_path) if csv_path.exists() else []:
        if row.nprocs == nprocs and row.algorithm in LABELS and row.reps:
            rows.setdefault((row.algorithm, row.collective, row.nbytes), []).append(row)
    nodes = {row.nnodes for runs in rows.values() for row in runs if row.nnodes}
    out = []
    for collective, sizes in plan.items():
        pricing = _pricer(rules_dir, collective, nprocs)
        price, model = pricing if pricing else (None, None)
        for nbytes in sizes:
            measured = {label: rows.get((label, collective.value, nbytes), []) for label in LABELS}
            nnodes = next((m.nnodes for runs in measured.values() for m in runs if m.nnodes), None) or \
                (max(nodes) if nodes else 1)
            default = open_mpi_default(collective, nprocs, nbytes, nnodes)
            tuned = rules.runs(collective, nprocs, nbytes, nnodes)
            entry = {"collective": collective.value, "nprocs": nprocs, "nnodes": nnodes, "nbytes": nbytes,
                     "default_runs": default.label, "rules_run": tuned.label}
            for label, runs in measured.items():
                entry.update(_side(label, runs))
            entry["measured_gain"] = (entry["default_s"] / entry["rules_s"]
                                      if entry["default_s"] and entry["rules_s"] else None)
            entry["launch_spread"] = max(entry[f"{label}_launch_spread"] for label in LABELS)
            same_algorithm = default.label.split(": ", 1)[-1] == tuned.label.split(": ", 1)[-1]
            entry["same_algorithm"] = same_algorithm
            entry["verdict"] = "same algorithm" if same_algorithm else verdict(entry)
            with tuned_rules_inside(rules.tuned_pick):  # han's inner calls as the deployed files make them
                with_rules = _predicted(price, tuned.choice, nprocs, nbytes)
            predicted = {"default": _predicted(price, default.choice, nprocs, nbytes), "rules": with_rules}
            entry["predicted_default_s"], entry["predicted_rules_s"] = predicted["default"], predicted["rules"]
            entry["predicted_gain"] = 1.0 if same_algorithm else (
                predicted["default"] / predicted["rules"] if predicted["default"] and predicted["rules"] else None)
            entry["model"] = model
            out.append(entry)
    return out


def summary(points: list[dict]) -> dict:
    """Over the points where the rules change the algorithm: geometric-mean measured and predicted gains,
    and the points made slower beyond noise; over the others (same algorithm both ways), the largest
    measured difference, which is the run-to-run noise of this machine."""
    changed = [p for p in points if not p["same_algorithm"]]
    measured = [p["measured_gain"] for p in changed if p["measured_gain"]]
    predicted = [p["predicted_gain"] for p in changed if p["measured_gain"] and p["predicted_gain"]]
    unchanged = [p["measured_gain"] for p in points if p["same_algorithm"] and p["measured_gain"]]

    def geomean(values):
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

    return {"points": len(points), "changed": len(changed), "measured": len(measured),
            "measured_gain_geomean": geomean(measured), "predicted_gain_geomean": geomean(predicted),
            "noise": max((abs(math.log(g)) for g in unchanged), default=None) and
            math.exp(max(abs(math.log(g)) for g in unchanged)) - 1.0,
            "launch_spread": max((p.get("launch_spread") or 0.0 for p in points), default=None),
            "slower": [f"{p['collective']} {p['nbytes']} B" for p in changed if p["verdict"] == "slower"],
            "faster": sum(p["verdict"] == "faster" for p in changed),
            "same": sum(p["verdict"] == "same" for p in changed)}
