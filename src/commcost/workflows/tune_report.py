"""The steps ``commcost tune`` shares between its two ways in (after a calibration, or from measurements a
site already has): what the calibration covered, the rules' platform, select and write the files with the
printed report, the measured check's command line, and the files' provenance.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from commcost.calibration.plan import TIMED_COLLECTIVES
from commcost.errors import InputError
from commcost.workflows.tune_options import TuneRun


def doubt(args: TuneRun, why: str, params_path: Path, where: str, printed: str = "",
           recorded: str = "") -> None:
    """One of tune's doubts about its calibration (``why``, at ``where`` in ``params_path``): with --strict a
    one-line refusal, no rules written; else a warning line (``why`` + ``printed``) and the report's warning
    (``why`` + ``recorded``)."""
    if args.strict:
        raise InputError(f"{why}; no rules written (--strict)", source=str(params_path), where=where)
    print(f"  warning: {why}{printed}", flush=True)
    args.warnings.append(f"{why}{recorded}")


def calibration_extent(csv_path: Path, params: Any) -> dict:
    """What the calibration covered: its rank count, the measured point-to-point sizes and, per collective,
    the (P, n) it timed."""
    from commcost.io.measurements import read_measurements

    rows = read_measurements(csv_path) if csv_path.exists() else []
    p2p = [m.nbytes for m in rows if m.benchmark in ("pingpong", "ring_tau")]
    measured: dict[str, set] = {}
    for m in rows:  # commcost's own collective rows, or imported sweeps (osu_bcast, ...)
        if m.collective and (m.benchmark in ("collective", "bcast_gather") or m.benchmark.startswith(("osu_", "imb_"))):
            measured.setdefault(m.collective, set()).add((m.nprocs, m.nbytes))
    if not p2p:  # no point-to-point rows: the sizes the collectives were timed at
        p2p = [n for points in measured.values() for _, n in points]
    procs = params.meta.get("procs")
    return {"procs": procs if isinstance(procs, int) else max((m.nprocs for m in rows), default=2),
            "sizes": (min(p2p), max(p2p)) if p2p else (0, 0), "measured": measured,
            "unconverged": [{"benchmark": m.benchmark, "channel": m.channel, "nprocs": m.nprocs, "nbytes": m.nbytes,
                             "tau": m.tau, "ci95_rel": m.ci95_rel} for m in rows if m.reps and not m.converged]}


def platform_text(ppn: int, nnodes: int, network: str) -> str:
    """The platform the selection prices on, as a platform file."""
    return (f'name = "tuned: {nnodes} nodes of {ppn} ranks"\n\n'
            f'[[node_types]]\nname = "node"\ncores = {ppn}\n\n'
            f'[[nodes]]\nname = "n{{i}}"\ntype = "node"\ncount = {nnodes}\n\n'
            '[[channels]]\nname = "shm"\nlevel = "node"\ntransfers = ["shm", "shm"]\ncontention = "node"\n\n'
            f'[[channels]]\nname = "{network}"\nlevel = "world"\ntransfers = ["{network}"]\ncontention = "node"\n\n'
            f'[mapping]\nkind = "sequential"\nppn = {ppn}\n')


def select_and_write(args: TuneRun, collectives: list, procs: list[int], sizes: list[int], model: str, params: Any,
                     params_path: Path, platform_path: Path, calibration: dict, share: float | None,
                     channels: list[str], started: float, measured_path: Path) -> tuple[list[Path], str | None, dict]:
    """Steps 2 and 3 of tune: select per collective and library, write the rules files and print the report;
    returns (files written, the mca-params text or None, the confidence per selection)."""
    from commcost.workflows.tune_selection import select_one
    from commcost.collectives import algorithms

    print(f"[2/4] selecting under {model} for {', '.join(c.value for c in collectives)}: P {args.select_procs}, "
          f"{args.ppn} per node, sizes {args.sizes}", flush=True)
    ompi, mpich, reports, confidence, han_configs = [], [], [], {}, []
    args.views = []
    for collective in collectives:
        for library, bucket in (("ompi", ompi), ("mpich", mpich)):
            if library == "mpich" and not args.mpich_base:
                continue
            if not any(a.library == library for a in algorithms(collective)):
                continue
            selection, text, info, view, han_config = select_one(args, collective, library, model, params_path,
                                                                 platform_path, procs, sizes, calibration)
            args.views.append(view)
            bucket.append(selection)
            confidence[f"{collective.value}.{library}"] = info
            if library == "ompi":
                reports.append(text)
                if han_config is not None:
                    han_configs.append(han_config)
    from commcost.workflows.tune_files import write_ompi_files
    from commcost.io.han_rules import env_lines

    provenance = provenance_lines(params, params_path, model, args.ppn)
    args.deployed = (ompi, han_configs, provenance)  # what withdraw_measured_slower rewrites after the check
    written, conf = write_ompi_files(args.out, ompi, han_configs, provenance) if ompi else ([], None)
    if mpich:
        from commcost.io.mpich_json import write_mpich_json

        write_mpich_json(mpich, args.out / "mpich-coll.json", args.mpich_base)
        written.append(args.out / "mpich-coll.json")

    print(f"[3/4] report ({time.monotonic() - started:.0f} s)\n")
    print(f"  measured: {measured_path}: {params.meta.get('points', '?')} points, "
          + (f"{share:.0%} converged (95% CI within 2.5% of the mean)" if isinstance(share, (int, float)) else
             "convergence unknown"))
    print(f"  fitted: {params_path} ({model}: {', '.join(channels)})")
    print(f"  platform of the rules: {platform_path}\n")
    for text in reports:
        print(text + "\n")
    for path in written:
        print(f"  wrote {path}")
    if conf is not None:
        conf_path = (args.out / "mca-params.conf").resolve()
        print("\n  deploy (Open MPI 5: coll/han decides on several nodes, so both rules files are needed):")
        print(f"    one user:   cp {conf_path} ~/.openmpi/mca-params.conf")
        print(f"    one job:    export OMPI_MCA_mca_base_param_files={conf_path}   (mpirun, or srun with PMIx)")
        print("    or these variables (sbatch scripts too):")
        for line in env_lines(conf):
            print(f"      {line}")
    if mpich:
        print(f"       MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={args.out / 'mpich-coll.json'} mpiexec ...")

    return written, conf, confidence


def verify_argv(args: TuneRun, collectives: list, launchers: dict[str, str], budget_s: float) -> list[str]:
    """``commcost verify`` on tune's output, through the launch line the rules are for."""
    verify = ["verify", str(args.out), "--procs", args.verify_procs or str(args.procs), "--budget",
              f"{budget_s:.0f}", "--fresh",
              "--collectives", ",".join(c.value for c in collectives if c.value in TIMED_COLLECTIVES),
              "--unit", args.unit]
    launcher = args.verify_launcher or args.launcher or launchers.get("tcp")
    if launcher:
        verify += ["--launcher", launcher]
    if args.mpirun:
        verify += ["--mpirun", args.mpirun]
    if args.quiet:
        verify.append("--quiet")
    return verify


def provenance_lines(params: Any, params_path: Path, model: str, ppn: int) -> list[str]:
    """Where a rules file comes from: commcost's version, the calibrated hosts and MPI, the date, ranks per
    node, the model and the parameter file with its share of converged points."""
    from commcost import __version__

    meta = params.meta
    hosts = ", ".join(meta.get("host") or [meta.get("machine", "?")])
    mpi = ", ".join(meta.get("mpi") or ["?"])
    share = meta.get("converged_share")
    converged = f"{share:.0%} of {meta.get('points', '?')} points converged" if isinstance(share, (int, float)) else "?"
    return [f"commcost {__version__}, written {time.strftime('%Y-%m-%dT%H:%M:%S%z')}",
            f"calibrated on {hosts} at {meta.get('date', '?')} with {mpi}",
            f"{ppn} ranks per node; model {model}; parameters {params_path.resolve()} ({converged})"]
