"""What a process started under mpirun does with an error: one line on stderr, then MPI_Abort.

An exception on one rank would leave the others waiting in a collective
forever; aborting the communicator ends them all, and mpirun exits non-zero.
"""

from __future__ import annotations

import sys
from typing import Any, Callable


def run_or_abort(who: str, comm: Any, body: Callable[[], None]) -> int:
    """Run ``body`` on this rank; 0 when it returns, else one line naming ``who`` and the rank, and abort."""
    try:
        body()
    except Exception as exc:  # one line, then abort every rank
        print(f"commcost {who} (rank {comm.Get_rank()}): {exc}", file=sys.stderr, flush=True)
        comm.Abort(1)
        return 1
    return 0
