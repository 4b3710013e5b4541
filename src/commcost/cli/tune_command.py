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
import importlib
import json
import math
import os
import time
from pathlib import Path

from commcost.calibration.disturbed import disturbed_warning
from commcost.calibration.plan import TIMED_COLLECTIVES
from commcost.launch.mpi_launch import NETWORK_CHANNELS, channel_launchers, check_launch_line, slurm_lines
from commcost.cli.options import (add_format_option, add_html_option, add_unit_option, progress_stream,
    seconds_budget, write_html)
from commcost.workflows.pricing import selection_model
from commcost.cli.registry import command, run_command
from commcost.workflows.tune_files import withdraw_after_check
from commcost.errors import InputError

VERIFY_SHARE, VERIFY_MIN_S, VERIFY_MAX_S = 0.15, 15.0, 120.0  # the measured check's share of the budget
SELECT_PROCS_PER_S, SELECT_MAX_S = 20.0, 60.0  # the selection's time per collective: 5 s + P_max / 20, capped
# ... times this with han's components priced too (bcast, reduce, allreduce on P 64..384, 32 per node, 1 KiB..4 MiB:
# 37 s with han's defaults, 41 s with adapt, 126 s with adapt and sm)
HAN_MODULES_COST = {"default": 1.0, "adapt": 1.25, "all": 3.5}
CONVERGED_FLOOR = 0.8  # under this share of converged points tune warns (and with --strict writes nothing)
MU_BOUND = 1.5  # nor over this mean proportional error of the fit (paper 000's mu; 1 is exact)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--procs", type=int, default=2, help="ranks to calibrate with (default 2)")
    p.add_argument("--out", type=Path, default=Path("run"), help="output folder (default run/)")
    p.add_argument("--budget", type=seconds_budget, default=180.0, help="seconds for the whole command (default 180)")
    p.add_argument("--launcher", help="launch command for a cluster, e.g. 'srun -N 2 --ntasks-per-node 1'")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--collectives", default="bcast", help="comma list of collectives to tune (default bcast)")
    p.add_argument("--ppn", type=int, default=os.cpu_count() or 1,
                   help="ranks per node of the machine the rules are for (default: this machine's cores)")
    p.add_argument("--select-procs", default="2..1024", help="communicator sizes of the rules (default 2..1024)")
    p.add_argument("--sizes", default="1..4MiB", help="message sizes of the rules (default 1..4MiB)")
    p.add_argument("--segsizes", default="0,8KiB,32KiB,128KiB", help="segment sizes to try (decision variable)")
    p.add_argument("--han-segsizes", default="16KiB,256KiB",
                   help="coll/han segment sizes to try besides its 64KiB (one per collective is deployed, as "
                        "coll_han_<coll>_segsize; '' keeps 64KiB)")
    p.add_argument("--han-modules", choices=("all", "adapt", "default"), default="default",
                   help="also try han's other components per level for bcast, reduce and allreduce "
                        "(coll_han_<coll>_up_module/low_module): adapt between the nodes, all = adapt and sm "
                        "inside them; default: libnbc and tuned only (coll/sm measured about 0.5x where priced "
                        "0.9x to 1x on a two-node harness with 2 ranks per core)")
    p.add_argument("--calibration-rounds", type=int, default=1,
                   help="calibrate --rounds: launch every calibration run this many times (default 1)")
    p.add_argument("--mpich-base", type=Path, metavar="FILE",
                   help="complete MPICH selection file to merge MPICH's picks into (writes OUT/mpich-coll.json)")
    p.add_argument("--channel-launcher", action="append", default=[], metavar="CHANNEL=LINE",
                   help="launch command for one channel's calibration runs (repeatable), as in calibrate: "
                        "shm='mpirun -np 2 --host a:2' tcp='mpirun -np 2 --host a,b'")
    p.add_argument("--nodes", type=int,
                   help="inside a Slurm allocation: build the launch lines with srun (shm runs on one node, the "
                        "network runs across two with ranks alternating, the check on NODES x --ppn ranks)")
    p.add_argument("--verify-launcher", help="launch command of the with/without-rules timing (default: "
                                             "--launcher, else the network channel's line, else the embedded mpirun)")
    p.add_argument("--verify-procs", help="rank counts of the measured check, comma-separated (default: --procs)")
    p.add_argument("--no-verify", action="store_true", help="write the rules without timing them against the default")
    p.add_argument("--fresh", action="store_true", help="measure again what OUT/measurements.csv already holds")
    p.add_argument("--min-gain", type=_fraction, default=0.10,
                   help="keep Open MPI's default where the best pick is predicted less than this much faster "
                        "(default 10%%; 0 writes every pick)")
    add_format_option(p, "OUT/report.json (converged share, margins, regions, measured gains) at the end")
    add_unit_option(p)
    add_html_option(p)
    p.add_argument("--strict", action="store_true",
                   help=f"write no rules (exit 2) when under {CONVERGED_FLOOR:.0%}% of the measured points converged "
                        f"or the fit's mean proportional error exceeds {MU_BOUND}")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="print calibrate's plan and launch lines, then stop")
    p.add_argument("--from-measurements", type=Path, metavar="CSV",
                   help="skip calibrating: fit Hockney to the measured forced collective algorithms of CSV (OSU "
                        "sweeps, commcost import coltune) and go straight to select and the files; needs "
                        "--platform; no measured check unless --verify-launcher")
    p.add_argument("--platform", type=Path, help="--from-measurements: the platform the measurements ran on (.toml)")


