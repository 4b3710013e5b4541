"""Speed of fitting Hockney and tau-Lop to measured collective times (inverse calibration, issue 13).

Run: ``python bench/bench_fit_collectives.py``. Prints figures; asserts nothing.

Data: the Peak extract in tests/data/peak-coltune (OSU sweeps of every Open
MPI bcast and allreduce algorithm, 42 ranks per node), training rows of at
most 64 ranks. Two fits of the same points in the same run:

* commcost's (:func:`commcost.calibration.fit_from_collectives.fit_model`):
  the schedules priced 1 + 2C times per outer step, the linearized problem
  solved in between;
* the same fit with each finite difference priced alone (as before issue
  37's walks of many parameter sets at once): the same parameters, slower;
* the baseline: scipy's ``least_squares`` on the priced model itself, its
  Jacobian by finite differences (every point priced 1 + 2C times per
  iteration).

Both print their time, pricings of every point, parameters and fit figures,
for Hockney (alpha, beta per channel) and for tau-Lop (o, L, G per table).

``python bench/bench_fit_collectives.py --synthetic [MAX_P [MODEL ...]]``: a sweep priced
from known Hockney, LogGPH and tau-Lop parameters (allreduce ring, recursive
doubling and Rabenseifner, allgather ring, recursive doubling and neighbor
exchange, reduce_scatter ring; 64 ranks up to MAX_P, default 1,024, one and
four per node on examples/cluster; 64 KiB to 8 MiB whole buffers: 280
points at MAX_P 2,048),
fitted three ways in the same run: schedules built folded by one node's
ranks where they are invariant under that shift (``build_folded``, as
``commcost fit`` holds them), built whole and folded at their second
pricing (``commcost.models.symmetry.placed_fold``), and built whole and
priced whole (the baseline), each with the time to build, the fit's time,
the peak memory (each fit runs in a fresh process: its peak RSS, building
included; the times are taken without tracemalloc, which slowed the fit
2x) and how far it lands from the generating parameters: per parameter,
and along the directions the points identify (the relative error with its
components along the relative Jacobian's weak singular vectors removed:
tau-Lop's o and L of a channel are only identified together).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from commcost.calibration.fit_from_collectives import (F_SCALE, LOSS, MODEL_PARAMS, collective_points,
                                                       fit_model, fitted_units, pricer)
from commcost.calibration.fit_layout import STARTS
from commcost.io.coltune_import import read_coltune
from commcost.io.measurements import MeasurementStore, read_measurements
from commcost.io.platform_file import load_platform

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "m.csv"
        MeasurementStore(csv).extend(read_coltune(ROOT / "tests" / "data" / "peak-coltune"))
        rows = read_measurements(csv)
    platform, _ = load_platform(ROOT / "examples" / "peak" / "platform.toml")
    t0 = time.perf_counter()
    points, placed, channels = collective_points(rows, platform, max_procs=64)
    t_build = time.perf_counter() - t0
    print(f"{len(rows)} measured rows -> {len(points)} training points (P <= 64; median of runs), "
          f"schedules built and placed in {t_build:.2f} s; channels {channels}")
    for model in ("hockney", "taulop"):
        compare(model, points, placed, fitted_units(model, platform, channels))


def compare(model: str, points, placed, units) -> None:
    """commcost's fit of ``model`` and the baseline on the same points, with their figures."""
    price = pricer(model, placed, units)
    warm = np.tile(STARTS[model], len(units))
    price(warm), price(warm)  # compiled loops loaded, schedules' structure and folds found: not in either timing
    t0 = time.perf_counter()
    fit = fit_model(model, points, units, price)
    t_fit = time.perf_counter() - t0
    figures = fit.summary()
    y = np.array([p.time_s for p in points])

    def loss(theta: np.ndarray) -> float:  # the fit's objective: soft_l1 on log residuals, f_scale F_SCALE
        r = np.log(price(theta) / y) / F_SCALE
        return float(np.sum(2 * (np.sqrt(1 + r * r) - 1)))

    def show(theta: np.ndarray) -> str:
        per = len(MODEL_PARAMS[model])
        return "; ".join(f"{u}: " + ", ".join(
            f"{name} {theta[per * i + q] * (1e9 if name.endswith('per_byte') else 1e6):.4g}"
            f"{' ns/B' if name.endswith('per_byte') else ' us'}" for q, name in enumerate(MODEL_PARAMS[model]))
            for i, u in enumerate(units))
    print(f"{model}, commcost fit: {t_fit:.2f} s, {fit.steps} steps, {fit.pricings} pricings of every point; "
          f"loss {loss(fit.theta):.1f}; mu {figures['mu']:.3f}, median |error| {figures['median_abs_pct']:.0f}%")
    print(f"  {show(fit.theta)}")

    def one_set_at_a_time(theta: np.ndarray, rows=None) -> np.ndarray:  # the pricer without its columns
        return price(theta, rows)
    one_set_at_a_time.touches = price.touches
    t0 = time.perf_counter()
    alone = fit_model(model, points, units, one_set_at_a_time)
    t_alone = time.perf_counter() - t0
    same = np.array_equal(alone.theta, fit.theta)
    print(f"{model}, the same fit with each finite difference priced alone (before issue 37): {t_alone:.2f} s, "
          f"{t_alone / t_fit:.2f}x commcost's; parameters {'identical' if same else 'DIFFERENT'}")
    calls = [0]

    def residual(theta: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return np.log(np.maximum(price(theta), 1e-300) / y)

    start = np.tile(STARTS[model], len(units))
    start *= np.exp(np.median(np.log(y / price(start))))
    t0 = time.perf_counter()
    base = least_squares(residual, start, bounds=(0, np.inf), loss=LOSS, f_scale=F_SCALE, x_scale=start)
    t_base = time.perf_counter() - t0
    base_mu = float(np.exp(np.mean(-residual(base.x))))
    print(f"{model}, baseline (least_squares on the priced model, finite-difference Jacobian): {t_base:.2f} s, "
          f"{calls[0]} pricings of every point; loss {loss(base.x):.1f}; mu {base_mu:.3f}")
    print(f"  {show(base.x)}")
    print(f"{model}: speed-up of commcost's fit over the baseline: {t_base / t_fit:.1f}x")


SYNTHETIC_TRUTH = {"taulop": {"shm": {"o_s": 0.3e-6, "L_s": 0.5e-6, "G_s_per_byte": 0.15e-9},
                              "ib": {"o_s": 1.0e-6, "L_s": 2.0e-6, "G_s_per_byte": 0.4e-9}},
                   "hockney": {"shm": {"alpha_s": 0.8e-6, "beta_s_per_byte": 0.15e-9},
                               "ib": {"alpha_s": 2.5e-6, "beta_s_per_byte": 0.4e-9}},
                   "loggph": {"shm": {"o_s": 0.4e-6, "L_s": 0.3e-6, "g_s": 0.2e-6, "G_s_per_byte": 0.15e-9},
                              "ib": {"o_s": 1.0e-6, "L_s": 1.5e-6, "g_s": 0.5e-6, "G_s_per_byte": 0.4e-9}}}


def _synthetic_labels(max_procs: int) -> list:
    from commcost.collectives import Collective, find

    cases = [("allreduce", "ring"), ("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"),
             ("allgather", "ring"), ("allgather", "recursive_doubling"), ("allgather", "neighbor"),
             ("reduce_scatter", "ring")]
    labels = []
    for collective, algorithm in cases:
        kind = Collective(collective)
        for nprocs in (p for p in (64, 256, 1024, 2048) if p <= max_procs):
            for ppn in (1, 4):
                for whole in (65536, 512 << 10, 1 << 20, 4 << 20, 8 << 20):
                    nbytes = whole // nprocs if kind in (Collective.ALLGATHER, Collective.REDUCE_SCATTER) else whole
                    labels.append((kind, find(kind, algorithm), nprocs, ppn, nbytes))
    return labels


def _identified_error(price, truth: np.ndarray, fitted: np.ndarray) -> tuple[float, int]:
    """How far the fit lands from the truth along the directions the points identify: the relative error
    theta_fit / theta_true - 1 with its components along the weak right singular vectors of the relative
    Jacobian J_ik = (d T_i / d theta_k) theta_k / T_i removed (singular value under ``CONFOUNDED`` times the
    largest, as the fit's own report of confounded groups), its largest entry; and how many directions
    were removed."""
    from commcost.calibration.fit_summary import CONFOUNDED

    base = price(truth)
    J = np.empty((len(base), len(truth)))
    for k in range(len(truth)):
        up = truth.copy()
        up[k] *= 1.01
        J[:, k] = (price(up) - base) / (0.01 * base)
    _, sv, vt = np.linalg.svd(J, full_matrices=False)
    weak = vt[sv < CONFOUNDED * sv[0]]
    rel = fitted / truth - 1
    return float(np.max(np.abs(rel - weak.T @ (weak @ rel)))), len(weak)


def _synthetic_one(max_procs: int, model: str, variant: str) -> dict:
    """One fit of the synthetic sweep, in a fresh process (its peak RSS is this fit's): build, price from
    the truth, fit; times without tracemalloc."""
    import resource

    from commcost.calibration.fit_from_collectives import Point, parameter_layout
    from commcost.collectives import Case, build, build_folded
    from commcost.collectives.recorder import ScheduleTooLarge
    from commcost.models import PlacedSchedule, hockney, loggp
    from commcost.models.symmetry import fold_shift
    from commcost.platform import Mapping

    platform, _ = load_platform(ROOT / "examples" / "cluster" / "platform.toml")
    labels = _synthetic_labels(max_procs)
    folded_build, folded = {"built folded": (True, True), "folded at pricing": (False, True),
                            "whole (baseline)": (False, False)}[variant]
    if not folded:
        hockney.placed_fold = loggp.placed_fold = lambda placed, **_: None
    layout = parameter_layout(model, ["shm", "ib"], platform)
    truth = np.array([SYNTHETIC_TRUTH[model][unit][name] for unit, name in layout])
    started, placed = time.perf_counter(), []
    try:
        for kind, algorithm, nprocs, ppn, nbytes in labels:
            mapping = Mapping.sequential(platform, nprocs, ppn)
            got = build_folded(algorithm, Case(kind, nprocs, nbytes), fold_shift(mapping.node_of_rank)) \
                if folded_build else None
            where = None if got is None else PlacedSchedule.of_folded(got[0].schedule, got[1], nprocs, platform,
                                                                      mapping, model == "taulop")
            placed.append(where or PlacedSchedule.of(build(algorithm, Case(kind, nprocs, nbytes)).schedule,
                                                     platform, mapping))
    except ScheduleTooLarge as refused:
        return {"refused": str(refused)}
    built_s = time.perf_counter() - started
    price = pricer(model, placed, ["shm", "ib"])
    rows = [Point(k.value, a.name, p, n, t) for (k, a, p, _, n), t in zip(labels, price(truth))]
    t0 = time.perf_counter()
    fit = fit_model(model, rows, ["shm", "ib"], price, layout=layout)
    fit_s = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    worst, removed = _identified_error(price, truth, fit.theta)
    off = np.abs(fit.theta / truth - 1)
    return {"built_s": built_s, "held": sum(p.schedule.ntransmissions for p in placed), "fit_s": fit_s,
            "pricings": fit.pricings, "rss": rss, "identified": worst, "removed": removed,
            "within": int((off <= 0.05).sum()), "nparams": len(layout),
            "off": ", ".join(f"{n} of {u} {100 * o:.0f}%" for (u, n), o in zip(layout, off) if o > 0.05),
            "confounded": "; ".join(fit.confounded) or "none said",
            "price_error": float(np.max(np.abs(price(fit.theta) / price(truth) - 1)))}


def synthetic(max_procs: int, models: tuple[str, ...] = ("hockney", "loggph", "taulop")) -> None:
    """The synthetic sweep of the module docstring: each model fitted three ways in the same run, each fit
    in a fresh process (its peak RSS is the fit's memory, building included)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    labels = _synthetic_labels(max_procs)
    procs = sorted({label[2] for label in labels})
    print(f"synthetic sweep: {len(labels)} points, P = {procs}, 1 and 4 ranks per node on examples/cluster; "
          f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for model in models:
        for variant in ("built folded", "folded at pricing", "whole (baseline)"):
            with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
                got = pool.submit(_synthetic_one, max_procs, model, variant).result()
            name = variant
            if model == "taulop" and variant != "built folded":
                name = "whole, tau-Lop's own fold" if variant == "folded at pricing" else "whole (tau-Lop folds)"
            if "refused" in got:
                print(f"  {model:8s} {name:18s} not run: {got['refused']}", flush=True)
                continue
            print(f"  {model:8s} {name:18s} built {got['built_s']:5.1f} s ({got['held']:,} transmissions held), "
                  f"fit {got['fit_s']:6.1f} s, {got['pricings']} pricings, peak RSS {got['rss'] / 2 ** 20:7.1f} MiB; "
                  f"{got['within']} of {got['nparams']} parameters within 5% of the truth"
                  + (f" (off: {got['off']}; confounded: {got['confounded']})" if got["off"] else "")
                  + f"; along the {got['nparams'] - got['removed']} identified directions within "
                  f"{100 * got['identified']:.2f}%; every point's price within {100 * got['price_error']:.3f}%",
                  flush=True)


if __name__ == "__main__":
    import sys

    if "--synthetic" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--synthetic"]
        synthetic(int(rest[0]) if rest else 1024, *([tuple(rest[1:])] if len(rest) > 1 else []))
        raise SystemExit(0)
    main()
