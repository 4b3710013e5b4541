"""The process ``commcost arrange --measure`` starts under mpirun: times MPDATA's halo exchange into JSON.

::

    mpirun -np 4 --map-by rankfile:file=arranged.rankfile \\
        python -m commcost.launch.halo_worker --dims 2x2 --local 256x256x64 --halo 1x1 --out t.json

The grid is a periodic MPI_Cart of ``--dims`` made without reordering, so
the launcher's placement (a rankfile written by ``commcost arrange``) is
the arrangement that runs (:func:`commcost.calibration.mpi_benchmarks.mpdata_halo`).
Rank 0 writes ``{"dims", "local", "halo", "steps", "nprocs", "mpi",
"runs_s", "time_s", "hosts", "h_nbytes", "w_nbytes"}``. Prints nothing on
success; on an error, one line on stderr and ``MPI_Abort``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.launch.rank_errors import run_or_abort


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.lower().split("x"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="commcost.launch.halo_worker")
    p.add_argument("--dims", required=True, type=_ints, help="R x C process grid")
    p.add_argument("--local", required=True, type=_ints, help="nB x mB x l points per process")
    p.add_argument("--halo", default=(1, 1), type=_ints, help="ihalo x jhalo")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)

    from commcost.calibration import mpi_benchmarks

    comm = mpi_benchmarks.world()

    def measure() -> None:
        result = mpi_benchmarks.mpdata_halo(comm, args.dims, args.local, args.halo, steps=args.steps,
                                            repeat=args.repeat)
        if result is not None:
            args.out.write_text(json.dumps({
                "dims": list(args.dims), "local": list(args.local), "halo": list(args.halo), "steps": args.steps,
                "nprocs": comm.Get_size(), "mpi": mpi_benchmarks.library_version(), **result}))
    return run_or_abort("halo_worker", comm, measure)


if __name__ == "__main__":
    sys.exit(main())
