"""Speed of fitting Hockney to measured collective times (inverse calibration, issue 13).

Run: ``python bench/bench_fit_collectives.py``. Prints figures; asserts nothing.

Data: the Peak extract in tests/data/peak-coltune (OSU sweeps of every Open
MPI bcast and allreduce algorithm, 42 ranks per node), training rows of at
most 64 ranks. Two fits of the same points in the same run:

* commcost's (:func:`commcost.calibration.fit_from_collectives.fit_model`):
  the schedules priced 1 + 2C times per outer step, the linearized problem
  solved in between;
* the baseline: scipy's ``least_squares`` on the priced model itself, its
  Jacobian by finite differences (every point priced 1 + 2C times per
  iteration).

Both print their time, pricings of every point, parameters and fit figures.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from commcost.calibration.fit_from_collectives import F_SCALE, LOSS, collective_points, fit_model, pricer
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
    price = pricer("hockney", placed, channels)
    t0 = time.perf_counter()
    fit = fit_model("hockney", points, channels, price)
    t_fit = time.perf_counter() - t0
    figures = fit.summary()

    def loss(theta: np.ndarray) -> float:  # the fit's objective: soft_l1 on log residuals, f_scale F_SCALE
        r = np.log(price(theta) / np.array([p.time_s for p in points])) / F_SCALE
        return float(np.sum(2 * (np.sqrt(1 + r * r) - 1)))
    print(f"commcost fit: {t_fit:.2f} s, {fit.steps} steps, {fit.pricings} pricings of every point; loss "
          f"{loss(fit.theta):.1f}; mu {figures['mu']:.3f}, median |error| {figures['median_abs_pct']:.0f}%")
    for c, values in fit.params.items():
        print(f"  {c}: alpha {values['alpha_s'] * 1e6:.4f} us, beta {values['beta_s_per_byte'] * 1e9:.5f} ns/B")

    y = np.array([p.time_s for p in points])
    calls = [0]

    def residual(theta: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return np.log(np.maximum(price(theta), 1e-300) / y)

    start = np.array([1e-6, 1e-10] * len(channels))
    start *= np.exp(np.median(np.log(y / price(start))))
    t0 = time.perf_counter()
    base = least_squares(residual, start, bounds=(0, np.inf), loss=LOSS, f_scale=F_SCALE, x_scale=start)
    t_base = time.perf_counter() - t0
    base_mu = float(np.exp(np.mean(-residual(base.x))))
    print(f"baseline (least_squares on the priced model, finite-difference Jacobian): {t_base:.2f} s, "
          f"{calls[0]} pricings of every point; loss {loss(base.x):.1f}; mu {base_mu:.3f}")
    for i, c in enumerate(channels):
        print(f"  {c}: alpha {base.x[2 * i] * 1e6:.4f} us, beta {base.x[2 * i + 1] * 1e9:.5f} ns/B")
    print(f"speed-up of commcost's fit over the baseline: {t_base / t_fit:.1f}x")


if __name__ == "__main__":
    main()
