"""verify's launches: each side's environment and the alternating launches that time it (:func:`measure`).

What for: :func:`commcost.workflows.verify.verify` times every planned
point once as Open MPI runs it by default (no ``OMPI_MCA_coll_*`` setting;
only the site-wide parameter file) and once with
``OMPI_MCA_mca_base_param_files=RULES_DIR/mca-params.conf`` (then the
site-wide file), in ``rounds`` launches per side, alternating (default,
rules, default, rules), so that what one launch happens to get counts as
noise instead of as a gain.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import TextIO

from commcost.workflows.verify_results import LABELS

PARAM_FILES = "OMPI_MCA_mca_base_param_files"
CHANNEL = "any"  # the rows' channel: the MPI's own mix of transports
STARTUP_S = 4.0  # kept back per launch from the budget
MIN_SHARE_S = 1.0  # seconds of measuring a launch gets at least, while any of the budget is left


def system_param_file(mpirun: str | None) -> Path | None:
    """The site-wide MCA parameter file of the Open MPI that ``mpirun`` (else ``ompi_info`` on PATH) belongs
    to, ``PREFIX/etc/openmpi-mca-params.conf``, where it exists."""
    import shutil

    program = mpirun or shutil.which("ompi_info")
    if not program:
        return None
    path = Path(program).resolve().parent.parent / "etc" / "openmpi-mca-params.conf"
    return path if path.is_file() else None


def environments(conf: Path, system: Path | None = None) -> dict[str, dict[str, str]]:
    """The launch environment of each side. Neither keeps the caller's ``OMPI_MCA_coll*`` settings or
    parameter-file list; ``default`` reads only the site-wide file ``system`` (so a copy of the rules
    already deployed as ``~/.openmpi/mca-params.conf`` does not leak into it), ``rules`` reads ``conf``
    first, then ``system``."""
    import os

    base = {k: v for k, v in os.environ.items() if not (k.startswith("OMPI_MCA_coll") or k == PARAM_FILES)}
    default = {**base, PARAM_FILES: str(system)} if system else base
    files = [str(conf.resolve())] + ([str(system)] if system else [])
    # Open MPI separates the files with commas (a colon makes one name that does not exist: silently no file)
    return {"default": default, "rules": {**base, PARAM_FILES: ",".join(files)}}


def measure(args, rules, procs: list[int], plans: dict, csv_path: Path,
            progress: TextIO | None = None) -> tuple[list[str], list[str]]:
    """Per rank count, ``args.rounds`` launches of each side, alternating (equal shares of ``args.budget``); the
    failed launches, and those the budget left no time to start (a busy machine's launches take longer than
    their share: the rounds measured stand). ``args`` also gives ``launcher``, ``mpirun`` and ``quiet`` (no
    line per measured point to ``progress``; none either where ``progress`` is None)."""
    from commcost.calibration.plan import Run
    from commcost.launch.mpi_launch import find_mpirun, launch_line, launch_retrying, run_worker, worker_args
    from commcost.io.measurements import read_measurements

    mpirun = None if args.launcher else find_mpirun(args.mpirun)
    envs = environments(rules.source, system_param_file(mpirun))
    failed: list[str] = []
    unstarted: list[str] = []
    launched: set[tuple[int, str]] = set()  # (P, side) started at least once
    started = time.monotonic()
    seen: set = set()
    rounds = args.rounds  # checked in verify

    def poll() -> None:
        if args.quiet or progress is None or not csv_path.exists():
            return
        for row in read_measurements(csv_path):
            key = (row.algorithm, row.collective, row.nbytes, row.nprocs, row.run)
            if key not in seen:
                seen.add(key)
                print(f"  {row.algorithm:<7} P={row.nprocs:<3} {row.collective:<9} {row.nbytes:>9} B  "
                      + (f"round {row.run + 1}  " if rounds > 1 else "") +
                      f"{row.time_s_median or 0:.3e} s ({row.reps} reps{'' if row.converged else ', budget out'})",
                      file=progress, flush=True)

    poll()
    launches = [(nprocs, label, r) for nprocs in procs for r in range(rounds) for label in LABELS]
    for index, (nprocs, label, run) in enumerate(launches):
        plan = plans[nprocs]
        sizes = sorted({m for ms in plan.values() for m in ms})
        calls = ",".join(":".join([c.value, *map(str, ms)]) for c, ms in plan.items())
        left = args.budget - (time.monotonic() - started)
        share = max((left - STARTUP_S * (len(launches) - index)) / (len(launches) - index), MIN_SHARE_S)
        name = f"P={nprocs} {label}" + (f" round {run + 1}" if rounds > 1 else "")
        if left < MIN_SHARE_S:
            unstarted.append(name)
            continue
        launched.add((nprocs, label))
        where = SimpleNamespace(launcher=args.launcher, procs=nprocs, channel_launcher=[])  # what launch_line reads
        line, _ = launch_line(where, mpirun, Run(("collective",), CHANNEL, procs=nprocs))
        # every rank of the rules side must get the parameter file, else it silently runs the default
        expect = ["--expect-env", f"{PARAM_FILES}={envs[label][PARAM_FILES]}"] if label == "rules" else []

        def command() -> list[str]:  # built at each launch: it says when it was launched
            return [*line, *worker_args(csv_path, CHANNEL, label, sizes, share, run, STARTUP_S), "--calls", calls,
                    *expect]
        rc = launch_retrying(lambda: run_worker(command(), envs[label], share + STARTUP_S + 4.0, poll),
                             lambda: args.budget - (time.monotonic() - started) >= MIN_SHARE_S)
        if rc == 124:  # stopped at its share: what it measured stands, the points after it have no time
            unstarted.append(f"{name} (stopped at its share of the budget)")
        elif rc != 0:
            failed.append(f"{name} (exit {rc})")
    poll()
    # a side of a rank count with no launch at all is not measured: that fails
    failed += [f"P={nprocs} {label} (no budget left)" for nprocs in procs for label in LABELS
               if (nprocs, label) not in launched]
    return failed, unstarted