def _fraction(text: str) -> float:
    """``10%`` or ``0.1`` as 0.1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 10% or 0.1, got {text!r}") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"expected a share from 0% up, got {text!r}")
    return value


def _doubt(args: argparse.Namespace, why: str, params_path: Path, where: str, printed: str = "",
           recorded: str = "") -> None:
    """One of tune's doubts about its calibration (``why``, at ``where`` in ``params_path``): with --strict a
    one-line refusal, no rules written; else a warning line (``why`` + ``printed``) and the report's warning
    (``why`` + ``recorded``)."""
    if args.strict:
        raise InputError(f"{why}; no rules written (--strict)", source=str(params_path), where=where)
    print(f"  warning: {why}{printed}", flush=True)
    args.warnings.append(f"{why}{recorded}")


def _calibration_extent(csv_path: Path, params) -> dict:
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


@command("tune", "calibrate this MPI, select the best algorithms by model and write rules files for it",
         _configure)
def _tune(args: argparse.Namespace) -> int:
    if args.format != "json" or args.dry_run:  # a dry run's JSON is calibrate's plan, printed by calibrate
        return _tune_steps(args)
    with progress_stream(args):  # progress and the text report to stderr, the JSON alone on stdout
        code = _tune_steps(args)
    report = args.out / "report.json"
    if report.exists():
        print(report.read_text(), end="")
    return code


def _check_decision_values(args: argparse.Namespace) -> None:
    """Parse ``--segsizes`` and han's ``--han-segsizes`` (one line naming the option where they are wrong)."""
    from commcost.workflows.select import variables
    from commcost.workflows.tune_selection import han_decision_values

    variables(argparse.Namespace(segsizes=args.segsizes, fanouts="", radixes=""))
    han_decision_values(args)


