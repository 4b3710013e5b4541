"""Which messages a collective really sends under the embedded Open MPI, per (sender, receiver).

For checking, on a real Open MPI, which algorithm coll/tuned runs (fixed
decisions, forced ids or a dynamic-rules file): Open MPI 5.0.11's release
build compiles its coll verbose output out, but the ``pml monitoring``
component counts every message. With ``pml_monitoring_enable 2`` it keeps
the messages that collectives send (lines ``I``) apart from the program's
own (``E``); ``pml_monitoring_filename`` makes every rank write them at
MPI_Finalize to ``<filename>.<rank>.prof``, one line per peer:
``I  <rank>  <peer>  <bytes> bytes  <count> msgs sent  <size histogram>``.
Algorithms differ in who sends to whom and how much (bcast: basic_linear's
root sends to every rank; binary_tree and binomial send down different
trees), which :func:`traffic_of_schedule` lets one compare with commcost's
schedule of the algorithm.

Run as a program under mpirun (``python ompi_monitoring.py <collective>
<nbytes> <root> [<calls>]``) it makes one call (or ``calls``) of the collective
with ``nbytes`` as commcost's ``Case.nbytes`` (unsigned chars, MPI_SUM for the
reductions). Two calls less one isolate a call's own messages from the
set-up a component does at its first call (coll/han's sub-communicators).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Mapping

Traffic = dict[tuple[int, int], tuple[int, int]]  # (src, dst) -> (bytes, messages)

MPIRUN_OPTIONS = ("--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle", "1")
_LINE = re.compile(r"^I\t(\d+)\t(\d+)\t(\d+) bytes\t(\d+) msgs sent")


def find_mpirun() -> str | None:
    """The mpirun next to this Python (the venv's embedded Open MPI), else on PATH, else None."""
    beside = Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.is_file() else shutil.which("mpirun")


def available() -> bool:
    """Whether mpi4py and an mpirun are installed."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return find_mpirun() is not None


def parse_profiles(folder: Path, prefix: str = "prof") -> Traffic:
    """The ``I`` lines (messages sent by collectives) of every ``<prefix>.<rank>.prof`` in ``folder``."""
    traffic: dict[tuple[int, int], tuple[int, int]] = {}
    for path in sorted(folder.glob(f"{prefix}.*.prof")):
        for line in path.read_text().splitlines():
            match = _LINE.match(line)
            if match:
                src, dst, nbytes, count = map(int, match.groups())
                traffic[(src, dst)] = (nbytes, count)
    return traffic


def run_monitored(collective: str, nprocs: int, nbytes: int, root: int = 0,
                  mca: Mapping[str, str] | None = None, timeout: float = 120.0) -> Traffic:
    """Run one ``collective`` of ``nbytes`` on ``nprocs`` ranks under mpirun with pml monitoring;
    return the messages the collective sent per (src, dst).

    ``mca`` adds ``--mca`` settings, e.g. ``{"coll_tuned_use_dynamic_rules": "1",
    "coll_tuned_bcast_algorithm": "6"}`` or a ``coll_tuned_dynamic_rules_filename``.
    """
    mpirun = find_mpirun()
    if mpirun is None:
        raise RuntimeError("no mpirun next to this Python or on PATH")
    with tempfile.TemporaryDirectory(prefix="ompi-mon-") as tmp:
        prefix = str(Path(tmp) / "prof")
        settings = {"pml_monitoring_enable": "2", "pml_monitoring_enable_output": "3",
                    "pml_monitoring_filename": prefix, **(mca or {})}
        command = [mpirun, *MPIRUN_OPTIONS, "-np", str(nprocs)]
        for key, value in settings.items():
            command += ["--mca", key, value]
        command += [sys.executable, __file__, collective, str(nbytes), str(root)]
        for _ in range(3):  # this machine's PMIx sometimes fails to start its listener: launch again
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
            if done.returncode == 0 or "listener thread failed to start" not in done.stderr:
                break
        if done.returncode != 0:
            raise RuntimeError(f"mpirun failed ({done.returncode}): {done.stderr[-2000:]}")
        return parse_profiles(Path(tmp))


def traffic_of_schedule(schedule: object) -> Traffic:
    """Bytes and messages per (src, dst) of a commcost :class:`Schedule`, repeated phases counted; the
    acknowledgements of synchronous sends (phases named ``ack``, ``<call>: ack`` inside han) left out, as pml monitoring does not see
    them (ob1 sends them as control fragments)."""
    totals: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for i in range(schedule.ntransmissions):  # type: ignore[attr-defined]
        name = schedule.phase_names[schedule.phase[i]]  # type: ignore[attr-defined]
        if name == "ack" or name.endswith(": ack"):
            continue
        times = int(schedule.repeat[schedule.phase[i]])  # type: ignore[attr-defined]
        entry = totals[(int(schedule.src[i]), int(schedule.dst[i]))]  # type: ignore[attr-defined]
        entry[0] += int(round(schedule.nbytes[i])) * times  # type: ignore[attr-defined]
        entry[1] += times
    return {pair: (nbytes, count) for pair, (nbytes, count) in totals.items()}


def _call(collective: str, nbytes: int, root: int) -> None:
    """One call of ``collective`` (run under mpirun)."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    block = np.ones(nbytes, np.uint8)
    whole = np.ones(nbytes * size, np.uint8)
    if collective == "bcast":
        comm.Bcast(block, root=root)
    elif collective == "scatter":
        comm.Scatter(whole, block, root=root)
    elif collective == "gather":
        comm.Gather(block, whole, root=root)
    elif collective == "allgather":
        comm.Allgather(block, whole)
    elif collective == "alltoall":
        comm.Alltoall(whole, np.empty_like(whole))
    elif collective == "reduce":
        comm.Reduce(block, np.empty_like(block), op=MPI.SUM, root=root)
    elif collective == "allreduce":
        comm.Allreduce(block, np.empty_like(block), op=MPI.SUM)
    else:
        raise SystemExit(f"unknown collective {collective!r}")


if __name__ == "__main__":
    for _ in range(int(sys.argv[4]) if len(sys.argv) > 4 else 1):
        _call(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
