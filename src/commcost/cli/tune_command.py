"""``commcost tune``: calibrate -> fit -> select -> write rules files, in one command, with a short report.

1. ``commcost calibrate`` measures the MPI (the embedded Open MPI by
   default; ``--launcher`` for a cluster) and fits the models into
   ``OUT/params.toml``.
2. The platform the selection prices on is written to ``OUT/platform.toml``:
   nodes of ``--ppn`` ranks, shared memory inside a node, the measured
   network channel between nodes, contention per node.
3. For each collective, the best Open MPI algorithm (and segment size) for
   every (P, n) of the grid is selected under tau-Lop when Ring_tau was
   fitted, else Hockney; MPICH's too with ``--mpich-base`` (MPICH takes a
   selection file as its whole selection, so its picks are merged into a
   complete one).
4. ``OUT/ompi-rules.conf`` (classic, Open MPI 5.0.x+), ``OUT/ompi-rules.json``
   (Open MPI 6.0+), ``OUT/mpich-coll.json`` and a PNG map per collective are
   written, and a report printed: what was measured and fitted, the rules,
   and how far Open MPI's fixed decision is from them by the model.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

from commcost.cli.main import command, main
from commcost.errors import InputError

NETWORK_CHANNELS = ("ib", "tcp", "net")
CONVERGED_FLOOR = 0.8  # under this share of converged points tune warns (and with --strict writes nothing)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--procs", type=int, default=2, help="ranks to calibrate with (default 2)")
    p.add_argument("--out", type=Path, default=Path("run"), help="output folder (default run/)")
    p.add_argument("--budget", type=float, default=180.0, help="seconds for the whole command (default 180)")
    p.add_argument("--launcher", help="launch command for a cluster, e.g. 'srun -N 2 --ntasks-per-node 1'")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--collectives", default="bcast", help="comma list of collectives to tune (default bcast)")
    p.add_argument("--ppn", type=int, default=os.cpu_count() or 1,
                   help="ranks per node of the machine the rules are for (default: this machine's cores)")
    p.add_argument("--select-procs", default="2..1024", help="communicator sizes of the rules (default 2..1024)")
    p.add_argument("--sizes", default="1..4MiB", help="message sizes of the rules (default 1..4MiB)")
    p.add_argument("--segsizes", default="0,8KiB,32KiB,128KiB", help="segment sizes to try (decision variable)")
    p.add_argument("--mpich-base", type=Path, metavar="FILE",
                   help="complete MPICH selection file to merge MPICH's picks into (writes OUT/mpich-coll.json)")
    p.add_argument("--strict", action="store_true",
                   help=f"write no rules (exit 2) when under {CONVERGED_FLOOR:.0%} of the measured points converged")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def platform_text(ppn: int, nnodes: int, network: str) -> str:
    """The platform the selection prices on, as a platform file."""
    return (f'name = "tuned: {nnodes} nodes of {ppn} ranks"\n\n'
            f'[[node_types]]\nname = "node"\ncores = {ppn}\n\n'
            f'[[nodes]]\nname = "n{{i}}"\ntype = "node"\ncount = {nnodes}\n\n'
            '[[channels]]\nname = "shm"\nlevel = "node"\ntransfers = ["shm", "shm"]\ncontention = "node"\n\n'
            f'[[channels]]\nname = "{network}"\nlevel = "world"\ntransfers = ["{network}"]\ncontention = "node"\n\n'
            f'[mapping]\nkind = "sequential"\nppn = {ppn}\n')


@command("tune", "calibrate this MPI, select the best algorithms by model and write rules files for it",
         _configure)
def _tune(args: argparse.Namespace) -> int:
    from commcost.cli.grid_options import parse_points
    from commcost.collectives import Collective, algorithms
    from commcost.io.params_file import load_params

    started = time.monotonic()
    collectives = []
    for name in (c.strip() for c in args.collectives.split(",") if c.strip()):
        try:
            collectives.append(Collective(name))
        except ValueError:
            raise InputError(f"expected collectives among {[c.value for c in Collective]}, got {name!r}",
                             where="--collectives") from None
    procs = parse_points(args.select_procs, "--select-procs", 2)
    sizes = parse_points(args.sizes, "--sizes", 1, sizes=True)
    if args.ppn < 1:
        raise InputError(f"expected --ppn >= 1, got {args.ppn}", where="--ppn")
    reserve = 10.0 + 5.0 * len(collectives)  # selection, files and report
    if args.budget <= reserve + 10:
        raise InputError(f"expected a budget over {reserve + 10:.0f} s (calibration and selection)",
                         where="--budget")
    args.out.mkdir(parents=True, exist_ok=True)

    # 1. calibrate + fit
    calibrate = ["calibrate", "--procs", str(args.procs), "--out", str(args.out),
                 "--budget", f"{args.budget - reserve:.0f}"]
    for option in ("launcher", "mpirun"):
        if getattr(args, option):
            calibrate += [f"--{option}", getattr(args, option)]
    if args.quiet:
        calibrate.append("--quiet")
    print(f"[1/3] calibrating with {args.procs} ranks ({args.budget - reserve:.0f} s budget)", flush=True)
    code = main(calibrate)
    if code != 0:
        return code
    params_path = args.out / "params.toml"
    params = load_params(params_path)
    model = "taulop" if "taulop" in params.sections else "hockney"
    fitted = params.for_model(model)
    channels = sorted(fitted.tables if model == "taulop" else fitted.channels)
    network = next((c for c in NETWORK_CHANNELS if c in channels), None)
    if "shm" not in channels or network is None:
        raise InputError(f"the calibration fitted {model} for channels {channels}; expected shm and one of "
                         f"{list(NETWORK_CHANNELS)}", source=str(params_path))

    share = params.meta.get("converged_share")
    if isinstance(share, (int, float)) and share < CONVERGED_FLOOR:
        why = (f"only {share:.0%} of the measured points converged (95% CI within 2.5%; expected at least "
               f"{CONVERGED_FLOOR:.0%}): the machine was busy or the budget short")
        if args.strict:
            raise InputError(f"{why}; no rules written (--strict)", source=str(params_path), where="converged_share")
        print(f"  warning: {why}; the rules below rest on noisy measurements", flush=True)

    # 2. the platform of the rules
    platform_path = args.out / "platform.toml"
    platform_path.write_text(platform_text(args.ppn, max(2, math.ceil(procs[-1] / args.ppn)), network))

    # 3. select and write, per collective and library
    print(f"[2/3] selecting under {model} for {', '.join(c.value for c in collectives)}: P {args.select_procs}, "
          f"{args.ppn} per node, sizes {args.sizes}", flush=True)
    ompi, mpich, reports = [], [], []
    for collective in collectives:
        for library, bucket in (("ompi", ompi), ("mpich", mpich)):
            if library == "mpich" and not args.mpich_base:
                continue
            if not any(a.library == library for a in algorithms(collective)):
                continue
            result, text = _select_one(args, collective, library, model, params_path, platform_path, procs, sizes)
            bucket.append(result.selection)
            if library == "ompi":
                reports.append(text)
    written = []
    provenance = provenance_lines(params, params_path, model, args.ppn)
    conf = None
    if ompi:
        from commcost.io.han_rules import env_lines, mca_params_text, write_han_rules
        from commcost.io.ompi_rules import write_ompi_rules

        for fmt, name in (("classic", "ompi-rules.conf"), ("json", "ompi-rules.json")):
            write_ompi_rules(ompi, args.out / name, fmt, provenance)
            written.append(args.out / name)
        write_han_rules(ompi, args.out / "han-rules.conf", provenance)
        conf = mca_params_text(args.out / "ompi-rules.conf", args.out / "han-rules.conf", provenance)
        (args.out / "mca-params.conf").write_text(conf)
        written += [args.out / "han-rules.conf", args.out / "mca-params.conf"]
    if mpich:
        from commcost.io.mpich_json import write_mpich_json

        write_mpich_json(mpich, args.out / "mpich-coll.json", args.mpich_base)
        written.append(args.out / "mpich-coll.json")

    # 4. report
    print(f"[3/3] report ({time.monotonic() - started:.0f} s)\n")
    print(f"  measured: {args.out / 'measurements.csv'}; fitted: {params_path} ({model}: {', '.join(channels)})")
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
    return 0


def provenance_lines(params, params_path: Path, model: str, ppn: int) -> list[str]:
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


def _select_one(args, collective, library: str, model: str, params_path: Path, platform_path: Path,
                procs: list[int], sizes: list[int]):
    """One selection through the select command's own pieces; returns (result, report text)."""
    from commcost.cli.select_command import make_pricer, ompi_default_times, variables, _predicted_penalty
    from commcost.report.selection_report import plot_map, render_penalties, render_rules
    from commcost.selection.select import candidates, select

    opts = argparse.Namespace(params=params_path, platform=platform_path, model=model, library=library,
                              collective=collective.value, ppn=None, mapping=None, root=0, segsizes=args.segsizes,
                              fanouts="", radixes="")
    choices = candidates(collective, library, variables(opts))
    price = make_pricer(opts, procs)
    result = select(collective, library, choices, procs, sizes, price, source=f"commcost tune, model {model}")
    chosen = result.chosen
    title = f"{collective.value} ({library}): best algorithm by {model}"
    plot_map(args.out / f"{collective.value}-{library}-map.png", procs, sizes, chosen, title)
    text = render_rules(result.selection, title)
    default, default_s = ompi_default_times(opts, collective, procs, sizes, price, result)
    if default:
        text += "\n" + render_penalties({"Open MPI default": _predicted_penalty(default_s, result)},
                                        "  Open MPI's fixed decision, priced by the same model:")
    return result, text
