"""Queue-search cost gamma from HighVolumePingPong times (paper 001 section 4.1, eq. 3).

HighVolumePingPong (paper 001 Algorithm 1) sends n messages each way. With
the receives posted in the order the messages arrive, every arrival matches
the head of the posted-receive queue; posted in reverse, every arrival walks
the whole queue, which adds T_q = gamma n^2 (eq. 3). So the reversed time is
the in-order time plus gamma n^2:

    T_reversed(n) = a T_in_order(n) + gamma n^2,   a, gamma >= 0

fitted with :func:`commcost.calibration.robust_fit.fit_linear_law` (Huber loss
on relative residuals, 95 % intervals); ``a`` (about 1) absorbs a common
drift between the two runs. Paper 001 measured gamma = 8.4e-9 s on Blue
Waters (eq. 4) as an upper bound; Open MPI matches posted receives per
source and tag with hashing in recent versions, so gamma may be near 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commcost.calibration.robust_fit import LinearLawFit, fit_linear_law
from commcost.errors import InputError

PAPER001_GAMMA_S = 8.4e-9  # eq. 4, Blue Waters


@dataclass(frozen=True, eq=False)
class QueueSearchFit:
    """gamma of eq. 3 and the fit it comes from."""

    law: LinearLawFit

    @property
    def gamma_s(self) -> float:
        """Seconds per queue entry stepped through."""
        return self.law.value("gamma_s")

    def report(self) -> dict[str, Any]:
        """gamma, its 95 % interval and the fit quality as plain data."""
        return {"gamma_s": self.gamma_s, "gamma_ci95": list(self.law.interval("gamma_s")),
                "drift": self.law.value("a"), "points": self.law.n, "mu_mean": self.law.mu_mean,
                "mu_max": self.law.mu_max, "paper001_gamma_s": PAPER001_GAMMA_S}


def fit_queue_search(count: np.ndarray, in_order_s: np.ndarray, reversed_s: np.ndarray,
                     loss: str = "huber") -> QueueSearchFit:
    """Fit T_reversed(n) = a T_in_order(n) + gamma n^2 (paper 001 eq. 3) over message counts n.

    The three arrays are aligned: for each count n the in-order and the
    reversed time of the same total volume. Needs at least three counts.
    """
    n = np.asarray(count, dtype=np.float64)
    t_in = np.asarray(in_order_s, dtype=np.float64)
    t_rev = np.asarray(reversed_s, dtype=np.float64)
    if not (n.shape == t_in.shape == t_rev.shape) or n.ndim != 1 or n.size < 3:
        raise InputError("expected in-order and reversed times at three message counts or more", where="tau")
    if np.any(~np.isfinite(t_in) | (t_in <= 0)) or np.any(~np.isfinite(t_rev) | (t_rev <= 0)):
        raise InputError("every measured time must be a finite number > 0", where="time_s")
    X = np.column_stack([t_in, n ** 2])
    return QueueSearchFit(fit_linear_law(X, t_rev, ("a", "gamma_s"), loss=loss, x=n))
