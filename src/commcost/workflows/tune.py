"""``commcost tune`` as a function: calibrate -> fit -> select -> write rules files -> verify -> withdraw.

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
5. ``commcost verify`` times the collectives with and without the files, and
   the rules it measured slower than the default are withdrawn.

What for: a script tunes with :func:`tune` and a :class:`TuneOptions`; the
steps that run other commands (calibrate, verify) go through ``run_step``,
a callable that runs one command line (``commcost.cli.registry.run_command``
on the command line; by default a ``python -m commcost`` child process), so
this layer never imports the command line.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, TextIO

from commcost.calibration.disturbed import disturbed_warning
from commcost.errors import InputError
from commcost.launch.mpi_launch import NETWORK_CHANNELS, channel_launchers, check_launch_line, slurm_lines
from commcost.workflows.pricing import selection_model
from commcost.workflows.tune_files import withdraw_after_check
from commcost.workflows.tune_options import (CONVERGED_FLOOR, HAN_MODULES_COST, MU_BOUND, SELECT_MAX_S,
                                             SELECT_PROCS_PER_S, VERIFY_MAX_S, VERIFY_MIN_S, VERIFY_SHARE,
                                             TuneOptions, TuneResult, TuneRun)
from commcost.workflows.tune_report import (calibration_extent, doubt, platform_text, provenance_lines,
                                            select_and_write, verify_argv)

__all__ = ["TuneOptions", "TuneResult", "tune"]


def command_in_child(argv: list[str]) -> int:
    """Run one commcost command line in a child process (``python -m commcost ARGV``) and return its exit
    code: :func:`tune`'s default ``run_step`` for a script."""
    import subprocess
    import sys

    return subprocess.call([sys.executable, "-m", "commcost", *argv])


def tune(options: TuneOptions, run_step: Callable[[list[str]], int] = command_in_child,
         out: TextIO | None = None) -> TuneResult:
    """Calibrate, fit, select, write the rules files, time them and withdraw what measured slower, as
    ``options`` say; ``run_step(argv)`` runs one command (``["calibrate", ...]``, ``["verify", ...]``) and
    returns its exit code. The progress lines and the text report go to ``out`` (default: standard output).
    Bad options raise :class:`~commcost.errors.InputError` before anything is measured."""
    run = TuneRun.of(options)
    with contextlib.redirect_stdout(out) if out is not None else contextlib.nullcontext():
        return _tune_steps(run, run_step)


def _check_decision_values(args: TuneRun) -> None:
    """Parse ``--segsizes`` and han's ``--han-segsizes`` (one line naming the option where they are wrong)."""
    from commcost.workflows.select import variables
    from commcost.workflows.tune_selection import han_decision_values

    variables(SimpleNamespace(segsizes=args.segsizes, fanouts="", radixes=""))
    han_decision_values(args)


def _grid(args: TuneRun) -> tuple[list, list[int], list[int]]:
    """The collectives, communicator sizes and message sizes of the rules; the options checked."""
    from commcost.workflows.grid import parse_points
    from commcost.collectives import Collective

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
    return collectives, procs, sizes


def _budgets(args: TuneRun, collectives: list, procs: list[int]) -> tuple[float, float]:
    """(seconds kept for selection, files and report; seconds of the measured check); a budget too small for
    them is an error."""
    # selection, files and report: pricing every candidate (han under each configuration too) grows with the
    # largest P (bcast on P 2..1024: about 45-70 s on 2 cores)
    reserve = 10.0 + len(collectives) * min(SELECT_MAX_S, 5.0 + max(procs) / SELECT_PROCS_PER_S) * \
        HAN_MODULES_COST.get(getattr(args, "han_modules", "default"), 1.0)
    verify_s = 0.0 if args.no_verify else min(VERIFY_MAX_S, max(VERIFY_MIN_S, VERIFY_SHARE * args.budget))
    if args.budget <= reserve + verify_s + 10:
        raise InputError(f"expected a budget over {reserve + verify_s + 10:.0f} s (calibration, selection"
                         + ("" if args.no_verify else " and the measured check; --no-verify skips it") + ")",
                         where="--budget")
    return reserve, verify_s


