"""Paper 004's parameters from measured experiments: gamma^c(P), Q(m) (section 5.1) and o, L per algorithm (5.2).

Inputs are a measurements table as numpy columns (the ``measurement_columns``
form: ``benchmark, channel, nprocs, nbytes, segsize, algorithm, time_s_mean``
...); this module knows nothing of files.

* :func:`gamma_and_q` reads NBFT rows (benchmark ``nbft``): the time
  T_NBFT^c(P, m) of one non-blocking flat tree of P ranks through channel c.
  gamma^c(P) = T_NBFT^c(P, m_s) / T_NBFT^c(2, m_s) (eq. 14), clipped into
  [1, P - 1] (eq. 7); Q(m) = T_NBFT^1(2, m) / T_NBFT^0(2, m) (eq. 15) at
  every size both channels measured, at least 1.
* :func:`fit_bcast_algorithms` reads broadcast + flat gather rows (benchmark
  ``bcast_gather``, collective ``bcast``, the algorithm's Open MPI name) and
  fits o^0, o^1, L^0, L^1 >= 0 per algorithm with the Huber loss, gamma and
  Q held known (eq. 16-19, :func:`commcost.closedform.ompi_bcast_fit.fit_design`),
  on relative residuals (each equation divided by its measured time).
  Rows measured on the shared-memory channel place every rank on one node;
  rows on the network channel (on one machine: TCP over loopback) place
  each rank on a node of its own, so each message is a network message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commcost.closedform.ompi_bcast_fit import FitLoss, experiment_coefficients, fit_design
from commcost.closedform.ompi_bcast_model import MODELLED
from commcost.closedform.ompi_bcast_params import DEFAULT_SEGSIZE, Paper004Params
from commcost.errors import InputError

NBFT = "nbft"
EXPERIMENT = "bcast_gather"


def _nbft_times(columns: dict[str, np.ndarray], channel: str) -> dict[tuple[int, int], float]:
    """(P, m) -> median of the measured T_NBFT through ``channel``."""
    rows = (columns["benchmark"] == NBFT) & (columns["channel"] == channel)
    cells: dict[tuple[int, int], list[float]] = {}
    for p, m, t in zip(columns["nprocs"][rows], columns["nbytes"][rows], columns["time_s_mean"][rows]):
        if t > 0:
            cells.setdefault((int(p), int(m)), []).append(float(t))
    return {k: float(np.median(v)) for k, v in cells.items()}


def _gamma(times: dict[tuple[int, int], float], segsize: int) -> tuple[tuple[float, ...], str]:
    """gamma(P) for P = 2.. from T_NBFT(P, m_s) / T_NBFT(2, m_s) (eq. 14), clipped to [1, P - 1] (eq. 7)."""
    if (2, segsize) not in times:
        return (1.0,), "default (no NBFT of 2 ranks at the segment size)"
    table = [1.0]
    p = 3
    while (p, segsize) in times:
        table.append(float(np.clip(times[(p, segsize)] / times[(2, segsize)], 1.0, p - 1)))
        p += 1
    return tuple(table), f"NBFT, P = 2..{p - 1}, m_s = {segsize} B (paper 004 eq. 14)"


def gamma_and_q(columns: dict[str, np.ndarray], *, shm: str = "shm", network: str = "tcp",
                segsize: int = DEFAULT_SEGSIZE) -> tuple[dict[str, Any], dict[str, Any]]:
    """gamma^0, gamma^1 and Q(m) from NBFT rows (paper 004 eq. 14-15), and where each came from.

    Returns (``{gamma0, gamma1, Q, Q_nbytes}`` as :class:`Paper004Params`
    takes them, a report). Without NBFT rows of a channel its gamma is
    ``(1,)`` (no slowdown); without NBFT rows of both channels at P = 2, Q
    is the ratio of the ping-pong times of the two channels at the segment
    size if both were measured there, else 1; the report says which.
    """
    t0, t1 = _nbft_times(columns, shm), _nbft_times(columns, network)
    gamma0, src0 = _gamma(t0, segsize)
    gamma1, src1 = _gamma(t1, segsize)
    both = sorted(m for (p, m) in t0 if p == 2 and (2, m) in t1)
    if both:
        q = [max(t1[(2, m)] / t0[(2, m)], 1.0) for m in both]
        values: dict[str, Any] = {"Q": q if len(q) > 1 else q[0], "Q_nbytes": both if len(q) > 1 else ()}
        q_src = f"NBFT of 2 ranks, {network} / {shm} (paper 004 eq. 15)"
    else:
        pp = (columns["benchmark"] == "pingpong") & (columns["nbytes"] == segsize)
        a = columns["time_s_mean"][pp & (columns["channel"] == shm)]
        b = columns["time_s_mean"][pp & (columns["channel"] == network)]
        if a.size and b.size:
            values = {"Q": max(float(np.median(b) / np.median(a)), 1.0), "Q_nbytes": ()}
            q_src = f"ping-pong at {segsize} B, {network} / {shm} (no NBFT rows)"
        else:
            values = {"Q": 1.0, "Q_nbytes": ()}
            q_src = "default 1 (neither NBFT nor ping-pong rows of both channels)"
    values.update(gamma0=gamma0, gamma1=gamma1)
    report = {"gamma0": src0, "gamma1": src1, "Q": q_src}
    return values, report


@dataclass(frozen=True)
class AlgorithmFit:
    """One algorithm's fitted (o^0, o^1, L^0, L^1) and how well they explain its experiments."""

    algorithm: str
    theta: tuple[float, float, float, float]
    nbytes: np.ndarray
    measured_s: np.ndarray
    predicted_s: np.ndarray
    rank: int

    @property
    def mu(self) -> np.ndarray:
        """Proportional error max(measured, predicted) / min(...) per experiment (paper 000 section 6)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.maximum(self.measured_s, self.predicted_s) / np.minimum(self.measured_s, self.predicted_s)

    def report(self) -> dict[str, Any]:
        """Parameters, residuals and proportional errors as plain data."""
        mu = self.mu
        return {"o0_s": self.theta[0], "o1_s": self.theta[1], "L0_s": self.theta[2], "L1_s": self.theta[3],
                "points": int(self.measured_s.size), "rank": self.rank,
                "mu_mean": float(np.mean(mu)), "mu_median": float(np.median(mu)), "mu_max": float(np.max(mu)),
                "residuals_s": (self.predicted_s - self.measured_s).tolist()}


def _design(columns: dict[str, np.ndarray], name: str, base: Paper004Params, shm: str) -> np.ndarray:
    """Rows lambda_1..4 of eq. 19 of one algorithm's experiments: one node on ``shm``, a node per rank otherwise."""
    sel = (columns["benchmark"] == EXPERIMENT) & (columns["collective"] == "bcast") & (columns["algorithm"] == name)
    seg = np.nan_to_num(columns["segsize"][sel].astype(np.float64), nan=base.ref_nbytes)
    return np.array([experiment_coefficients(name, int(p), m, s, int(p) if c == shm else 1, base)
                     for p, m, s, c in zip(columns["nprocs"][sel], columns["nbytes"][sel], seg,
                                           columns["channel"][sel])]).reshape(-1, 4)