def _tune_steps(args: argparse.Namespace) -> int:
    from commcost.workflows.grid import parse_points
    from commcost.collectives import Collective
    from commcost.io.params_file import load_params

    started = time.monotonic()
    args.warnings = []  # what the HTML report repeats in its confidence section
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
    _check_decision_values(args)  # before anything is measured
    if args.from_measurements is not None:
        return _tune_from_measurements(args, collectives, procs, sizes, started)
    # selection, files and report: pricing every candidate (han under each configuration too) grows with the
    # largest P (bcast on P 2..1024: about 45-70 s on 2 cores)
    reserve = 10.0 + len(collectives) * min(SELECT_MAX_S, 5.0 + max(procs) / SELECT_PROCS_PER_S) * \
        HAN_MODULES_COST.get(getattr(args, "han_modules", "default"), 1.0)
    verify_s = 0.0 if args.no_verify else min(VERIFY_MAX_S, max(VERIFY_MIN_S, VERIFY_SHARE * args.budget))
    if args.budget <= reserve + verify_s + 10:
        raise InputError(f"expected a budget over {reserve + verify_s + 10:.0f} s (calibration, selection"
                         + ("" if args.no_verify else " and the measured check; --no-verify skips it") + ")",
                         where="--budget")
    if args.nodes is not None:
        if args.launcher or args.channel_launcher:
            raise InputError("--nodes builds the launch lines; expected it without --launcher/--channel-launcher",
                             where="--nodes")
        lines = slurm_lines(args.nodes, args.ppn, args.procs)
        args.channel_launcher = [f"{c}={lines[c]}" for c in ("shm", "tcp")]
        args.verify_launcher = args.verify_launcher or lines["verify"]
        args.verify_procs = args.verify_procs or str(args.nodes * args.ppn)
    launchers = channel_launchers(args.channel_launcher)  # bad lines fail here, before anything is measured
    for line in [args.launcher, args.verify_launcher, *launchers.values()]:
        check_launch_line(line)
    if args.mpich_base:
        from commcost.io.mpich_json import read_mpich_json

        read_mpich_json(args.mpich_base)  # a missing or broken base file fails now, not after calibrating
    if not args.dry_run:
        args.out.mkdir(parents=True, exist_ok=True)

    # 1. calibrate + fit
    calibrate_s = args.budget - reserve - verify_s
    for name in ("calibrate", "verify"):  # the commands this one runs, registered
        importlib.import_module(f"commcost.cli.{name}_command")
    calibrate = ["calibrate", "--procs", str(args.procs), "--out", str(args.out), "--budget", f"{calibrate_s:.0f}",
                 "--unit", args.unit]
    for option in ("launcher", "mpirun"):
        if getattr(args, option):
            calibrate += [f"--{option}", getattr(args, option)]
    for item in args.channel_launcher:
        calibrate += ["--channel-launcher", item]
    if args.quiet:
        calibrate.append("--quiet")
    if args.fresh:
        calibrate.append("--fresh")
    if args.calibration_rounds != 1:
        calibrate += ["--rounds", str(args.calibration_rounds)]
    if args.dry_run:  # then fit, select, rules and the measured check follow from what calibrate measures
        return run_command([*calibrate, "--dry-run", *(["--format", "json"] if args.format == "json" else [])])
    print(f"[1/4] calibrating with {args.procs} ranks ({calibrate_s:.0f} s budget)", flush=True)
    code = run_command(calibrate)
    if code != 0:
        return code
    params_path = args.out / "params.toml"
    params = load_params(params_path)
    model, fitted_channels = selection_model(params)
    if model is None:
        raise InputError(f"the calibration fitted {fitted_channels or 'nothing'}; expected shm and one of "
                         f"{list(NETWORK_CHANNELS)} under one model (a larger --budget?)", source=str(params_path))
    if model != "taulop" and "taulop" in fitted_channels:
        print(f"  tau-Lop fitted only {', '.join(fitted_channels['taulop'])}: selecting under Hockney", flush=True)
    channels = fitted_channels[model]
    network = next(c for c in NETWORK_CHANNELS if c in channels)

    share = params.meta.get("converged_share")
    if isinstance(share, (int, float)) and share < CONVERGED_FLOOR:
        _doubt(args, f"only {share:.0%} of the measured points converged (95% CI within 2.5%; expected at least "
                     f"{CONVERGED_FLOOR:.0%}): the machine was busy or the budget short", params_path,
               "converged_share", "; the rules below rest on noisy measurements", "; the rules rest on noisy measurements")

    quality = params.meta.get("quality", {}).get(model, {})
    worst = max(((q.get("mu_mean") or 1.0, c) for c, q in quality.items() if isinstance(q, dict)), default=(1.0, ""))
    if worst[0] > MU_BOUND:
        _doubt(args, f"the {model} fit of {worst[1]} is off by a mean factor mu = {worst[0]:.2f} (paper 000's "
                     f"proportional error; expected at most {MU_BOUND})", params_path,
               f"meta.quality.{model}.{worst[1]}.mu_mean", "; the model may pick wrongly", "; the model may pick wrongly")
    disturbed = params.meta.get("disturbed")
    if disturbed:
        try:
            why = disturbed_warning(disturbed)
        except InputError as exc:
            raise InputError(exc.message, source=str(params_path), where="meta.disturbed") from None
        _doubt(args, why, params_path, "meta.disturbed")
    calibration = _calibration_extent(args.out / "measurements.csv", params)

    # 2. the platform of the rules
    platform_path = args.out / "platform.toml"
    platform_path.write_text(platform_text(args.ppn, max(2, math.ceil(procs[-1] / args.ppn)), network))
    written, conf, confidence = _select_and_write(args, collectives, procs, sizes, model, params, params_path,
                                                  platform_path, calibration, share, channels, started,
                                                  args.out / "measurements.csv")

    # 5. the measured check: the collectives with and without the files, predicted gain beside
    code, checked = 0, False
    left = args.budget - (time.monotonic() - started) - 2.0
    if conf is not None and not args.no_verify:
        print(f"\n[4/4] timing the collectives with and without {args.out / 'mca-params.conf'} ({left:.0f} s budget)",
              flush=True)
        if left < VERIFY_MIN_S / 2:
            print("  not measured: the budget is spent (commcost verify OUT measures it later)", flush=True)
        else:
            code, checked = run_command(_verify_args(args, collectives, launchers, left)), True
    withdrawn = withdraw_after_check(args, checked)
    report = {"commcost_tune": provenance_lines(params, params_path, model, args.ppn), "model": model,
              "parameters": str(params_path.resolve()),
              "converged_share": share, "points": params.meta.get("points"),
              "unconverged": calibration["unconverged"], "fit_quality": quality, "min_gain": args.min_gain,
              "calibrated_procs": calibration["procs"], "measured_sizes": list(calibration["sizes"]),
              "selections": confidence, "files": [str(p) for p in written], "withdrawn": withdrawn}
    verified = args.out / "verify.json"
    if verified.exists() and conf is not None and not args.no_verify:
        report["verify"] = json.loads(verified.read_text())
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    _html(args, report, params, params_path, platform_path, args.out / "measurements.csv", conf, written)
    return code


