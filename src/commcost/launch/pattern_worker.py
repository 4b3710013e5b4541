"""The process ``commcost measure-pattern`` starts under mpirun: times levels of a sparse pattern into JSON.

::

    mpirun -np 4 python -m commcost.launch.pattern_worker --pattern spmv --matrix A.mtx \
        --job 0 in-order L0_in.json --job 0 reversed L0_rev.json

Every rank rebuilds the same pattern (:func:`commcost.kernels.sparse.pattern_levels`
is deterministic) once, then runs the jobs in turn, all in this one launch
(a launch costs seconds, a level's timing milliseconds). After each job rank 0
writes its file, ``{"pattern", "level", "order", "nprocs", "runs_s": [...],
"time_s": median}`` (:mod:`commcost.calibration.pattern_benchmarks`), so a
launch killed halfway keeps the jobs it finished. Prints nothing on success;
on an error, one line on stderr and ``MPI_Abort`` so that no rank is left waiting.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.launch.rank_errors import run_or_abort


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="commcost.launch.pattern_worker")
    p.add_argument("--pattern", required=True, choices=("spmv", "spgemm"))
    p.add_argument("--matrix", required=True, type=Path)
    p.add_argument("--amg-levels", action="store_true")
    p.add_argument("--partition", default="contiguous")
    p.add_argument("--value-bytes", type=int, default=8)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--job", nargs=3, action="append", required=True, metavar=("LEVEL", "ORDER", "OUT"),
                   help="a level, its receive order (in-order or reversed) and the JSON file to write (repeatable)")
    args = p.parse_args(argv)
    jobs = []
    for level, order, out in args.job:
        if order not in ("in-order", "reversed") or not level.isdigit():
            p.error(f"--job expects LEVEL (an integer) ORDER (in-order or reversed) OUT, got {level} {order} {out}")
        jobs.append((int(level), order, Path(out)))
    import numpy as np

    from commcost.calibration import mpi_benchmarks, pattern_benchmarks
    from commcost.kernels.sparse import pattern_levels, read_matrix

    comm = mpi_benchmarks.world()

    def measure() -> None:
        levels = pattern_levels(read_matrix(args.matrix), args.pattern, comm.Get_size(), args.partition,
                                args.amg_levels, args.value_bytes)
        for level, order, out in jobs:
            runs = pattern_benchmarks.time_exchange(comm, levels[level].schedule, args.repeat, order)
            if comm.Get_rank() == 0:
                out.write_text(json.dumps({
                    "pattern": args.pattern, "matrix": str(args.matrix), "level": level, "order": order,
                    "nprocs": comm.Get_size(), "mpi": mpi_benchmarks.library_version(),
                    "runs_s": runs.tolist(), "time_s": float(np.median(runs))}))
    return run_or_abort("pattern_worker", comm, measure)


if __name__ == "__main__":
    sys.exit(main())
