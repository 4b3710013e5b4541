"""The repetition rule of the MPI benchmarks: how many times a point is timed, and what is reported of it.

Good practice (issue 4, paper 004 section 5): a warm-up, a barrier before
each point, and repetitions until the 95% confidence half-width of the mean
(t-distribution) is within ``target_ci_rel`` of the mean, or the point's
time budget runs out (then ``converged`` is 0). Every benchmark of
:mod:`commcost.calibration.mpi_benchmarks` times its samples and hands them
to :func:`adaptive_repetitions`, which runs that loop on every rank and
returns :func:`summarize`'s statistics at rank 0 (the mean, median, ...,
``ci95_rel`` and ``converged`` columns of a measurements file).

Only methods of the communicator it is given are called (Barrier, bcast,
Get_rank), no MPI module function, so mpi4py stays imported in
:mod:`commcost.calibration.mpi_benchmarks` only.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
from scipy.special import stdtrit  # Student's t quantile; scipy.stats would add ~1 s to every rank's start


def ci95_rel(samples: np.ndarray) -> float:
    """Half-width of the 95% confidence interval of the mean, relative to the mean (inf if unknown)."""
    n = len(samples)
    if n < 2:
        return math.inf
    mean = float(np.mean(samples))
    if mean <= 0:
        return math.inf
    half = float(stdtrit(n - 1, 0.975)) * float(np.std(samples, ddof=1)) / math.sqrt(n)
    return half / mean


def summarize(samples: np.ndarray, target_ci_rel: float) -> dict[str, Any]:
    """Mean, median, min, max, std (ddof 1), reps, ci95_rel and converged of timing samples (s)."""
    ci = ci95_rel(samples)
    return {
        "mean": float(np.mean(samples)),
        "median": float(np.median(samples)),
        "min": float(np.min(samples)),
        "max": float(np.max(samples)),
        "std": float(np.std(samples, ddof=1)) if len(samples) > 1 else 0.0,
        "reps": int(len(samples)),
        "ci95_rel": ci if math.isfinite(ci) else None,
        "converged": bool(ci <= target_ci_rel),
    }


def adaptive_repetitions(comm: Any, batch_fn: Callable[[int, list[float] | None], None], *, min_reps: int,
                         max_reps: int, time_budget_s: float, target_ci_rel: float,
                         warmup: int) -> dict[str, Any] | None:
    """Repeat ``batch_fn`` until the mean is precise enough or the point's budget is spent; stats at rank 0.

    ``batch_fn(count, out)`` runs ``count`` samples on every rank; rank 0
    appends each sample's seconds to ``out`` (None during the warm-up).
    Protocol (issue 4; paper 004 section 6, the MPIBlib rule): a warm-up, a
    barrier, then batches of about 10 ms; after each batch rank 0 decides
    whether to go on (fewer than ``min_reps`` samples, or the 95% confidence
    half-width above ``target_ci_rel`` of the mean while under
    ``time_budget_s`` and ``max_reps``) and broadcasts the decision.
    """
    rank = comm.Get_rank()
    comm.Barrier()
    batch_fn(warmup, None)
    comm.Barrier()
    samples: list[float] = []
    start = time.perf_counter()
    batch = max(1, min(min_reps, 10))
    while True:
        batch_fn(batch, samples if rank == 0 else None)
        go_on = False
        if rank == 0:
            n = len(samples)
            elapsed = time.perf_counter() - start
            if n < min_reps:
                go_on = True
            elif n < max_reps and elapsed < time_budget_s:
                go_on = ci95_rel(np.asarray(samples)) > target_ci_rel
            if go_on:  # batches of about 10 ms, within the reps and time left
                mean = float(np.mean(samples)) or 1e-9
                batch = int(min(max(1, 0.01 / mean), 10_000, max(1, max_reps - n)))
                if n >= min_reps:
                    left = (time_budget_s - elapsed) / mean
                    batch = int(max(1, min(batch, left)))
                else:
                    batch = int(max(1, min(batch, min_reps - n + 5)))
        go_on, batch = comm.bcast((go_on, batch), root=0)
        if not go_on:
            break
    comm.Barrier()
    if rank != 0:
        return None
    return summarize(np.asarray(samples), target_ci_rel)