def _select_and_write(args, collectives, procs, sizes, model: str, params, params_path: Path, platform_path: Path,
                      calibration: dict, share, channels, started: float, measured_path: Path):
    """Steps 2 and 3 of tune: select per collective and library, write the rules files and print the report;
    returns (files written, the mca-params text or None, the confidence per selection)."""
    from commcost.workflows.tune_selection import select_one
    from commcost.collectives import algorithms

    print(f"[2/4] selecting under {model} for {', '.join(c.value for c in collectives)}: P {args.select_procs}, "
          f"{args.ppn} per node, sizes {args.sizes}", flush=True)
    ompi, mpich, reports, confidence, args.views, han_configs = [], [], [], {}, [], []
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


def _tune_from_measurements(args, collectives, procs, sizes, started: float) -> int:
    """tune on measurements a site already has: Hockney fitted to the forced collective algorithms of
    ``--from-measurements`` (:func:`commcost.cli.fit_command.fit_collective_rows`), then select and the files
    as after a calibration; the measured check only with ``--verify-launcher``."""
    from commcost.workflows.fit import collective_fit_sections, fit_collective_rows
    from commcost.workflows.tune_selection import cross_validated_strategies
    from commcost.io.measurements import read_measurements
    from commcost.io.params_file import load_params, write_params
    from commcost.io.platform_file import load_platform

    if args.platform is None:
        raise InputError("fitting to measured collectives prices their schedules on the platform they ran on; "
                         "expected --platform", where="--platform")
    platform, _ = load_platform(args.platform)
    rows = read_measurements(args.from_measurements)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"[1/4] fitting hockney to the measured collective algorithms of {args.from_measurements}", flush=True)
    try:
        fit = fit_collective_rows(rows, platform, "hockney")
    except InputError as exc:
        raise exc.located(source=str(args.from_measurements)) from None
    missing = [c.name for c in platform.channels if c.name not in fit.params]
    if missing:
        raise InputError(f"the measurements leave channel(s) {missing} of the platform unidentified (no measured "
                         "schedule uses them: runs on one node only?); expected rows that cross nodes",
                         source=str(args.from_measurements))
    for what in fit.weak:
        print(f"  warning: poorly identified: {what}", flush=True)
        args.warnings.append(f"poorly identified by the measurements: {what}")
    for what in fit.assumed:
        print(f"  warning: {what} from the platform's nominal values (no measured row tells it)", flush=True)
        args.warnings.append(f"taken from the platform's nominal values: {what}")
    total = fit.summary()
    stamps = sorted(r.timestamp for r in rows if r.timestamp)
    meta = {"fitted_from": str(args.from_measurements.resolve()), "method": "inverse calibration on collective times",
            "host": sorted({r.host for r in rows if r.host}), "mpi": sorted({r.mpi for r in rows if r.mpi}),
            "date": stamps[-1] if stamps else "?", "points": len(rows), "procs": max(r.nprocs for r in rows),
            "quality": {"fit": {"points": total["points"], "mu": total["mu"],
                                "median_abs_pct": total["median_abs_pct"], "poorly_identified": fit.weak}}}
    params_path = args.out / "params.toml"
    write_params(params_path, collective_fit_sections(fit), meta)
    params = load_params(params_path)
    print(f"  {total['points']} points: measured/model {total['mu']:.3f} (geometric mean), median |error| "
          f"{total['median_abs_pct']:.0f}%", flush=True)
    args.strategies = cross_validated_strategies(args, collectives, platform, rows, fit)
    calibration = _calibration_extent(args.from_measurements, params)
    platform_path = args.out / "platform.toml"  # the rules' platform: the given one, ranks placed in blocks of --ppn
    text = args.platform.read_text()
    if "[mapping]" not in text:
        text += f'\n# added by commcost tune: the rules are for {args.ppn} ranks per node\n' \
                f'[mapping]\nkind = "sequential"\nppn = {args.ppn}\n'
    platform_path.write_text(text)
    written, conf, confidence = _select_and_write(args, collectives, procs, sizes, "hockney", params, params_path,
                                                  platform_path, calibration, None, sorted(fit.params), started,
                                                  args.from_measurements)
    code, checked = 0, False
    if conf is not None and args.verify_launcher and not args.no_verify:
        left = args.budget - (time.monotonic() - started) - 2.0
        print(f"\n[4/4] timing the collectives with and without {args.out / 'mca-params.conf'}", flush=True)
        code, checked = run_command(_verify_args(args, collectives, {}, left)), True
    else:
        print("\n[4/4] not timed here (the measurements came from elsewhere): run commcost verify "
              f"{args.out} on the machine", flush=True)
    report = {"commcost_tune": provenance_lines(params, params_path, "hockney", args.ppn), "model": "hockney",
              "parameters": str(params_path.resolve()), "from_measurements": str(args.from_measurements),
              "fit": {**total, "poorly_identified": fit.weak}, "min_gain": args.min_gain, "selections": confidence,
              "files": [str(p) for p in written], "withdrawn": withdraw_after_check(args, checked)}
    verified = args.out / "verify.json"
    if verified.exists() and conf is not None and args.verify_launcher and not args.no_verify:
        report["verify"] = json.loads(verified.read_text())
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    _html(args, report, params, params_path, platform_path, None, conf, written)
    return code


