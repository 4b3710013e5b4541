"""Fits of issue 7's calibration: gamma(m, op) tables from the local reductions, and a scale per algorithm.

* :func:`reduction_tables`: the ``reduction`` rows (``MPI_Reduce_local``
  per operation and datatype) become ``[reduction.<op>_<type>]`` tables
  (:mod:`commcost.models.reduction`): gamma(m) = T(m) - T(0), the call's own
  overhead (Python and mpi4py, absent from a C library's collective)
  measured at m = 0 taken off, clipped at 0, then projected onto
  non-decreasing sequences (:func:`isotonic`) when noise breaks the order;
  the points moved are reported.
* :func:`fit_scale`: paper 004 section 5.2's per-algorithm calibration
  for any collective: T_measured(P, n) ~= a + b T_model(P, n), where
  T_model is commcost's price of the algorithm's schedule (built and
  priced by :func:`one_node_pricer`) under the
  point-to-point parameters of the same run, fitted with a Huber loss on
  relative residuals (scipy's ``least_squares``), so that one disturbed
  point (a shared machine) does not pull the line.
* :func:`fit_algorithms`: :func:`fit_scale` for every measured (collective,
  algorithm) of the ``collective`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from commcost.errors import InputError

HUBER_SCALE = 0.05  # relative residual where the Huber loss turns from quadratic to linear (5%)


def isotonic(values: Sequence[float]) -> np.ndarray:
    """The closest non-decreasing sequence in least squares (pool adjacent violators).

    Formula: minimize sum_i (y_i - x_i)^2 subject to y_1 <= y_2 <= ...; each
    run of violators is replaced by its mean (Barlow et al. 1972, the PAVA).
    """
    blocks: list[list[float]] = []  # [sum, count]
    for v in np.asarray(values, dtype=np.float64):
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    return np.concatenate([np.full(int(c), s / c) for s, c in blocks]) if blocks else np.zeros(0)


def reduction_tables(columns: dict[str, np.ndarray]) -> tuple[dict[str, dict[str, list[float]]], dict[str, Any]]:
    """``[reduction.<op>_<type>]`` tables from the ``reduction`` rows, and a quality report per table.

    Per operation (the rows' ``algorithm``, e.g. ``sum_double``): sizes m
    and times (the fit statistic of :func:`commcost.io.measurements.fit_times`);
    gamma(m) = max(T(m) - T(0), 0) when m = 0 was measured (the call's
    overhead), then :func:`isotonic`. The report gives the overhead, the
    points and, when the projection moved any, ``isotonic_changed``: the
    sizes with their times before and after.
    """
    bench = np.asarray(columns["benchmark"]).astype(str)
    rows = bench == "reduction"
    if not rows.any():
        raise InputError("no reduction rows; run the reduction benchmark (calibrate --benchmarks reduction)")
    ops = np.asarray(columns["algorithm"]).astype(str)
    nbytes = np.asarray(columns["nbytes"], dtype=np.float64)
    times = np.asarray(columns["time_s_mean"], dtype=np.float64)
    tables, quality = {}, {}
    for op in sorted(set(ops[rows].tolist())):
        mine = rows & (ops == op)
        order = np.argsort(nbytes[mine], kind="stable")
        m, t = nbytes[mine][order], times[mine][order]
        m, first = np.unique(m, return_index=True)
        t = t[first]
        overhead = float(t[0]) if m[0] == 0 else 0.0
        raw = np.maximum(t - overhead, 0.0)
        raw[m == 0] = 0.0
        gamma = isotonic(raw)
        report: dict[str, Any] = {"points": int(len(m)), "call_overhead_s": overhead}
        moved = np.flatnonzero(~np.isclose(gamma, raw, rtol=1e-9, atol=1e-15))
        if moved.size:
            report["isotonic_changed"] = [{"m": int(m[i]), "time_s": float(raw[i]), "projected_s": float(gamma[i])}
                                          for i in moved]
        tables[op] = {"m": [int(v) for v in m], "time_s": [float(v) for v in gamma]}
        quality[op] = report
    return tables, quality


@dataclass(frozen=True)
class ScaleFit:
    """T_measured ~= a_s + b T_model for one algorithm, and how well it fits."""

    a_s: float
    b: float
    model_s: np.ndarray
    measured_s: np.ndarray
    points: list[tuple[int, int]] = field(default_factory=list)  # (nprocs, nbytes) per point

    @property
    def predicted_s(self) -> np.ndarray:
        """a + b T_model per point."""
        return self.a_s + self.b * self.model_s

    @property
    def mu(self) -> np.ndarray:
        """Proportional error max(measured, predicted) / min(...) per point (paper 000 section 6); inf if
        a prediction is not positive."""
        p, t = self.predicted_s, self.measured_s
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.maximum(p, t) / np.minimum(p, t)
        return np.where((p > 0) & (t > 0), out, np.inf)

    def report(self) -> dict[str, Any]:
        """Plain data for ``[meta.quality]``: points, mu mean and max, and the unscaled model's mu mean."""
        with np.errstate(divide="ignore", invalid="ignore"):
            raw = np.maximum(self.model_s, self.measured_s) / np.minimum(self.model_s, self.measured_s)
        return {"points": int(len(self.measured_s)), "mu_mean": float(np.mean(self.mu)),
                "mu_max": float(np.max(self.mu)), "unscaled_mu_mean": float(np.mean(raw))}


def fit_scale(model_s: Sequence[float], measured_s: Sequence[float], *, f_scale: float = HUBER_SCALE,
              points: list[tuple[int, int]] | None = None) -> ScaleFit:
    """Fit T_measured ~= a + b T_model with a Huber loss on relative residuals.

    Formula: minimize sum_i rho((a + b x_i - t_i) / t_i) over a and b > 0,
    rho the Huber loss with its corner at ``f_scale`` (scipy.optimize.
    least_squares, loss="huber"); relative residuals because times span
    decades and noise is multiplicative. One point gives a = 0,
    b = t / x. Source: paper 004 section 5.2 (per-algorithm parameters of
    the broadcast), here as a linear correction of any model's price.
    """
    from scipy.optimize import least_squares

    x = np.asarray(model_s, dtype=np.float64)
    t = np.asarray(measured_s, dtype=np.float64)
    if x.shape != t.shape or x.ndim != 1 or len(x) == 0:
        raise InputError(f"expected as many model times as measured times (>= 1), got {x.size} and {t.size}")
    if not (np.all(np.isfinite(x)) and np.all(x > 0) and np.all(np.isfinite(t)) and np.all(t > 0)):
        raise InputError("expected positive finite times to fit T = a + b T_model")
    if len(x) == 1 or np.ptp(x) <= 1e-12 * np.max(x):
        b = float(np.median(t / x))
        return ScaleFit(0.0, b, x, t, points or [])
    b0 = float(np.median(t / x))

    def residuals(v: np.ndarray) -> np.ndarray:
        return (v[0] + v[1] * x - t) / t

    res = least_squares(residuals, x0=[0.0, b0], loss="huber", f_scale=f_scale,
                        bounds=([-np.inf, 0.0], [np.inf, np.inf]), x_scale=[float(np.median(t)), b0])
    return ScaleFit(float(res.x[0]), float(res.x[1]), x, t, points or [])


def fit_algorithms(columns: dict[str, np.ndarray], price: Callable[[str, str, int, list[int]], np.ndarray]
                   ) -> tuple[dict[str, dict[str, ScaleFit]], dict[str, str]]:
    """:func:`fit_scale` for every (collective, algorithm) of the ``collective`` rows.

    ``price(collective, algorithm, nprocs, sizes)`` gives T_model at each
    size (e.g. :func:`one_node_pricer` under the run's fitted Hockney or
    tau-Lop parameters). Returns the fits by collective
    and algorithm, and the ones that could not be fitted with the reason.
    """
    bench = np.asarray(columns["benchmark"]).astype(str)
    rows = bench == "collective"
    colls = np.asarray(columns["collective"]).astype(str)
    names = np.asarray(columns["algorithm"]).astype(str)
    procs = np.asarray(columns["nprocs"], dtype=np.int64)
    nbytes = np.asarray(columns["nbytes"], dtype=np.int64)
    times = np.asarray(columns["time_s_mean"], dtype=np.float64)
    fits: dict[str, dict[str, ScaleFit]] = {}
    failed: dict[str, str] = {}
    for coll, name in sorted({(c, a) for c, a in zip(colls[rows].tolist(), names[rows].tolist())}):
        mine = rows & (colls == coll) & (names == name)
        model, measured, where = [], [], []
        try:
            for p in sorted(set(procs[mine].tolist())):
                at = mine & (procs == p)
                sizes = nbytes[at].tolist()
                model += list(np.asarray(price(coll, name, int(p), sizes), dtype=np.float64))
                measured += times[at].tolist()
                where += [(int(p), int(m)) for m in sizes]
            fits.setdefault(coll, {})[name] = fit_scale(model, measured, points=where)
        except InputError as exc:
            failed[f"{coll}.{name}"] = exc.message
    return fits, failed


def one_node_pricer(model_name: str, sections: dict[str, Any], channel: str = "shm"
                    ) -> Callable[[str, str, int, list[int]], np.ndarray]:
    """T_model of an Open MPI algorithm on P ranks of this one node, under a calibration's fitted sections.

    ``sections`` is the plain data a calibration writes (``{"hockney":
    {"shm": {...}}, "reduction": {...}}``); the platform is one node whose
    ranks talk through ``channel`` (shared memory: two ``shm`` transfers,
    paper 000 eq. 1), ranks placed in order, root 0; reductions priced with
    gamma of ``sum_double`` when the sections have it (the collective
    benchmark reduces doubles with MPI_SUM). Each size's schedule is built
    (:func:`commcost.collectives.build`, algorithm parameters at Open MPI's
    defaults) and priced with :meth:`commcost.models.Model.total_time_s`;
    an algorithm Open MPI does not run on P ranks (two_proc) is an error.
    """
    from commcost.collectives import Case, Collective, build, find
    from commcost.models import MODELS, PlacedSchedule
    from commcost.models.reduction import reduction_laws
    from commcost.platform import Mapping, Platform
    from commcost.platform.platform import Channel, Node, NodeType

    if model_name not in sections:
        raise InputError(f"no {model_name} parameters fitted; the per-algorithm fit needs them")
    body = sections[model_name]
    if model_name == "taulop":
        from commcost.models.taulop.params import TauLopParams

        params = TauLopParams.from_dict(body)
    else:
        params = MODELS[model_name].PARAMS.from_dict({channel: body[channel]} if channel in body else body)
    model = MODELS[model_name](params)
    reductions = sections.get("reduction") or {}
    if "sum_double" in reductions:
        model.with_reduction(reduction_laws({"sum_double": reductions["sum_double"]})["sum_double"])
    platforms: dict[int, tuple[Any, Any]] = {}

    def price(collective: str, algorithm: str, nprocs: int, sizes: list[int]) -> np.ndarray:
        if nprocs not in platforms:
            kind = NodeType("calibrated", max(nprocs, 1))
            platform = Platform("this-node", (kind,), (Node("n0", kind),),
                                (Channel(channel, 0, "node", (channel, channel)),))
            platforms[nprocs] = (platform, Mapping.sequential(platform, nprocs, nprocs))
        platform, mapping = platforms[nprocs]
        algo = find(Collective(collective), f"ompi.{algorithm}")
        if not algo.supports(nprocs):
            raise InputError(f"Open MPI does not run {collective} {algorithm} on {nprocs} ranks")
        values = algo.resolve_params({})
        return np.array([model.total_time_s(PlacedSchedule.of(
            build(algo, Case(algo.collective, nprocs, int(m), 0), values).schedule, platform, mapping))
            for m in sizes], dtype=np.float64)
    return price
