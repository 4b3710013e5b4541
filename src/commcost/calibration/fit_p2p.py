"""Point-to-point fits: Hockney (with eager/rendezvous segments) and LogGP from ping-pong times.

Inputs are plain arrays: message sizes ``nbytes`` and measured times
``time_s`` (one row per measurement; several rows may share a size). Every
fit here is a fit of a law that is linear in its parameters,
t(m) = X(m) . theta with theta >= 0, and is done the same way
(:func:`fit_linear_law`):

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

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import optimize, stats

from commcost.errors import InputError
from commcost.models.hockney import HockneyChannel
from commcost.models.loggp import LogGPParams

LOSSES = ("huber", "linear")
HUBER_K = 1.345        # Huber's tuning constant: 95 % efficiency under normal errors
MAD_TO_SIGMA = 1.4826  # 1 / Phi^-1(3/4): MAD of a normal sample estimates 0.6745 sigma
_EXACT = 1e-6          # relative residuals below this count as an exact fit (cost floor, sigma floor)


# ---------------------------------------------------------------------------
# the shared machinery: a robust fit of a law linear in its parameters
# ---------------------------------------------------------------------------


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


@dataclass(frozen=True, eq=False)
class LinearLawFit:
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

    @property
    def mu_mean(self) -> float:
        """Average proportional error (paper 000 Table 2's mu-bar)."""
        return float(np.mean(self.mu))

    @property
    def mu_max(self) -> float:
        """Worst proportional error."""
        return float(np.max(self.mu))

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


def _check_times(x: np.ndarray, t: np.ndarray, what: str = "time_s") -> None:
    if x.shape != t.shape or x.ndim != 1:
        raise InputError(f"expected nbytes and {what} as 1-D arrays of one length; got shapes {x.shape} and {t.shape}",
                         where=what)
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InputError(f"every measured time must be a finite number > 0; got {t[~(np.isfinite(t) & (t > 0))][0]!r}",
                         where=what)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise InputError("every message size must be a finite number of bytes >= 0", where="nbytes")


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
            sigma = max(robust_sigma(r), _EXACT)
            for _ in range(10):
                fs = HUBER_K * sigma
                theta, r, cost = _least_squares(X, t, "huber", fs, theta)
                new_sigma = max(robust_sigma(r), _EXACT)
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


# ---------------------------------------------------------------------------
# Hockney
# ---------------------------------------------------------------------------


class _FitQuality:
    """Residuals and proportional errors of a fit that keeps its :class:`LinearLawFit` in ``law``."""

    law: "LinearLawFit"

    @property
    def residuals_s(self) -> np.ndarray:
        """Measured minus predicted, seconds."""
        return self.law.residuals_s

    @property
    def mu(self) -> np.ndarray:
        """Proportional error per point, max(measured, predicted) / min(...) (paper 000)."""
        return self.law.mu

    @property
    def mu_mean(self) -> float:
        """Mean proportional error."""
        return self.law.mu_mean

    @property
    def mu_max(self) -> float:
        """Largest proportional error."""
        return self.law.mu_max


@dataclass(frozen=True, eq=False)
class HockneyFit(_FitQuality):
    """Hockney's T(m) = alpha + beta m fitted to measured times, with its report.

    ``alpha_ci95`` and ``beta_ci95`` are 95 % confidence intervals; residuals
    and proportional errors are per measurement (see :class:`LinearLawFit`).
    """

    law: LinearLawFit

    @property
    def alpha_s(self) -> float:
        """Latency alpha, seconds."""
        return self.law.value("alpha_s")

    @property
    def beta_s_per_byte(self) -> float:
        """Inverse bandwidth beta, seconds per byte."""
        return self.law.value("beta_s_per_byte")

    @property
    def alpha_ci95(self) -> tuple[float, float]:
        return self.law.interval("alpha_s")

    @property
    def beta_ci95(self) -> tuple[float, float]:
        return self.law.interval("beta_s_per_byte")

    def time_s(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Predicted alpha + beta m."""
        return self.alpha_s + self.beta_s_per_byte * np.asarray(nbytes, dtype=np.float64)

    def channel(self) -> HockneyChannel:
        """The fitted values as a model channel."""
        return HockneyChannel(self.alpha_s, self.beta_s_per_byte)

    def to_dict(self) -> dict[str, float]:
        """``{alpha_s, beta_s_per_byte}``, as :meth:`HockneyChannel.from_dict` reads it."""
        return self.channel().to_dict()

    def report(self) -> dict[str, Any]:
        """Parameters and fit quality as plain data."""
        return {"params": self.to_dict(), **self.law.quality(),
                "nbytes_range": [float(self.law.x.min()), float(self.law.x.max())]}


def fit_hockney(nbytes: np.ndarray, time_s: np.ndarray, loss: str = "huber") -> HockneyFit:
    """Fit Hockney's T(m) = alpha + beta m (Hockney 1994; paper 000 ref [26]) to ping-pong times.

    ``time_s`` is the one-way time of a message of ``nbytes`` bytes (half a
    round trip). alpha, beta >= 0. Robust (Huber) fit on relative residuals
    with 95 % sandwich confidence intervals; the method is described in the
    module docstring. Needs at least two distinct sizes.
    """
    x = np.asarray(nbytes, dtype=np.float64)
    t = np.asarray(time_s, dtype=np.float64)
    _check_times(x, t)
    X = np.column_stack([np.ones_like(x), x])
    return HockneyFit(fit_linear_law(X, t, ("alpha_s", "beta_s_per_byte"), loss=loss, x=x))


@dataclass(frozen=True, eq=False)
class HockneySegment:
    """One size range of a piecewise Hockney fit: the measured sizes nbytes_lo..nbytes_hi."""

    nbytes_lo: float
    nbytes_hi: float
    fit: HockneyFit


@dataclass(frozen=True, eq=False)
class HockneySegmentsFit:
    """Piecewise Hockney fit (e.g. eager below a size, rendezvous above).

    ``segments`` in increasing sizes; ``breaks`` the (last size of a segment,
    first size of the next) pairs: the protocol switch lies between them.
    ``bic`` is the criterion of the accepted models (1, 2, ... segments) and
    ``tried`` the best split rejected last, if any.
    """

    segments: tuple[HockneySegment, ...]
    f_scale: float
    bic: tuple[float, ...]
    nbytes: np.ndarray = field(repr=False)
    measured_s: np.ndarray = field(repr=False)

    @property
    def breaks(self) -> tuple[tuple[float, float], ...]:
        return tuple((a.nbytes_hi, b.nbytes_lo) for a, b in zip(self.segments, self.segments[1:]))

    def time_s(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Predicted time: a size up to a segment's last measured size uses that segment (the last one beyond)."""
        m = np.asarray(nbytes, dtype=np.float64)
        his = np.array([s.nbytes_hi for s in self.segments[:-1]])
        which = np.searchsorted(his, m, side="left")
        alpha = np.array([s.fit.alpha_s for s in self.segments])[which]
        beta = np.array([s.fit.beta_s_per_byte for s in self.segments])[which]
        return alpha + beta * m

    @property
    def mu(self) -> np.ndarray:
        return proportional_error(self.measured_s, self.time_s(self.nbytes))

    @property
    def mu_mean(self) -> float:
        return float(np.mean(self.mu))

    @property
    def mu_max(self) -> float:
        return float(np.max(self.mu))

    def report(self) -> dict[str, Any]:
        return {"segments": [{"nbytes_range": [s.nbytes_lo, s.nbytes_hi], **s.fit.report()} for s in self.segments],
                "breaks": [list(b) for b in self.breaks], "bic": list(self.bic),
                "mu_mean": self.mu_mean, "mu_max": self.mu_max}


def _bic(cost: float, n: int, nsegments: int) -> float:
    """n ln(2 cost / n) + k ln n, k = 3S - 1 (alpha, beta per segment, S - 1 breakpoints)."""
    return n * np.log(max(2.0 * cost / n, _EXACT**2)) + (3 * nsegments - 1) * np.log(n)


def fit_hockney_segments(nbytes: np.ndarray, time_s: np.ndarray, max_segments: int = 2, *,
                         loss: str = "huber", min_sizes: int = 3, min_gain: float = 0.05) -> HockneySegmentsFit:
    """Piecewise Hockney fit: one alpha + beta m per size range, where the data shows a break.

    MPI switches protocol with the size (eager below a threshold,
    rendezvous above), which shows as a jump or a change of slope in
    ping-pong times; paper 004 section 6 suggests fitting small and large
    messages separately. Method (greedy binary segmentation):

    * f_scale is fixed to that of the one-segment fit, so that all
      candidate fits minimize the same robust cost C = sum rho(r_i) of the
      relative residuals r_i = ln(predicted / measured);
    * a break is searched among the measured sizes: a segment is split
      after each of its distinct sizes leaving >= ``min_sizes`` distinct
      sizes on both sides, and the split of least total C is kept;
    * it is accepted only if it lowers the Bayesian information criterion
      BIC = n ln(2C / n) + (3S - 1) ln n (S segments: alpha, beta each,
      and S - 1 breakpoints) **and** lowers C by at least ``min_gain``
      (relative). BIC guards against inventing breaks in noise on few
      points; ``min_gain`` against splitting on a tiny systematic bend
      when there are very many points;
    * this repeats until ``max_segments`` segments or no accepted split.

    Each final segment is refitted on its own with :func:`fit_hockney`.
    """
    x = np.asarray(nbytes, dtype=np.float64)
    t = np.asarray(time_s, dtype=np.float64)
    _check_times(x, t)
    if max_segments < 1:
        raise InputError("max_segments must be >= 1", where="max_segments")
    one = fit_hockney(x, t, loss=loss)
    fs = one.law.f_scale

    def cost_of(mask: np.ndarray) -> float:
        X = np.column_stack([np.ones(int(mask.sum())), x[mask]])
        return fit_linear_law(X, t[mask], ("alpha_s", "beta_s_per_byte"), loss=loss, f_scale=fs).cost

    n = t.size
    # segments as (lo, hi) ranges over the distinct sizes, with their costs
    segs: list[tuple[float, float, float]] = [(float(x.min()), float(x.max()), cost_of(np.ones(n, bool)))]
    bics = [_bic(segs[0][2], n, 1)]
    while len(segs) < max_segments:
        best: tuple[float, int, tuple[float, float, float], tuple[float, float, float]] | None = None
        for i, (lo, hi, c) in enumerate(segs):
            sizes = np.unique(x[(x >= lo) & (x <= hi)])
            for j in range(min_sizes - 1, len(sizes) - min_sizes):
                left = (lo, float(sizes[j]))
                right = (float(sizes[j + 1]), hi)
                cl = cost_of((x >= left[0]) & (x <= left[1]))
                cr = cost_of((x >= right[0]) & (x <= right[1]))
                gain = cl + cr - c
                if best is None or gain < best[0]:
                    best = (gain, i, (*left, cl), (*right, cr))
        if best is None:
            break
        gain, i, left_seg, right_seg = best
        total = sum(s[2] for s in segs)
        new_total = total + gain
        new_bic = _bic(new_total, n, len(segs) + 1)
        if not (new_bic < bics[-1] and new_total <= (1.0 - min_gain) * total):
            break
        segs[i:i + 1] = [left_seg, right_seg]
        bics.append(new_bic)
    segments = []
    for lo, hi, _ in segs:
        mask = (x >= lo) & (x <= hi)
        segments.append(HockneySegment(lo, hi, one if len(segs) == 1 else fit_hockney(x[mask], t[mask], loss=loss)))
    return HockneySegmentsFit(tuple(segments), fs, tuple(bics), x, t)


# ---------------------------------------------------------------------------
# LogGP
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LogGPFit(_FitQuality):
    """LogGP from ping-pong times: G and 2o + L always; o, L and g only from extra measurements.

    A ping-pong identifies T(m) = (2o + L) + (m - 1) G, not o and L apart
    nor g. ``o_s``, ``L_s`` (and their intervals) are None unless a send
    overhead was measured, ``g_s`` is None unless a gap was measured.
    """

    law: LinearLawFit
    o_fit: LinearLawFit | None
    g_fit: LinearLawFit | None

    @property
    def G_s_per_byte(self) -> float:
        return self.law.value("G_s_per_byte")

    @property
    def G_ci95(self) -> tuple[float, float]:
        return self.law.interval("G_s_per_byte")

    @property
    def two_o_plus_L_s(self) -> float:
        """2o + L: the time of a 1-byte message, seconds."""
        return self.law.value("two_o_plus_L_s")

    @property
    def two_o_plus_L_ci95(self) -> tuple[float, float]:
        return self.law.interval("two_o_plus_L_s")

    @property
    def o_s(self) -> float | None:
        return None if self.o_fit is None else self.o_fit.value("o_s")

    @property
    def o_ci95(self) -> tuple[float, float] | None:
        return None if self.o_fit is None else self.o_fit.interval("o_s")

    @property
    def L_s(self) -> float | None:
        """L = (2o + L) - 2o, clipped at 0 (see :attr:`L_clipped`)."""
        return None if self.o_s is None else max(self.two_o_plus_L_s - 2.0 * self.o_s, 0.0)

    @property
    def L_clipped(self) -> bool:
        """True when the measured overhead exceeds half the 1-byte time, so L = 2o+L - 2o came out negative."""
        return self.o_s is not None and self.two_o_plus_L_s - 2.0 * self.o_s < 0.0

    @property
    def L_ci95(self) -> tuple[float, float] | None:
        """Interval arithmetic on the two 95 % intervals: [A_lo - 2 o_hi, A_hi - 2 o_lo] (conservative)."""
        if self.o_fit is None:
            return None
        a_lo, a_hi = self.two_o_plus_L_ci95
        o_lo, o_hi = self.o_ci95  # type: ignore[misc]
        return max(a_lo - 2.0 * o_hi, 0.0), max(a_hi - 2.0 * o_lo, 0.0)

    @property
    def g_s(self) -> float | None:
        return None if self.g_fit is None else self.g_fit.value("g_s")

    @property
    def g_ci95(self) -> tuple[float, float] | None:
        return None if self.g_fit is None else self.g_fit.interval("g_s")

    def params_dict(self) -> dict[str, float | None]:
        """``{L_s, o_s, g_s, G_s_per_byte}`` with None for what the measurements do not identify."""
        return {"L_s": self.L_s, "o_s": self.o_s, "g_s": self.g_s, "G_s_per_byte": self.G_s_per_byte}

    def unidentified(self) -> list[str]:
        """The LogGP parameters the given measurements leave open."""
        return [k for k, v in self.params_dict().items() if v is None]

    def to_params(self) -> LogGPParams:
        """The fitted :class:`LogGPParams`; InputError if o or g were not measured."""
        missing = self.unidentified()
        if missing:
            raise InputError(f"ping-pong times alone do not identify {', '.join(missing)}; expected a measured "
                             "send overhead (overhead_s) for o and L, and a measured gap (gap_s) for g",
                             where="loggp")
        return LogGPParams.from_dict(self.params_dict())  # type: ignore[arg-type]

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"params": self.params_dict(), "two_o_plus_L_s": self.two_o_plus_L_s,
                               "unidentified": self.unidentified(), **self.law.quality()}
        out["ci95"]["L_s"] = None if self.L_ci95 is None else list(self.L_ci95)
        out["ci95"]["o_s"] = None if self.o_ci95 is None else list(self.o_ci95)
        out["ci95"]["g_s"] = None if self.g_ci95 is None else list(self.g_ci95)
        if self.L_clipped:
            out["warning"] = "measured overhead 2o exceeds the 1-byte ping-pong time; L clipped at 0"
        return out


def _fit_constant(values: np.ndarray | float, name: str, loss: str) -> LinearLawFit:
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    _check_times(np.zeros_like(v), v, name)
    return fit_linear_law(np.ones((v.size, 1)), v, (name,), loss=loss, x=np.zeros_like(v))


def fit_loggp(nbytes: np.ndarray, time_s: np.ndarray, *, overhead_s: np.ndarray | float | None = None,
              gap_s: np.ndarray | float | None = None, loss: str = "huber") -> LogGPFit:
    """Fit LogGP (Alexandrov et al. 1995; paper 000 ref [24]) to ping-pong half round-trip times.

    One message costs T(m) = o + (m - 1) G + L + o = (2o + L) + (m - 1) G,
    so the ping-pong fit (robust, relative residuals, see the module
    docstring) identifies G and the sum 2o + L only. The split needs more:

    * ``overhead_s``: measured send overheads o (seconds; one value or one
      per repetition/size, e.g. the time an MPI_Isend takes to return).
      LogGP's o does not depend on m, so o is their robust (Huber) location
      and L = (2o + L) - 2o (clipped at 0 and flagged if negative).
      Without it o and L are returned as None: no split rule is assumed.
    * ``gap_s``: measured gaps g between consecutive small messages of a
      stream (seconds per message); g is their robust location, else None.
    """
    x = np.asarray(nbytes, dtype=np.float64)
    t = np.asarray(time_s, dtype=np.float64)
    _check_times(x, t)
    X = np.column_stack([np.ones_like(x), np.maximum(x - 1.0, 0.0)])
    law = fit_linear_law(X, t, ("two_o_plus_L_s", "G_s_per_byte"), loss=loss, x=x)
    o_fit = None if overhead_s is None else _fit_constant(overhead_s, "o_s", loss)
    g_fit = None if gap_s is None else _fit_constant(gap_s, "g_s", loss)
    return LogGPFit(law, o_fit, g_fit)