def _html(args, report: dict, params, params_path: Path, platform_path: Path, measurements: Path | None,
          conf: str | None, written: list[Path]) -> None:
    """``--html``: the report as one page (:func:`commcost.report.tune_page.tune_page`)."""
    if not args.html:
        return
    from commcost.io.han_rules import env_lines
    from commcost.io.measurements import fit_times, measurement_columns, read_measurements
    from commcost.report.fit_figures import hockney_residuals
    from commcost.report.provenance import run_provenance
    from commcost.report.tune_page import tune_page

    inputs = {"parameters": params_path, "platform": platform_path,
              "measurements": measurements if measurements is not None else args.from_measurements}
    deploy = {"files": [str(p) for p in written], "mca_params": conf, "env": env_lines(conf) if conf else []}
    hockney = getattr(params.sections.get("hockney"), "channels", None)
    residuals = []
    if measurements is not None and measurements.is_file() and hockney:
        residuals = hockney_residuals(fit_times(measurement_columns(read_measurements(measurements))), hockney)
    page = tune_page(report, args.views, params, provenance=run_provenance(getattr(args, "argv", None), inputs),
                     residuals=residuals, warnings=args.warnings, deploy=deploy)
    write_html(args, page)


def _verify_args(args, collectives, launchers: dict[str, str], budget_s: float) -> list[str]:
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