def _launch_lines(args: TuneRun) -> dict[str, str]:
    """The launch line of each channel (``--nodes``: srun lines, written into ``args``); bad lines fail here,
    before anything is measured."""
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
    return launchers


def _calibrate_argv(args: TuneRun, calibrate_s: float) -> list[str]:
    """``commcost calibrate`` as tune runs it."""
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
    return calibrate


def _tune_steps(args: TuneRun, run_step: Callable[[list[str]], int]) -> TuneResult:
    started = time.monotonic()
    collectives, procs, sizes = _grid(args)
    if getattr(args, "barrier_skew", None) and args.from_measurements is None:
        raise InputError("applies only with --from-measurements (a fit of measured collectives)",
                         where="--barrier-skew")
    if args.from_measurements is not None:
        from commcost.workflows.tune_measured import tune_from_measurements

        return tune_from_measurements(args, collectives, procs, sizes, started, run_step)
    reserve, verify_s = _budgets(args, collectives, procs)
    launchers = _launch_lines(args)
    if args.mpich_base:
        from commcost.io.mpich_json import read_mpich_json

        read_mpich_json(args.mpich_base)  # a missing or broken base file fails now, not after calibrating
    if not args.dry_run:
        args.out.mkdir(parents=True, exist_ok=True)

    # 1. calibrate + fit
    calibrate_s = args.budget - reserve - verify_s
    calibrate = _calibrate_argv(args, calibrate_s)
    if args.dry_run:  # then fit, select, rules and the measured check follow from what calibrate measures
        return TuneResult(run_step([*calibrate, "--dry-run", *(["--format", "json"] if args.format == "json"
                                                               else [])]))
    print(f"[1/4] calibrating with {args.procs} ranks ({calibrate_s:.0f} s budget)", flush=True)
    code = run_step(calibrate)
    if code != 0:
        return TuneResult(code)
    params_path = args.out / "params.toml"
    params, model, channels, network, quality = _fitted(args, params_path)
    share = params.meta.get("converged_share")
    calibration = calibration_extent(args.out / "measurements.csv", params)

    # 2. the platform of the rules
    platform_path = args.out / "platform.toml"
    platform_path.write_text(platform_text(args.ppn, max(2, math.ceil(procs[-1] / args.ppn)), network))
    written, conf, confidence = select_and_write(args, collectives, procs, sizes, model, params, params_path,
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
            code, checked = run_step(verify_argv(args, collectives, launchers, left)), True
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
    return TuneResult(code, report, params, params_path, platform_path, args.out / "measurements.csv", conf,
                      written, args.views, args.warnings)


def _fitted(args: TuneRun, params_path: Path) -> tuple[Any, str, list[str], str, dict]:
    """What the calibration fitted: (the parameters, the model the selection prices under, its channels, the
    network channel, the fit's quality); tune's doubts about it said (or, with --strict, refused)."""
    from commcost.io.params_file import load_params

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
        doubt(args, f"only {share:.0%} of the measured points converged (95% CI within 2.5%; expected at least "
                    f"{CONVERGED_FLOOR:.0%}): the machine was busy or the budget short", params_path,
              "converged_share", "; the rules below rest on noisy measurements", "; the rules rest on noisy measurements")

    quality = params.meta.get("quality", {}).get(model, {})
    worst = max(((q.get("mu_mean") or 1.0, c) for c, q in quality.items() if isinstance(q, dict)), default=(1.0, ""))
    if worst[0] > MU_BOUND:
        doubt(args, f"the {model} fit of {worst[1]} is off by a mean factor mu = {worst[0]:.2f} (paper 000's "
                    f"proportional error; expected at most {MU_BOUND})", params_path,
              f"meta.quality.{model}.{worst[1]}.mu_mean", "; the model may pick wrongly", "; the model may pick wrongly")
    disturbed = params.meta.get("disturbed")
    if disturbed:
        try:
            why = disturbed_warning(disturbed)
        except InputError as exc:
            raise InputError(exc.message, source=str(params_path), where="meta.disturbed") from None
        doubt(args, why, params_path, "meta.disturbed")
    return params, model, channels, network, quality
