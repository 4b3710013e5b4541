"""The process ``commcost calibrate`` starts under mpirun: measures ping-pong points into a CSV.

::

    mpirun -np 2 python -m commcost.cli.mpi_worker --out m.csv --channel shm --sizes 1,4,16

Rank 0 opens the measurements store, drops the points already stored (so a
killed run resumes), broadcasts the list to every rank, and appends each
point (fsynced) as soon as it is measured. Prints nothing on success; on an
error, one line on stderr and ``MPI_Abort`` so that no rank is left waiting.
"""

from __future__ import annotations

import argparse
import socket
import sys


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="commcost.cli.mpi_worker")
    p.add_argument("--out", required=True, help="measurements CSV to append to")
    p.add_argument("--channel", required=True, help="channel name to record (shm, tcp, ...)")
    p.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated")
    p.add_argument("--point-budget", type=float, default=1.0, help="seconds at most per point")
    p.add_argument("--min-reps", type=int, default=20)
    p.add_argument("--max-reps", type=int, default=1_000_000)
    p.add_argument("--target-ci", type=float, default=0.025, help="95%% CI half-width relative to the mean")
    args = p.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes: expected integers separated by commas, got {args.sizes!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from commcost.calibration import mpi_benchmarks as bench
    from commcost.io.measurements import Measurement, MeasurementStore, now_timestamp

    comm = bench.world()
    rank = comm.Get_rank()
    try:
        if comm.Get_size() < 2:
            raise ValueError("the ping-pong needs at least 2 ranks; run under mpirun -np 2")
        mpi = bench.library_version()
        host = socket.gethostname()

        def row(nbytes: int, stats: dict | None = None) -> Measurement:
            stats = stats or {"mean": 0.0}
            return Measurement(
                benchmark="pingpong", nprocs=2, nnodes=1, ppn=2, channel=args.channel, nbytes=nbytes,
                time_s_mean=stats["mean"], reps=stats.get("reps"), time_s_median=stats.get("median"),
                time_s_min=stats.get("min"), time_s_max=stats.get("max"), time_s_std=stats.get("std"),
                ci95_rel=stats.get("ci95_rel"), converged=stats.get("converged"), mpi=mpi, host=host,
                timestamp=now_timestamp() if stats.get("reps") else "", source="commcost calibrate")

        store = None
        todo = None
        if rank == 0:
            store = MeasurementStore(args.out)
            todo = [n for n in args.sizes if not store.has(row(n))]
        todo = comm.bcast(todo, root=0)
        for nbytes in todo:
            stats = bench.pingpong(comm, nbytes, min_reps=args.min_reps, max_reps=args.max_reps,
                                   time_budget_s=args.point_budget, target_ci_rel=args.target_ci)
            if rank == 0:
                store.append(row(nbytes, stats))
        comm.Barrier()
    except Exception as exc:  # one line, then abort every rank
        print(f"commcost mpi_worker (rank {rank}): {exc}", file=sys.stderr, flush=True)
        comm.Abort(1)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
