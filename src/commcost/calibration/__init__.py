"""Fitting model parameters from measurements (issue 4, item 4).

Inputs are plain numpy arrays (sizes, times, concurrencies); reading them
from a measurements store is the io layer's job. Every fit reports its
residuals, 95 % confidence intervals where they exist, and paper 000's
proportional error mu = max(measured, predicted) / min(measured, predicted).

* :mod:`commcost.calibration.robust_fit`: the robust (Huber) fit of a law
  linear in its parameters on relative residuals, with 95 % intervals, that
  the fits below share;
* :mod:`commcost.calibration.fit_p2p`: Hockney (one segment or eager /
  rendezvous segments) and LogGP from ping-pong times;
* :mod:`commcost.calibration.fit_taulop`: tau-Lop tables o(m), L(m, tau)
  from Ring_tau times (paper 000 section 5.2);
* :mod:`commcost.calibration.fit_queue_search`: paper 001's queue-search
  gamma from HighVolumePingPong times (eq. 3);
* :mod:`commcost.calibration.plan`: what ``commcost calibrate`` measures;
  :mod:`commcost.calibration.mpi_benchmarks` measures it under mpirun, each
  point repeated by the rule of :mod:`commcost.calibration.repetitions`.

This package may import models, platform, units and errors; never io,
report or cli (pyproject.toml's layers).
"""

__all__ = [
    "HockneyFit", "HockneySegment", "HockneySegmentsFit", "LinearLawFit", "LogGPFit", "TauLopFit",
    "fit_hockney", "fit_hockney_segments", "fit_linear_law", "fit_loggp", "fit_taulop_channel",
    "proportional_error",
]

_HOME = {name: "fit_taulop" if name in ("TauLopFit", "fit_taulop_channel")
         else "robust_fit" if name in ("LinearLawFit", "fit_linear_law", "proportional_error")
         else "fit_p2p" for name in __all__}


def __getattr__(name: str):
    """Import the fits on first use: they pull in scipy, which the CLI should not load to start."""
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(f"commcost.calibration.{_HOME[name]}"), name)
    raise AttributeError(f"module 'commcost.calibration' has no attribute {name!r}")
