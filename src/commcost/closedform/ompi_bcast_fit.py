"""Fitting paper 004's o^0, o^1, L^0, L^1 to measured experiments, gamma and Q held known (eq. 16-19).

An experiment of paper 004 section 5.2 is a broadcast followed by a flat
gather of one segment per rank, timed on the root (eq. 16-17). Its time is
linear in ``(o^0, o^1, L^0, L^1)``: :func:`experiment_coefficients` gives its
row lambda_1..4 from :mod:`commcost.closedform.ompi_bcast_model`, and
:func:`fit_design` solves the stacked rows (eq. 19) for o, L >= 0 by
non-negative least squares or the Huber loss the paper fits with.
:func:`fit_taulop` does both for a list of :class:`Measurement`.

Where all messages have the segment size the columns of o^1 and L^1 coincide
and only ``T^0(m_s)`` and ``T^1(m_s)`` are identifiable (likely why every row
of the paper's Table 2 has o^1 = L^1); the linear algorithm, whose messages
vary in size, pins all four.

Measuring gamma and Q and fitting o and L per algorithm from a measurements
table is :mod:`commcost.closedform.ompi_bcast_calibration`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, NamedTuple

import numpy as np

from commcost.closedform.ompi_bcast_model import DEFAULT_CHAIN_FANOUT, coefficients, flat_gather_coefficients
from commcost.closedform.ompi_bcast_params import DEFAULT_SEGSIZE, Paper004Params, checked_number
from commcost.errors import InputError


class Measurement(NamedTuple):
    """One communication experiment of section 5.2: the broadcast then a flat gather, timed on the root."""

    algorithm: str
    nprocs: int
    nbytes: float
    time_s: float


class FitLoss(enum.Enum):
    """Least squares (LINEAR) or the Huber loss the paper fits with (HUBER); both keep o, L >= 0."""

    LINEAR = "linear"
    HUBER = "huber"


def experiment_coefficients(algorithm: str, nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params,
                            *, root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT, gather: bool = True) -> np.ndarray:
    """lambda_1..4 of eq. 19: the broadcast's rows plus, with ``gather``, the flat gather of eq. 16-17."""
    rows = coefficients(algorithm, nprocs, nbytes, segsize, nodes, params, root=root, fanout=fanout)
    if gather:
        rows = rows + flat_gather_coefficients(nprocs, segsize, nodes, params, root=root)
    return rows


@dataclass(frozen=True)
class TaulopFit:
    """The solution of eq. 19: fitted parameters and how well they explain the measurements."""

    params_: Paper004Params
    design_: np.ndarray
    times_s: np.ndarray
    rank_: int

    @property
    def theta_(self) -> np.ndarray:
        """Fitted (o^0, o^1, L^0, L^1) in seconds."""
        return self.params_.theta

    @property
    def residuals_s_(self) -> np.ndarray:
        """Predicted minus measured time of every experiment."""
        return self.design_ @ self.theta_ - self.times_s


def fit_taulop(measurements: Iterable[Measurement | tuple], params: Paper004Params, *, nodes,
               segsize: float = DEFAULT_SEGSIZE, root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT,
               gather: bool = True, loss: FitLoss = FitLoss.LINEAR) -> TaulopFit:
    """Fit o^0, o^1, L^0, L^1 >= 0 to measured experiment times (eq. 16-19), gamma and Q held known.

    ``nodes`` places the first P ranks of every experiment (ranks per node, or a node per rank).
    """
    rows = [Measurement(*m) for m in measurements]
    if not rows:
        raise InputError("no measurements to fit", where="measurements")
    design = np.array([experiment_coefficients(r.algorithm, int(r.nprocs), r.nbytes, segsize, nodes, params,
                                               root=root, fanout=fanout, gather=gather) for r in rows])
    times = np.array([checked_number(r.time_s, f"measurements[{i}].time_s") for i, r in enumerate(rows)])
    return fit_design(design, times, params, loss=loss)


def fit_design(design: np.ndarray, times: np.ndarray, params: Paper004Params, *,
               loss: FitLoss = FitLoss.LINEAR) -> TaulopFit:
    """Solve eq. 19, ``design @ (o^0, o^1, L^0, L^1) = times`` with o, L >= 0, gamma and Q of ``params`` kept.

    ``design`` holds one row lambda_1..4 per experiment (:func:`experiment_coefficients`),
    so experiments of several placements can be fitted together. Least
    squares, or the Huber loss (paper 004 section 6, its ref [18]) with
    f_scale = 1.35 sigma, sigma = 1.4826 MAD of the least-squares residuals.
    """
    from scipy.optimize import least_squares, lsq_linear

    design = np.asarray(design, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    scale = np.linalg.norm(design, axis=0)
    used = scale > 0  # a column of zeros (say o^0 with no shared-memory message) stays 0
    a = design[:, used] / scale[used]
    solution = lsq_linear(a, times, bounds=(0.0, np.inf), method="bvls").x
    if loss == FitLoss.HUBER:
        residual = a @ solution - times
        f_scale = 1.35 * max(np.median(np.abs(residual)) / 0.6745, 1e-12 * max(np.abs(times).max(), 1e-300))
        solution = least_squares(lambda x: a @ x - times, solution, bounds=(0.0, np.inf), loss="huber",
                                 f_scale=f_scale, x_scale="jac").x
    theta = np.zeros(4)
    theta[used] = solution / scale[used]
    return TaulopFit(params.with_theta(theta), design, times, int(np.linalg.matrix_rank(a)) if a.size else 0)
