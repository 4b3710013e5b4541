"""Point-to-point fits: Hockney (with eager/rendezvous segments) and LogGP from ping-pong times.

Inputs are plain arrays: message sizes ``nbytes`` and measured times
``time_s`` (one row per measurement; several rows may share a size). Every
fit here is a fit of a law that is linear in its parameters,
t(m) = X(m) . theta with theta >= 0, done by
:func:`commcost.calibration.robust_fit.fit_linear_law`: Huber loss on the
relative residuals ln(predicted / measured) (whose absolute values are the
logs of paper 000's proportional errors), a threshold taken from the data,
and 95 % sandwich confidence intervals; :mod:`commcost.calibration.robust_fit`
describes the method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from commcost.calibration.robust_fit import (EXACT_FIT, LinearLawFit, ProportionalErrors, fit_linear_law,
                                            proportional_error)
from commcost.errors import InputError
from commcost.models.hockney import HockneyChannel
from commcost.models.loggp import LogGPParams


def _check_times(x: np.ndarray, t: np.ndarray, what: str = "time_s") -> None:
    if x.shape != t.shape or x.ndim != 1:
        raise InputError(f"expected nbytes and {what} as 1-D arrays of one length; got shapes {x.shape} and {t.shape}",
                         where=what)
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InputError(f"every measured time must be a finite number > 0; got {t[~(np.isfinite(t) & (t > 0))][0]!r}",
                         where=what)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise InputError("every message size must be a finite number of bytes >= 0", where="nbytes")


# ---------------------------------------------------------------------------
# Hockney
# ---------------------------------------------------------------------------


class _FitQuality(ProportionalErrors):
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
    with 95 % sandwich confidence intervals; the method is described in
    :mod:`commcost.calibration.robust_fit`. Needs at least two distinct sizes.
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
class HockneySegmentsFit(ProportionalErrors):
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

    def report(self) -> dict[str, Any]:
        return {"segments": [{"nbytes_range": [s.nbytes_lo, s.nbytes_hi], **s.fit.report()} for s in self.segments],
                "breaks": [list(b) for b in self.breaks], "bic": list(self.bic),
                "mu_mean": self.mu_mean, "mu_max": self.mu_max}


def _bic(cost: float, n: int, nsegments: int) -> float:
    """n ln(2 cost / n) + k ln n, k = 3S - 1 (alpha, beta per segment, S - 1 breakpoints)."""
    return n * np.log(max(2.0 * cost / n, EXACT_FIT**2)) + (3 * nsegments - 1) * np.log(n)


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
      when there are very many points; and only where the n times leave
      the split model at least two residual degrees of freedom, n - (3S -
      1) >= 2 (with fewer, the cost of two 3-size segments is near 0 and
      BIC takes it: on a busy machine 6 ping-pong sizes split 3 + 3, one
      segment took alpha near 0 and a steep slope, and missed the sizes
      between its own by up to 62x);
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
    while len(segs) < max_segments and n - (3 * (len(segs) + 1) - 1) >= 2:  # residual degrees of freedom left
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
    so the ping-pong fit (robust, relative residuals, see
    :mod:`commcost.calibration.robust_fit`) identifies G and the sum
    2o + L only. The split needs more:

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
