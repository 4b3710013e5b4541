"""Run a rank program under each of several Open MPI rankfiles and check every rank ran where its file says.

What ``commcost arrange --measure`` and ``commcost map --measure`` share: for
each placement, the launcher (``--launcher``, else the embedded mpirun on
this machine) with ``--map-by rankfile:file=FILE`` starts a rank program
that writes a JSON result holding ``hosts`` (each rank's processor name).
A result already written for the same run (the same ``wanted`` values) is
reused, so a run killed halfway resumes; a rank on another host than its
rankfile line names is an error (the launcher ignored the rankfile, and
the measurement would not be of that placement).

Open MPI 5.0 (PRRTE) reads ``pe`` anywhere in ``--map-by rankfile:file=PATH``
as its ``PE=`` modifier and refuses the line ("The PE=<list> mapping
directive cannot be combined with a binding directive other than core":
``/home/peter/run.rankfile`` fails, so does ``mapped.rankfile``). The
launcher therefore runs in the rankfile's folder and names the file alone,
through a copy under a name free of ``pe`` where needed.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from commcost.errors import InputError


def safe_rankfile_name(rankfile: Path) -> str:
    """A name for ``rankfile`` in its own folder without ``pe`` in it (Open MPI 5.0 reads that as its PE=
    modifier): the name itself, else a copy called ``placement-<hex digest of the name>.rankfile``."""
    if "pe" not in rankfile.name.lower():
        return rankfile.name
    digest = hashlib.sha1(rankfile.name.encode()).hexdigest()[:12]  # hex digits: no 'p'
    copy = rankfile.with_name(f"placement-{digest}.rankfile")
    copy.write_text(rankfile.read_text())
    return copy.name


@dataclass(frozen=True)
class RankfileRun:
    """One placement to run: its rankfile, the rank program's arguments after ``python -m``, the JSON it
    writes, the values a reusable result must hold, and the host each rank must report."""

    rankfile: Path
    program: list[str]
    result: Path
    wanted: dict
    hosts: list[str]


def run_under_rankfiles(runs: dict[str, RankfileRun], *, nprocs: int, launcher: str | None, mpirun: str | None,
                        timeout: float, command: str) -> dict[str, dict]:
    """Each run's JSON result by label (reused when written before for the same ``wanted``)."""
    from commcost.launch.mpi_launch import find_mpirun
    from commcost.launch.mpi_launch import local_mpirun_line, run_rank_program

    out = {}
    for label, run in runs.items():
        if run.result.exists():
            try:
                previous = json.loads(run.result.read_text())
            except (OSError, ValueError):
                previous = {}
            if all(previous.get(k) == v for k, v in run.wanted.items()):
                out[label] = previous
                print(f"commcost {command}: reused {run.result}", file=sys.stderr)
                continue
        line = shlex.split(launcher) if launcher else local_mpirun_line(find_mpirun(mpirun), nprocs, "shm")
        line = [*line, "--map-by", f"rankfile:file={safe_rankfile_name(run.rankfile)}", sys.executable, "-m",
                *run.program, "--out", str(run.result.resolve())]
        run.result.unlink(missing_ok=True)
        result = run_rank_program(line, run.result, timeout, f"the MPI run of the {label} placement",
                                  cwd=run.rankfile.parent, where="--launcher" if launcher else "--mpirun")
        wrong = [k for k, (h, e) in enumerate(zip(result["hosts"], run.hosts)) if h != e]
        if wrong:
            k = wrong[0]
            raise InputError(f"rank {k} of the {label} placement ran on {result['hosts'][k]!r}, its rankfile "
                             f"places it on {run.hosts[k]!r}: the launcher did not follow the rankfile",
                             source=str(run.rankfile))
        result.update(run.wanted)
        run.result.write_text(json.dumps(result))
        out[label] = result
    return out