def _fit_relative(design: np.ndarray, times: np.ndarray, base: Paper004Params, loss: FitLoss):
    """Eq. 19 on relative residuals: rows and times divided by the measured time, so that every
    experiment weighs alike whatever its size (times span decades; noise is a fraction of the time,
    as in :mod:`commcost.calibration.robust_fit`)."""
    return fit_design(design / times[:, None], np.ones_like(times), base, loss=loss)


def fit_bcast_algorithms(columns: dict[str, np.ndarray], base: Paper004Params, *, shm: str = "shm",
                         loss: FitLoss = FitLoss.HUBER) -> list[AlgorithmFit]:
    """Fit o, L per Open MPI broadcast algorithm from bcast + flat gather rows (paper 004 eq. 16-19).

    ``base`` carries gamma, Q and the segment size (``ref_nbytes``). Rows of
    algorithms paper 004 does not model (knomial, scatter_allgather, ...)
    are left out. InputError if no modelled algorithm was measured.
    """
    rows = (columns["benchmark"] == EXPERIMENT) & (columns["collective"] == "bcast")
    names = [a for a in MODELLED if np.any(rows & (columns["algorithm"] == a))]
    if not names:
        raise InputError(f"no broadcast experiments to fit; expected {EXPERIMENT} rows of the algorithms "
                         f"{', '.join(MODELLED)} (commcost calibrate --benchmarks bcast)", where="algorithm")
    fits = []
    for name in names:  # one system of eq. 19 per algorithm
        sel = rows & (columns["algorithm"] == name)
        measured = columns["time_s_mean"][sel].astype(np.float64)
        nbytes = columns["nbytes"][sel].astype(np.float64)
        design = _design(columns, name, base, shm)
        fit = _fit_relative(design, measured, base, loss)
        fits.append(AlgorithmFit(name, tuple(float(v) for v in fit.theta_), nbytes, measured,
                                 design @ fit.theta_, fit.rank_))
    return fits


def calibrate_paper004(columns: dict[str, np.ndarray], *, shm: str = "shm", network: str = "tcp",
                       segsize: int = DEFAULT_SEGSIZE, loss: FitLoss = FitLoss.HUBER
                       ) -> tuple[Paper004Params, list[AlgorithmFit], dict[str, Any]]:
    """Paper 004's whole parameter set from measurements: gamma, Q (section 5.1), then o, L (section 5.2).

    The per-algorithm fits go into ``Paper004Params.algorithms``; the
    top-level o^0, o^1, L^0, L^1 are one fit of every algorithm's
    experiments together (a default for algorithms without their own).
    Returns the parameters, the per-algorithm fits and a report.
    """
    values, sources = gamma_and_q(columns, shm=shm, network=network, segsize=segsize)
    base = Paper004Params(o0_s=0.0, o1_s=0.0, L0_s=0.0, L1_s=0.0, ref_nbytes=segsize, **values)
    fits = fit_bcast_algorithms(columns, base, shm=shm, loss=loss)
    design = np.concatenate([_design(columns, f.algorithm, base, shm) for f in fits])
    times = np.concatenate([f.measured_s for f in fits])
    joint = _fit_relative(design, times, base, loss)
    params = Paper004Params(**{**values, "ref_nbytes": segsize},
                            **dict(zip(("o0_s", "o1_s", "L0_s", "L1_s"), joint.theta_.tolist())),
                            algorithms={f.algorithm: f.theta for f in fits})
    report = {"sources": sources, "loss": loss.value,
              "algorithms": {f.algorithm: f.report() for f in fits}}
    return params, fits, report
