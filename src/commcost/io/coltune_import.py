"""An ompi-collectives-tuning output folder (OSU sweeps per forced Open MPI algorithm) read as measurement rows.

The scripts of naughtont3/ompi-collectives-tuning run ``osu_<collective>``
once per coll/tuned algorithm id, process count and run, and leave::

    output/<collective>/<alg>_<P>ranks_run<k>.out     one OSU output per run
    output/<collective>/<collective>_coltune.sh       the job script: its mpirun lines
                                                      (``--map-by ppr:<N>:node``) say
                                                      how many ranks went on each node

``alg`` is the value of ``coll_tuned_<collective>_algorithm``: 0 is Open
MPI's own decision (stored as algorithm ``default``), the others coll/tuned
ids, stored by name (commcost's registry holds Open MPI 5.0's ids and names;
an id that version does not have is an error naming the file). Ranks per
node come from the job script unless given; nodes are filled in blocks (the
scripts map by core). Repeated runs stay apart as ``run`` k. Other files
(``best.out``, ``detail.out``, the decision file) are left alone.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from commcost.errors import InputError
from commcost.io.measurements import Measurement
from commcost.io.osu_import import RunContext, read_osu

OUTPUT_NAME = re.compile(r"(?P<alg>\d+)_(?P<nprocs>\d+)ranks_run(?P<run>\d+)\.out")
PPR = re.compile(r"--map-by\s+ppr:(\d+):node")
DEFAULT = "default"  # alg 0: Open MPI's own decision
OMPI_VERSIONS = ("5.0",)  # the versions whose coll/tuned ids the registry holds


def algorithm_name(collective: str, alg: int, version: str, source: str) -> str:
    """The registry's name of coll/tuned's ``alg`` for ``collective`` in Open MPI ``version`` (0: default)."""
    from commcost.collectives import Collective, algorithms

    if alg == 0:
        return DEFAULT
    if version not in OMPI_VERSIONS:
        raise InputError(f"Open MPI {version}'s algorithm ids are not known; expected one of "
                         f"{', '.join(OMPI_VERSIONS)}", where="--ompi-version")
    names = {a.id: a.name for a in algorithms(Collective(collective)) if a.library == "ompi" and a.id is not None}
    if alg not in names:
        raise InputError(f"Open MPI {version} has no {collective} algorithm {alg}; its ids are "
                         f"{', '.join(str(i) for i in sorted(names))}", source=source)
    return names[alg]


def script_ppn(folder: Path) -> int | None:
    """Ranks per node from a collective's job script (``--map-by ppr:N:node``), None without a script; scripts
    that disagree, or that place no ranks per node, are an error naming the file."""
    found: set[int] = set()
    script = None
    for script in sorted(folder.glob("*_coltune.sh")):
        found.update(int(n) for n in PPR.findall(script.read_text(errors="replace")))
    if len(found) > 1:
        raise InputError(f"the mpirun lines place {sorted(found)} ranks per node; expected one value "
                         "(give --ppn)", source=str(script))
    if script is not None and not found:
        raise InputError("no mpirun line with '--map-by ppr:N:node' to take ranks per node from; expected one "
                         "(or give --ppn)", source=str(script))
    if found and min(found) < 1:
        raise InputError("an mpirun line places 0 ranks per node ('ppr:0:node'); expected N >= 1 (or give --ppn)",
                         source=str(script))
    return found.pop() if found else None


def read_coltune(root: str | Path, ppn: int | None = None, version: str = "5.0", host: str = "",
                 mpi: str = "", collectives: list[str] | None = None,
                 notes: list[str] | None = None) -> list[Measurement]:
    """Every OSU output of the folder (``root`` itself or its ``output/``), one row per size and run."""
    from commcost.collectives import Collective

    root = Path(root)
    if not root.is_dir():
        raise InputError("expected an ompi-collectives-tuning folder (one sub-folder per collective)",
                         source=str(root))
    base = root / "output" if (root / "output").is_dir() else root
    known = {c.value for c in Collective}
    rows: list[Measurement] = []
    folders = sorted(p for p in base.iterdir() if p.is_dir() and p.name in known
                     and (collectives is None or p.name in collectives))
    others = sorted(p.name for p in base.iterdir() if p.is_dir() and p.name not in known)
    if others and notes is not None:
        notes.append(f"{base}: left out {', '.join(others)} (not collectives commcost models)")
    if not folders:
        raise InputError(f"no sub-folder named after a collective ({', '.join(sorted(known))})", source=str(base))
    for folder in folders:
        per_node = ppn if ppn is not None else script_ppn(folder)
        if per_node is None:
            raise InputError("no *_coltune.sh job script to take ranks per node from; expected --ppn",
                             source=str(folder))
        outputs = sorted(p for p in folder.iterdir() if OUTPUT_NAME.fullmatch(p.name))
        if not outputs and notes is not None:
            notes.append(f"{folder}: no <alg>_<P>ranks_run<k>.out files")
        for path in outputs:
            match = OUTPUT_NAME.fullmatch(path.name)
            nprocs = int(match["nprocs"])
            context = RunContext(collective=folder.name, nprocs=nprocs, ppn=min(per_node, nprocs),
                                 nnodes=math.ceil(nprocs / per_node), run=int(match["run"]),
                                 algorithm=algorithm_name(folder.name, int(match["alg"]), version, str(path)),
                                 mpi=mpi or None, host=host or None)
            found = read_osu(path, context, notes=notes)
            if not found and notes is not None:
                notes.append(f"{path}: no rows (the run failed?)")
            rows.extend(found)
    return rows
