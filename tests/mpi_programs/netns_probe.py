"""Run under mpirun on the namespace cluster (tests/netns_cluster.py): where the ranks are, ping-pong and allgather.

::

    mpirun -np 4 ... python netns_probe.py --sizes 8,1048576 --allgather 262144 --reps 30 --seconds 10

Rank 0 prints one JSON object: ``hosts`` (host name per rank),
``pingpong`` (``{peer: {nbytes: median one-way seconds}}``, rank 0 with
every other rank: half the round trip) and ``allgather`` (``{block bytes:
median seconds}``, the slowest rank's time per call, after a barrier).
Every loop stops at ``--reps`` repetitions or when ``--seconds`` have
passed (rank 0 decides, so all ranks stop together); at least 3
repetitions per point.
"""

from __future__ import annotations

import argparse
import json
import socket
import time

import numpy as np
from mpi4py import MPI


def _go_on(comm: MPI.Comm, i: int, reps: int, deadline: float) -> bool:
    """Whether to run repetition ``i``: fewer than ``reps`` done and (fewer than 3 or time left), rank 0 says."""
    go = i < reps and (i < 3 or time.monotonic() < deadline) if comm.Get_rank() == 0 else None
    return bool(comm.bcast(go, root=0))


def pingpong(comm: MPI.Comm, peer: int, nbytes: int, reps: int, deadline: float) -> float | None:
    """Median one-way time between rank 0 and ``peer`` (half a round trip); None on other ranks."""
    rank = comm.Get_rank()
    buf = np.zeros(max(nbytes, 1), dtype=np.uint8)[:nbytes]
    times: list[float] = []
    i = 0
    while _go_on(comm, i, reps + 2, deadline):
        comm.Barrier()
        t0 = MPI.Wtime()
        if rank == 0:
            comm.Send(buf, dest=peer, tag=7)
            comm.Recv(buf, source=peer, tag=7)
            times.append((MPI.Wtime() - t0) / 2)
        elif rank == peer:
            comm.Recv(buf, source=0, tag=7)
            comm.Send(buf, dest=0, tag=7)
        i += 1
    return float(np.median(times[2:] or times)) if rank == 0 else None  # the first two are warm-up


def allgather(comm: MPI.Comm, block: int, reps: int, deadline: float, ring: bool = False) -> float | None:
    """Median over calls of the slowest rank's allgather time (MPI_Allgather, or a ring of Sendrecv); None off rank 0."""
    send = np.ones(block, dtype=np.uint8)
    recv = np.zeros(block * comm.Get_size(), dtype=np.uint8)
    size, rank = comm.Get_size(), comm.Get_rank()
    times: list[float] = []
    i = 0
    while _go_on(comm, i, reps + 1, deadline):
        comm.Barrier()
        t0 = MPI.Wtime()
        if ring:  # P - 1 steps: send the block received last to rank + 1, receive from rank - 1
            recv[rank * block:(rank + 1) * block] = send
            for step in range(size - 1):
                out, into = (rank - step) % size, (rank - step - 1) % size
                comm.Sendrecv(recv[out * block:(out + 1) * block], dest=(rank + 1) % size, sendtag=9,
                              recvbuf=recv[into * block:(into + 1) * block], source=(rank - 1) % size, recvtag=9)
        else:
            comm.Allgather(send, recv)
        slowest = comm.reduce(MPI.Wtime() - t0, op=MPI.MAX, root=0)
        if comm.Get_rank() == 0:
            times.append(slowest)
        i += 1
    return float(np.median(times[1:] or times)) if comm.Get_rank() == 0 else None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="8,1048576", help="ping-pong sizes in bytes, comma-separated")
    p.add_argument("--allgather", default="", help="allgather block sizes in bytes, comma-separated")
    p.add_argument("--ring", action="store_true", help="allgather as a ring of MPI_Sendrecv, not MPI_Allgather")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--seconds", type=float, default=10.0, help="time limit of each point")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    hosts = comm.gather(socket.gethostname(), root=0)
    out: dict = {"hosts": hosts, "pingpong": {}, "allgather": {}}
    for peer in range(1, comm.Get_size()):
        for nbytes in (int(s) for s in args.sizes.split(",") if s):
            t = pingpong(comm, peer, nbytes, args.reps, time.monotonic() + args.seconds)
            if comm.Get_rank() == 0:
                out["pingpong"].setdefault(str(peer), {})[str(nbytes)] = t
    for block in (int(s) for s in args.allgather.split(",") if s):
        t = allgather(comm, block, args.reps, time.monotonic() + args.seconds, ring=args.ring)
        if comm.Get_rank() == 0:
            out["allgather"][str(block)] = t
    if comm.Get_rank() == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
