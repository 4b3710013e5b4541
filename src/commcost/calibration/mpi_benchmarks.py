"""Benchmarks run under an MPI launcher (mpirun, mpiexec, srun); the only module that imports mpi4py.

Every function takes a communicator, returns plain data and never prints.
Good practice (issue 4, paper 004 section 5): a warm-up, a barrier before
each point, timing at the root with ``MPI.Wtime``, and repetitions until the
95% confidence half-width of the mean (t-distribution) is within
``target_ci_rel`` of the mean, or the point's time budget runs out (then
``converged`` is 0).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from mpi4py import MPI
from scipy import stats

TAG = 17


def world() -> Any:
    """``MPI.COMM_WORLD``."""
    return MPI.COMM_WORLD


def library_version() -> str:
    """The first line of ``MPI.Get_library_version()``, e.g. ``Open MPI v5.0.11, package: ...``."""
    text = MPI.Get_library_version().strip()
    return text.splitlines()[0].strip() if text else ""


def ci95_rel(samples: np.ndarray) -> float:
    """Half-width of the 95% confidence interval of the mean, relative to the mean (inf if unknown)."""
    n = len(samples)
    if n < 2:
        return math.inf
    mean = float(np.mean(samples))
    if mean <= 0:
        return math.inf
    half = float(stats.t.ppf(0.975, n - 1)) * float(np.std(samples, ddof=1)) / math.sqrt(n)
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


def pingpong(comm: Any, nbytes: int, *, min_reps: int = 20, max_reps: int = 100_000,
             time_budget_s: float = 1.0, target_ci_rel: float = 0.025, warmup: int = 10) -> dict[str, Any] | None:
    """One ping-pong point between ranks 0 and 1 (other ranks idle); every rank must call it.

    A sample is one round trip of ``nbytes`` divided by 2, timed at rank 0.
    Samples are taken in batches; after each batch rank 0 decides whether
    to go on (fewer than ``min_reps`` samples, or the confidence half-width
    above ``target_ci_rel`` of the mean while under ``time_budget_s`` and
    ``max_reps``) and broadcasts its decision. Returns the statistics at
    rank 0 (see :func:`summarize`), None elsewhere.
    """
    if comm.Get_size() < 2:
        raise ValueError("ping-pong needs at least 2 ranks")
    rank = comm.Get_rank()
    buf = np.zeros(max(int(nbytes), 1), dtype=np.uint8)[:int(nbytes)]
    msg = [buf, MPI.BYTE]
    peer = 1 - rank if rank < 2 else None

    def round_trips(count: int, out: list[float] | None) -> None:
        if rank == 0:
            for _ in range(count):
                t0 = MPI.Wtime()
                comm.Send(msg, dest=peer, tag=TAG)
                comm.Recv(msg, source=peer, tag=TAG)
                t1 = MPI.Wtime()
                if out is not None:
                    out.append((t1 - t0) / 2)
        elif rank == 1:
            for _ in range(count):
                comm.Recv(msg, source=peer, tag=TAG)
                comm.Send(msg, dest=peer, tag=TAG)

    comm.Barrier()
    round_trips(warmup, None)
    comm.Barrier()
    samples: list[float] = []
    start = time.perf_counter()
    batch = max(1, min(min_reps, 10))
    while True:
        round_trips(batch, samples)
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
                batch = int(min(max(10, 0.01 / mean), 10_000, max(1, max_reps - n)))
                if n >= min_reps:
                    left = (time_budget_s - elapsed) / mean
                    batch = int(max(1, min(batch, left)))
        go_on, batch = comm.bcast((go_on, batch), root=0)
        if not go_on:
            break
    comm.Barrier()
    if rank != 0:
        return None
    return summarize(np.asarray(samples), target_ci_rel)
