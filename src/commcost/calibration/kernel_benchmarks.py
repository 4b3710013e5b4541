"""Run a kernel's communication for real and time it as paper 000 Algorithm 1 does.

Every rank calls :func:`time_iterations` with the same schedule under an
MPI launcher. For each iteration n: MPI_Barrier, t_start, then the
iteration's phases in order (each rank posts an Irecv for every message it
receives, sends with Isend in posted phases and with blocking Send in
sequence phases), MPI_Waitall, t_end. The time of iteration n is the
maximum of t_end - t_start over the ranks, and the kernel's measured cost is
t = sum over n of t_n (paper 000 section 5.4, Fig. 11). A phase repeated r
times is r iterations. Takes a communicator (from
:func:`commcost.calibration.mpi_benchmarks.world`), returns plain data and
never prints; it calls no MPI module function, so mpi4py stays imported in
:mod:`commcost.calibration.mpi_benchmarks` only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from commcost.calibration.buffers import message_buffer
from commcost.kernels.iterations import iteration_groups
from commcost.schedule import Schedule

TAG = 1000


def _one_iteration(comm: Any, schedule: Schedule, phases: list[int], rank: int,
                   buffers: dict[int, np.ndarray]) -> float:
    slices = schedule.phase_slices()
    comm.Barrier()
    start = time.perf_counter()
    requests = []
    for k in phases:
        sl = slices[k]
        src, dst, posted = schedule.src[sl], schedule.dst[sl], schedule.posted[sl]
        for i in np.flatnonzero(dst == rank):
            t = sl.start + int(i)
            requests.append(comm.Irecv(buffers[t], source=int(src[i]), tag=TAG + k))
        for i in np.flatnonzero(src == rank):
            t = sl.start + int(i)
            if posted[i]:
                requests.append(comm.Isend(buffers[t], dest=int(dst[i]), tag=TAG + k))
            else:
                comm.Send(buffers[t], dest=int(dst[i]), tag=TAG + k)
    for request in requests:
        request.Wait()
    return time.perf_counter() - start


def time_iterations(comm: Any, schedule: Schedule, warmup: int = 1) -> np.ndarray | None:
    """t_n of every iteration (max over ranks, seconds) at rank 0, None elsewhere (paper 000 Algorithm 1).

    ``warmup`` untimed runs of the first iteration come first.
    """
    rank = comm.Get_rank()
    if comm.Get_size() != schedule.nprocs:
        raise ValueError(f"the schedule is for {schedule.nprocs} ranks; this run has {comm.Get_size()}")
    mine = np.flatnonzero((schedule.src == rank) | (schedule.dst == rank))
    buffers = {int(t): message_buffer(int(schedule.nbytes[t])) for t in mine}
    runs = [(phases, repeat) for _, phases, repeat in iteration_groups(schedule)]
    for _ in range(warmup if runs else 0):
        _one_iteration(comm, schedule, runs[0][0], rank, buffers)
    local = [_one_iteration(comm, schedule, phases, rank, buffers) for phases, repeat in runs for _ in range(repeat)]
    gathered = comm.gather(local, root=0)
    comm.Barrier()
    if rank != 0:
        return None
    return np.max(np.array(gathered, dtype=np.float64), axis=0)
