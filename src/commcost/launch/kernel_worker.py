"""The process ``commcost measure-kernel`` starts under mpirun: times a kernel's communication into JSON.

::

    mpirun -np 4 python -m commcost.launch.kernel_worker --kernel summa --partition part.txt --out t.json
    mpirun -np 4 python -m commcost.launch.kernel_worker --schedule s.json --repeat 5 --out t.json

Rank 0 writes ``{"kernel", "nprocs", "iterations_s": [t_0, ...], "time_s"}``
(paper 000 Algorithm 1: barrier, time each iteration's communication, max
over ranks, sum). With ``--schedule`` (any schedule of phases, as
``commcost map --measure`` runs it) the whole schedule runs ``--repeat``
times: ``runs_s`` holds each run's sum, ``time_s`` their median, and
``hosts`` each rank's processor name. Prints nothing on success; on an error, one line on
stderr and ``MPI_Abort`` so that no rank is left waiting.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.launch.rank_errors import run_or_abort


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="commcost.launch.kernel_worker")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--kernel", choices=("summa", "wave2d"))
    what.add_argument("--schedule", type=Path, help="a schedule file of phases (no dependencies)")
    p.add_argument("--partition", type=Path)
    p.add_argument("--repeat", type=int, default=1, help="with --schedule: timed runs of the whole schedule")
    p.add_argument("--steps", type=int, default=1, help="Wave2D time steps")
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    if args.kernel and args.partition is None:
        p.error("--kernel needs --partition FILE")
    from commcost.calibration import kernel_benchmarks, mpi_benchmarks
    from commcost.io.partition_file import read_partition
    from commcost.kernels import summa, wave2d

    comm = mpi_benchmarks.world()

    def measure_schedule() -> None:
        import numpy as np

        from commcost.io.schedule_file import load_schedule

        schedule = load_schedule(args.schedule)
        runs = [kernel_benchmarks.time_iterations(comm, schedule, warmup=1 if k == 0 else 0)
                for k in range(args.repeat)]
        hosts = mpi_benchmarks.processor_names(comm)
        if comm.Get_rank() == 0:
            sums = [float(t.sum()) for t in runs]
            args.out.write_text(json.dumps({
                "schedule": str(args.schedule), "nprocs": schedule.nprocs, "mpi": mpi_benchmarks.library_version(),
                "runs_s": sums, "time_s": float(np.median(sums)), "hosts": hosts}))

    if args.schedule is not None:
        return run_or_abort("kernel_worker", comm, measure_schedule)

    def measure() -> None:
        part = read_partition(args.partition)
        # Algorithm 1 posts the pbc sends (MPI_Isend) and sends the pbr with MPI_Send.
        schedule = summa(part, posted_pbc=True) if args.kernel == "summa" else wave2d(part, args.steps)
        times = kernel_benchmarks.time_iterations(comm, schedule)
        if comm.Get_rank() == 0:
            args.out.write_text(json.dumps({
                "kernel": args.kernel, "partition": str(args.partition), "nprocs": part.nprocs,
                "mpi": mpi_benchmarks.library_version(),
                "iterations_s": times.tolist(), "time_s": float(times.sum())}))
    return run_or_abort("kernel_worker", comm, measure)

if __name__ == "__main__":
    sys.exit(main())
