"""The process ``commcost measure-pattern`` starts under mpirun: times one level of a sparse pattern into JSON.

::

    mpirun -np 4 python -m commcost.cli.pattern_worker --pattern spmv --matrix A.mtx --level 0 --out t.json

Every rank rebuilds the same pattern (:func:`commcost.kernels.sparse.pattern_levels`
is deterministic), rank 0 writes ``{"pattern", "level", "order", "nprocs",
"runs_s": [...], "time_s": median}`` (:mod:`commcost.calibration.pattern_benchmarks`).
Prints nothing on success; on an error, one line on stderr and
``MPI_Abort`` so that no rank is left waiting.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.cli.rank_errors import run_or_abort


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="commcost.cli.pattern_worker")
    p.add_argument("--pattern", required=True, choices=("spmv", "spgemm"))
    p.add_argument("--matrix", required=True, type=Path)
    p.add_argument("--amg-levels", action="store_true")
    p.add_argument("--partition", default="contiguous")
    p.add_argument("--value-bytes", type=int, default=8)
    p.add_argument("--level", type=int, default=0)
    p.add_argument("--order", default="in-order", choices=("in-order", "reversed"))
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    import numpy as np

    from commcost.calibration import mpi_benchmarks, pattern_benchmarks
    from commcost.kernels.sparse import pattern_levels, read_matrix

    comm = mpi_benchmarks.world()

    def measure() -> None:
        levels = pattern_levels(read_matrix(args.matrix), args.pattern, comm.Get_size(), args.partition,
                                args.amg_levels, args.value_bytes)
        schedule = levels[args.level].schedule
        runs = pattern_benchmarks.time_exchange(comm, schedule, args.repeat, args.order)
        if comm.Get_rank() == 0:
            args.out.write_text(json.dumps({
                "pattern": args.pattern, "matrix": str(args.matrix), "level": args.level, "order": args.order,
                "nprocs": comm.Get_size(), "mpi": mpi_benchmarks.library_version(),
                "runs_s": runs.tolist(), "time_s": float(np.median(runs))}))
    return run_or_abort("pattern_worker", comm, measure)


if __name__ == "__main__":
    sys.exit(main())
