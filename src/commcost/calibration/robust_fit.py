"""The robust fit of a law linear in its parameters, t = X theta with theta >= 0, on relative residuals.

Every fit of measured times to such a law goes through :func:`fit_linear_law`:
Hockney and LogGP from ping-pong times (:mod:`commcost.calibration.fit_p2p`),
the Huber locations of tau-Lop's Ring_tau cells
(:mod:`commcost.calibration.fit_taulop`) and paper 001's queue-search gamma
(:mod:`commcost.calibration.fit_queue_search`). The method:

* **Residuals are relative**: r_i = ln(predicted_i / measured_i). Message
  times span several decades and benchmark noise is multiplicative (a
  point's spread is a fraction of its mean), so absolute residuals would let
  the largest sizes decide everything and leave the latency to chance.
  |r_i| is exactly ln(mu_i), the log of paper 000's proportional error
  mu = max(measured, predicted) / min(measured, predicted) (paper 000
  section 6), so the fit minimizes a robust cost of the proportional errors.
* **Loss**: ``"huber"`` (paper 004 section 5.2 uses Huber's regressor, its
  ref [18]) with :func:`scipy.optimize.least_squares` (``loss="huber"``,
  bounds theta >= 0), or ``"linear"`` (plain least squares on the same
  residuals, for comparison).
* **f_scale**, the Huber threshold, comes from the data: 1.345 sigma, where
  sigma = 1.4826 MAD of the residuals (the normal-consistent median absolute
  deviation) of the previous fit, starting from the plain least-squares fit
  and repeated until sigma moves by less than 1 % (at most 10 times). 1.345
  is Huber's constant giving 95 % efficiency on normal errors; MAD ignores up
  to half the points, so outliers do not inflate the threshold.
* **95 % confidence intervals** come from the Jacobian J of the residuals at
  the solution, with Huber's sandwich correction for M-estimators (Huber
  1981, Robust Statistics, section 7.6; the "H1" covariance of statsmodels'
  RLM): Cov = K^2 [sum psi(r)^2 / (n - p)] / mean(psi'(r))^2 (J^T J)^-1, with
  psi the derivative of the loss (psi(r) = clip(r, -f_scale, f_scale) for
  Huber, r for least squares) and K = 1 + (p / n) var(psi') / mean(psi')^2.
  For least squares this is the textbook s^2 (J^T J)^-1. The interval is
  theta +- t_{0.975, n-p} sqrt(Cov_jj), its lower end clipped at 0 (the
  parameters are times). A parameter pinned at its bound 0 has no reliable
  interval (the asymptotics assume an interior optimum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import optimize, stats

from commcost.errors import InputError

LOSSES = ("huber", "linear")
HUBER_K = 1.345        # Huber's tuning constant: 95 % efficiency under normal errors
MAD_TO_SIGMA = 1.4826  # 1 / Phi^-1(3/4): MAD of a normal sample estimates 0.6745 sigma
EXACT_FIT = 1e-6       # relative residuals below this count as an exact fit (cost floor, sigma floor)


def proportional_error(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """mu = max(measured, predicted) / min(measured, predicted) per point (paper 000 section 6).

    mu >= 1, and mu == 1 exactly where prediction and measurement agree.
    """
    a = np.asarray(measured, dtype=np.float64)
    b = np.asarray(predicted, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(a, b) / np.minimum(a, b)


def robust_sigma(residuals: np.ndarray) -> float:
    """sigma = 1.4826 median(|r - median(r)|): a scale of the residuals that outliers do not move."""
    r = np.asarray(residuals, dtype=np.float64)
    if r.size == 0:
        return 0.0
    return float(MAD_TO_SIGMA * np.median(np.abs(r - np.median(r))))


def _psi(r: np.ndarray, loss: str, f_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """psi = rho' and psi' of the loss at the residuals r (rho(r) = r^2/2 inside the threshold)."""
    if loss == "linear":
        return r, np.ones_like(r)
    return np.clip(r, -f_scale, f_scale), (np.abs(r) <= f_scale).astype(np.float64)


def sandwich_covariance(jac: np.ndarray, residuals: np.ndarray, loss: str, f_scale: float) -> np.ndarray:
    """Huber's asymptotic covariance of an M-estimate (Huber 1981, section 7.6).

    Cov = K^2 [sum psi^2 / (n - p)] / mean(psi')^2 (J^T J)^-1 with
    K = 1 + (p/n) var(psi') / mean(psi')^2; for least squares, s^2 (J^T J)^-1.
    Returns NaNs when there are no degrees of freedom or no point inside the
    Huber threshold.
    """
    n, p = jac.shape
    if n <= p:
        return np.full((p, p), np.nan)
    psi, dpsi = _psi(residuals, loss, f_scale)
    m1 = float(np.mean(dpsi))
    if m1 <= 0.0:
        return np.full((p, p), np.nan)
    k = 1.0 + (p / n) * float(np.var(dpsi)) / m1**2
    scale2 = k**2 * float(np.sum(psi**2)) / (n - p) / m1**2
    return scale2 * np.linalg.pinv(jac.T @ jac)


def _ci95(values: np.ndarray, cov: np.ndarray, dof: int) -> np.ndarray:
    """theta +- t_{0.975, dof} sqrt(diag Cov), lower end clipped at 0; shape (p, 2)."""
    if dof <= 0:
        return np.full((len(values), 2), np.nan)
    half = stats.t.ppf(0.975, dof) * np.sqrt(np.maximum(np.diag(cov), 0.0))
    return np.column_stack([np.maximum(values - half, 0.0), values + half])


class ProportionalErrors:
    """The summary of a fit's per-point proportional error ``mu`` (paper 000 section 6), for every fit class
    that defines ``mu``."""

    mu: np.ndarray

    @property
    def mu_mean(self) -> float:
        """Average proportional error (paper 000 Table 2's mu-bar)."""
        return float(np.mean(self.mu))

    @property
    def mu_max(self) -> float:
        """Worst proportional error."""
        return float(np.max(self.mu))


@dataclass(frozen=True, eq=False)
class LinearLawFit(ProportionalErrors):
    """A fitted law t = X theta: values, 95 % intervals and per-point quality.

    ``residuals_s`` = measured - predicted (seconds), ``log_residuals`` =
    ln(predicted / measured) (what was minimized), ``mu`` the proportional
    error of each point. ``f_scale`` is the Huber threshold in log units
    (NaN for least squares). ``cost`` is scipy's robust cost
    sum rho(r_i) at the solution, for comparing fits made with one f_scale.
    """

    names: tuple[str, ...]
    values: np.ndarray
    ci95: np.ndarray  # (p, 2)
    cov: np.ndarray
    loss: str
    f_scale: float
    x: np.ndarray  # the rows' sizes (bytes), for reports
    measured_s: np.ndarray
    predicted_s: np.ndarray
    cost: float

    @property
    def n(self) -> int:
        """Number of measurements used."""
        return int(self.measured_s.size)

    @property
    def residuals_s(self) -> np.ndarray:
        """measured - predicted, seconds."""
        return self.measured_s - self.predicted_s

    @property
    def log_residuals(self) -> np.ndarray:
        """ln(predicted / measured): the residuals the fit minimized; |r| = ln(mu)."""
        return np.log(self.predicted_s / self.measured_s)

    @property
    def mu(self) -> np.ndarray:
        """Proportional error per point (paper 000 section 6)."""
        return proportional_error(self.measured_s, self.predicted_s)

    def value(self, name: str) -> float:
        """A fitted parameter by name."""
        return float(self.values[self.names.index(name)])

    def interval(self, name: str) -> tuple[float, float]:
        """A parameter's 95 % confidence interval by name."""
        lo, hi = self.ci95[self.names.index(name)]
        return float(lo), float(hi)

    def quality(self) -> dict[str, Any]:
        """Plain data for a fit report."""
        return {
            "loss": self.loss, "f_scale": self.f_scale, "points": self.n,
            "mu_mean": self.mu_mean, "mu_max": self.mu_max,
            "ci95": {name: list(self.interval(name)) for name in self.names},
        }


def _least_squares(X: np.ndarray, t: np.ndarray, loss: str, f_scale: float, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """theta >= 0 minimizing sum rho(ln(X theta / t)); returns theta, residuals and cost."""
    # normalize columns so that every unknown is of order 1 for the solver
    scale = np.array([t.max() / max(float(col.max()), 1e-300) for col in X.T])
    Xs = X * scale
    floor = 1e-12 * float(t.min())

    def fun(u: np.ndarray) -> np.ndarray:
        return np.log(np.maximum(Xs @ u, floor) / t)

    def jac(u: np.ndarray) -> np.ndarray:
        return Xs / np.maximum(Xs @ u, floor)[:, None]

    u0 = np.maximum(start / scale, 1e-9)
    res = optimize.least_squares(fun, u0, jac=jac, bounds=(0.0, np.inf), loss=loss,
                                 f_scale=f_scale if loss != "linear" else 1.0,
                                 x_scale="jac", ftol=1e-12, xtol=1e-12, gtol=1e-12, max_nfev=2000)
    return res.x * scale, res.fun, float(res.cost)


def fit_linear_law(X: np.ndarray, time_s: np.ndarray, names: Sequence[str], *, loss: str = "huber",
                   x: np.ndarray | None = None, f_scale: float | None = None) -> LinearLawFit:
    """Robust fit of t = X theta, theta >= 0, on relative residuals ln(X theta / t).

    The method (loss, data-driven f_scale, sandwich confidence intervals) is
    described in this module's docstring. ``f_scale`` may be given to fix
    the Huber threshold (in log units), e.g. to compare the costs of
    several fits of one data set.
    """
    if loss not in LOSSES:
        raise InputError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}", where="loss")
    X = np.asarray(X, dtype=np.float64)
    t = np.asarray(time_s, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != t.size:
        raise InputError("expected one design row per measured time", where="time_s")
    p = X.shape[1]
    if np.linalg.matrix_rank(X) < p:
        raise InputError(f"the measurements cannot separate {', '.join(names)}: "
                         "expected more distinct message sizes", where="nbytes")
    # start: non-negative least squares on relative errors (X theta / t ~ 1)
    start, _ = optimize.nnls(X / t[:, None], np.ones_like(t))
    theta, r, cost = _least_squares(X, t, "linear", 1.0, start)
    fs = float("nan")
    if loss == "huber":
        if f_scale is not None:
            fs = float(f_scale)
            theta, r, cost = _least_squares(X, t, "huber", fs, theta)
        else:
            sigma = max(robust_sigma(r), EXACT_FIT)
            for _ in range(10):
                fs = HUBER_K * sigma
                theta, r, cost = _least_squares(X, t, "huber", fs, theta)
                new_sigma = max(robust_sigma(r), EXACT_FIT)
                done = abs(new_sigma - sigma) <= 0.01 * sigma
                sigma = new_sigma
                if done:
                    break
    pred = X @ theta
    jac = X / np.maximum(pred, 1e-300)[:, None]
    cov = sandwich_covariance(jac, np.log(np.maximum(pred, 1e-300) / t), loss, fs)
    n = t.size
    return LinearLawFit(tuple(names), theta, _ci95(theta, cov, n - p), cov, loss, fs,
                        np.asarray(x if x is not None else X[:, -1], dtype=np.float64), t, pred, cost)
