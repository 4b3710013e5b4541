"""``commcost tune --from-measurements``: tune on measurements a site already has, no calibration run.

Hockney is fitted to the forced collective algorithms of the measurements
(OSU sweeps, ``commcost import coltune``) on the platform they ran on; the
way of choosing is cross-validated over the measured P; then select and the
files as after a calibration (:mod:`commcost.workflows.tune_report`), and the
measured check only with a ``verify_launcher``.
"""

from __future__ import annotations

import json
import time
from typing import Callable

from commcost.errors import InputError
from commcost.workflows.tune_files import withdraw_after_check
from commcost.workflows.tune_options import TuneResult, TuneRun
from commcost.workflows.tune_report import calibration_extent, provenance_lines, select_and_write, verify_argv


def tune_from_measurements(args: TuneRun, collectives: list, procs: list[int], sizes: list[int], started: float,
                           run_step: Callable[[list[str]], int]) -> TuneResult:
    """tune on measurements a site already has: Hockney fitted to the forced collective algorithms of
    ``--from-measurements`` (:func:`commcost.workflows.fit.fit_collective_rows`), then select and the files
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
        fit = fit_collective_rows(rows, platform, "hockney", barrier=getattr(args, "barrier_skew", None))
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
    calibration = calibration_extent(args.from_measurements, params)
    platform_path = args.out / "platform.toml"  # the rules' platform: the given one, ranks placed in blocks of --ppn
    text = args.platform.read_text()
    if "[mapping]" not in text:
        text += f'\n# added by commcost tune: the rules are for {args.ppn} ranks per node\n' \
                f'[mapping]\nkind = "sequential"\nppn = {args.ppn}\n'
    platform_path.write_text(text)
    written, conf, confidence = select_and_write(args, collectives, procs, sizes, "hockney", params, params_path,
                                                 platform_path, calibration, None, sorted(fit.params), started,
                                                 args.from_measurements)
    code, checked = 0, False
    if conf is not None and args.verify_launcher and not args.no_verify:
        left = args.budget - (time.monotonic() - started) - 2.0
        print(f"\n[4/4] timing the collectives with and without {args.out / 'mca-params.conf'}", flush=True)
        code, checked = run_step(verify_argv(args, collectives, {}, left)), True
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
    return TuneResult(code, report, params, params_path, platform_path, None, conf, written, args.views, args.warnings)
