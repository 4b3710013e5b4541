"""The process ``commcost calibrate`` starts under mpirun: measures benchmark points into a CSV.

::

    mpirun -np 2 python -m commcost.launch.mpi_worker --out m.csv --channel shm \\
        --benchmarks pingpong,ringtau --sizes 1,4,16 --deadline-s 20

Rank 0 opens the measurements store, drops the points already stored (so a
killed run resumes), broadcasts the list to every rank, and appends each
point (fsynced) as soon as it is measured. With ``--deadline-s`` (seconds
of measuring, counted once MPI is up) every point gets the time left
divided by the points left (at most ``--point-budget``), and points not
started by the deadline are left for a later run. With ``--launched-at``
(the launcher's wall clock when it started the run) and ``--startup-s``
(the start-up its parent allows for), a start-up slower than allowed comes
out of the measuring time (:func:`measuring_seconds`), so the run still ends
when its parent expects it to, on a busy machine too. ``--algorithm`` names the algorithm the launcher forced
(``--mca coll_tuned_<collective>_algorithm``), recorded in the rows. ``--calls bcast:8:4096,reduce`` times
those collectives as the MPI's own selection runs them at their sizes (commcost's nbytes; else ``--sizes``), in place of
the benchmarks, with ``--algorithm`` as the rows' label (``commcost verify``: ``default`` or ``rules``). The
``reduction`` benchmark alone runs on one rank; the others need two. Prints
nothing on success; on an error, one line on stderr and ``MPI_Abort`` so
that no rank is left waiting.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

from commcost.launch.rank_errors import run_or_abort


def measuring_seconds(deadline_s: float, launched_at: float | None, startup_s: float, now: float) -> float:
    """Seconds left to measure, counted once MPI is up: ``deadline_s``, less what start-up took beyond
    ``startup_s`` (the run was launched at ``launched_at`` by the wall clock; ``now`` is the wall clock once
    MPI is up). A launch time ahead of now or over an hour back (clocks of two nodes apart) is not believed:
    then ``deadline_s`` as it is."""
    if launched_at is None:
        return deadline_s
    took = now - launched_at
    if not 0.0 <= took <= deadline_s + startup_s + 3600.0:
        return deadline_s
    return min(deadline_s, deadline_s + startup_s - took)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="commcost.launch.mpi_worker")
    p.add_argument("--out", required=True, help="measurements CSV to append to")
    p.add_argument("--channel", required=True, help="channel name to record (shm, tcp, ...)")
    p.add_argument("--benchmarks", default="pingpong", help="comma-separated: pingpong,ringtau,nbft,bcast,hvpp,crossing,reduction,"
                                                             "allreduce,reduce,allgather,alltoall,scatter,gather")
    p.add_argument("--sizes", required=True, help="ping-pong and Ring_tau message sizes in bytes, comma-separated")
    p.add_argument("--algorithm", default="", help="name of the forced broadcast algorithm (bcast)")
    p.add_argument("--calls", default="", help="collectives to time as the MPI selects them, instead of "
                                                "--benchmarks: bcast:1024:65536,reduce (sizes after each, "
                                                "else --sizes)")
    p.add_argument("--expect-env", default="", metavar="NAME=VALUE",
                   help="stop with an error unless every rank has this environment variable (commcost verify: "
                        "the launch line must pass the parameter file to every rank)")
    p.add_argument("--deadline-s", type=float, default=None, help="seconds for the whole run")
    p.add_argument("--launched-at", type=float, default=None,
                   help="wall-clock time (time.time()) at which the run was launched")
    p.add_argument("--startup-s", type=float, default=0.0,
                   help="with --launched-at: the seconds of MPI start-up the deadline allows for")
    p.add_argument("--run", type=int, default=0, help="the rows' run index (commcost verify: the launch round)")
    p.add_argument("--point-budget", type=float, default=1.0, help="seconds at most per point")
    p.add_argument("--min-reps", type=int, default=20)
    p.add_argument("--max-reps", type=int, default=1_000_000)
    p.add_argument("--target-ci", type=float, default=0.025, help="95%% CI half-width relative to the mean")
    args = p.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes: expected integers separated by commas, got {args.sizes!r}")
    from commcost.calibration.plan import parse_benchmarks

    try:
        args.benchmarks = parse_benchmarks(args.benchmarks)
    except ValueError as exc:
        p.error(f"--benchmarks: {exc}")
    return args


def _measure(bench, comm, point, opts: dict):
    """Run one point's benchmark on every rank; statistics at rank 0."""
    if point.benchmark == "pingpong":
        return bench.pingpong(comm, point.nbytes, **opts)
    if point.benchmark == "ring_tau":
        return bench.ring_tau(comm, point.nbytes, point.tau, **opts)
    if point.benchmark == "nbft":
        return bench.nbft(comm, point.nprocs, point.nbytes, **opts)
    if point.benchmark == "bcast_gather":
        return bench.bcast_gather(comm, point.nbytes, point.segsize, **{**opts, "min_reps": min(opts["min_reps"], 10)})
    if point.benchmark == "hvpp":
        return bench.high_volume_pingpong(comm, point.nbytes, point.tau, reverse=point.algorithm == "reversed",
                                          **{**opts, "min_reps": min(opts["min_reps"], 10)})
    if point.benchmark == "crossing":
        return bench.crossing(comm, point.nbytes, point.tau, **opts)
    if point.benchmark == "reduction":
        op, dtype = point.algorithm.split("_", 1)
        return bench.reduce_local(comm, op, dtype, point.nbytes, **opts)
    if point.benchmark == "collective":
        return bench.collective(comm, point.collective, point.nbytes, **{**opts, "min_reps": min(opts["min_reps"], 10)})
    raise ValueError(f"no benchmark for {point.benchmark!r}")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from commcost.calibration import mpi_benchmarks as bench
    from commcost.calibration.plan import call_points, run_points
    from commcost.io.measurements import Measurement, MeasurementStore, now_timestamp, rank_statistic_of

    comm = bench.world()
    rank, size = comm.Get_rank(), comm.Get_size()

    def measure() -> None:
        if size < 2 and args.benchmarks != ("reduction",):
            raise ValueError("the benchmarks need at least 2 ranks; run under mpirun -np 2")
        mpi = bench.library_version()
        host = socket.gethostname()
        hosts = comm.allgather(host)  # nnodes and ppn of a point: the host names of the ranks it uses
        if args.expect_env:
            name, _, value = args.expect_env.partition("=")
            lacking = [r for r, v in enumerate(comm.allgather(os.environ.get(name))) if v != value]
            if lacking:
                raise ValueError(f"ranks {', '.join(map(str, lacking))} of {size} did not get {name}={value} from "
                                 "the launch line; forward it (mpirun -x NAME, srun --export=ALL)")
        if args.calls:
            points = call_points(args.calls, args.channel, size, args.sizes, args.algorithm)
        else:
            points = [p for b in args.benchmarks
                      for p in run_points(b, args.channel, size, args.sizes, algorithm=args.algorithm)]

        def row(point, stats: dict | None = None) -> Measurement:
            stats = stats or {"mean": 0.0}
            used = hosts[:point.nprocs]
            nnodes, ppn = len(set(used)), max(used.count(h) for h in set(used))
            return Measurement(
                benchmark=point.benchmark, collective=point.collective, algorithm=point.algorithm,
                nprocs=point.nprocs, nnodes=nnodes, ppn=ppn, channel=point.channel, nbytes=point.nbytes,
                segsize=point.segsize, tau=point.tau, run=max(args.run, 0),
                time_s_mean=stats["mean"], reps=stats.get("reps"), time_s_median=stats.get("median"),
                time_s_min=stats.get("min"), time_s_max=stats.get("max"), time_s_std=stats.get("std"),
                ci95_rel=stats.get("ci95_rel"), converged=stats.get("converged"), mpi=mpi, host=host,
                timestamp=now_timestamp() if stats.get("reps") else "", source="commcost calibrate",
                statistic=rank_statistic_of(point.benchmark))

        store = None
        todo = None
        if rank == 0:
            store = MeasurementStore(args.out)
            todo = [p for p in points if not store.has(row(p))]
        todo = comm.bcast(todo, root=0)
        started = time.monotonic()  # the deadline counts measuring time, less a start-up slower than allowed
        deadline_s = None if args.deadline_s is None else \
            measuring_seconds(args.deadline_s, args.launched_at, args.startup_s, time.time())
        opts = {"min_reps": args.min_reps, "max_reps": args.max_reps, "target_ci_rel": args.target_ci}
        for i, point in enumerate(todo):
            budget = args.point_budget
            if rank == 0 and deadline_s is not None:
                left = deadline_s - (time.monotonic() - started)
                budget = min(args.point_budget, left / (len(todo) - i)) if left > 0 else None
            budget = comm.bcast(budget, root=0)
            if budget is None:  # out of time: the rest is for a later run
                break
            stats = _measure(bench, comm, point, {**opts, "time_budget_s": max(budget, 0.0)})
            if rank == 0:
                store.append(row(point, stats))
        comm.Barrier()

    return run_or_abort("mpi_worker", comm, measure)


if __name__ == "__main__":
    sys.exit(main())
