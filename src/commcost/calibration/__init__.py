"""Fitting model parameters from measurements (issue 4, item 4).

Inputs are plain numpy arrays (sizes, times, concurrencies); reading them
from a measurements store is the io layer's job. Every fit reports its
residuals, 95 % confidence intervals where they exist, and paper 000's
proportional error mu = max(measured, predicted) / min(measured, predicted).

* :mod:`commcost.calibration.fit_p2p`: Hockney (one segment or eager /
  rendezvous segments) and LogGP from ping-pong times;
* :mod:`commcost.calibration.fit_taulop`: tau-Lop tables o(m), L(m, tau)
  from Ring_tau times (paper 000 section 5.2).

This package may import models, platform, units and errors; never io,
report or cli (pyproject.toml's layers).
"""

from commcost.calibration.fit_p2p import (
    HockneyFit, HockneySegment, HockneySegmentsFit, LinearLawFit, LogGPFit,
    fit_hockney, fit_hockney_segments, fit_linear_law, fit_loggp, proportional_error,
)
from commcost.calibration.fit_taulop import TauLopFit, fit_taulop_channel

__all__ = [
    "HockneyFit", "HockneySegment", "HockneySegmentsFit", "LinearLawFit", "LogGPFit", "TauLopFit",
    "fit_hockney", "fit_hockney_segments", "fit_linear_law", "fit_loggp", "fit_taulop_channel",
    "proportional_error",
]
