"""Run an irregular exchange for real and time it, as an application would (issue 14, paper 001 section 5).

Every rank calls :func:`time_exchange` with the same one-phase schedule
under an MPI launcher. Each run: MPI_Barrier, t_start, an Irecv for every
message the rank receives (posted in the pattern's order, by ascending
source, or reversed: paper 001's in-order and reversed queues), an Isend for
every message it sends, wait for all, t_end. A run's time is the maximum of
t_end - t_start over the ranks; ``warmup`` runs come first, untimed. Takes a
communicator (:func:`commcost.calibration.mpi_benchmarks.world`), returns
plain data, never prints, and calls no MPI module function.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from commcost.calibration.buffers import message_buffer
from commcost.schedule import Schedule

TAG = 2000
ORDERS = ("in-order", "reversed")


def time_exchange(comm: Any, schedule: Schedule, repeat: int, order: str = "in-order",
                  warmup: int = 2) -> np.ndarray | None:
    """Per run, the slowest rank's seconds (rank 0; None elsewhere): ``repeat`` timed runs."""
    if order not in ORDERS:
        raise ValueError(f"expected one of {ORDERS}, got {order!r}")
    rank = comm.Get_rank()
    if comm.Get_size() != schedule.nprocs:
        raise ValueError(f"the pattern is for {schedule.nprocs} ranks; this run has {comm.Get_size()}")
    incoming = np.flatnonzero(schedule.dst == rank)
    incoming = incoming[np.argsort(schedule.src[incoming], kind="stable")]
    if order == "reversed":
        incoming = incoming[::-1]
    outgoing = np.flatnonzero(schedule.src == rank)
    outgoing = outgoing[np.argsort(schedule.dst[outgoing], kind="stable")]
    buffers = {int(t): message_buffer(int(schedule.nbytes[t])) for t in (*incoming, *outgoing)}

    def once() -> float:
        comm.Barrier()
        start = time.perf_counter()
        requests = [comm.Irecv(buffers[int(t)], source=int(schedule.src[t]), tag=TAG) for t in incoming]
        requests += [comm.Isend(buffers[int(t)], dest=int(schedule.dst[t]), tag=TAG) for t in outgoing]
        for request in requests:
            request.Wait()
        return time.perf_counter() - start

    for _ in range(warmup):
        once()
    local = [once() for _ in range(repeat)]
    gathered = comm.gather(local, root=0)
    comm.Barrier()
    if rank != 0:
        return None
    return np.max(np.array(gathered, dtype=np.float64), axis=0)
