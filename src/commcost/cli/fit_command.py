"""``commcost fit``: model parameters from a measurements CSV, with a fit report.

Models: ``hockney``, ``loggp`` and ``taulop`` per channel from point-to-point
rows (:mod:`commcost.calibration.from_measurements`), and ``ompi_bcast_model``,
paper 004's gamma, Q and per-algorithm o, L from NBFT and broadcast + flat
gather rows (:mod:`commcost.closedform.ompi_bcast_calibration`).
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime, timezone
from pathlib import Path

from commcost.cli.registry import OutputFormat, command
from commcost.errors import InputError
from commcost.workflows.fit import collective_fit_sections, fit_collective_rows
from commcost.workflows.pricing import PAPER004, collectives, transfer_counts

OMPI_BCAST = PAPER004  # one name for paper 004's model in every command (was "ompi-bcast" here)


def _configure(p: argparse.ArgumentParser) -> None:
    from commcost.calibration.from_measurements import FITTABLE

    p.add_argument("measurements", type=Path, help="measurements CSV (commcost calibrate / commcost import)")
    p.add_argument("--model", required=True, choices=[*FITTABLE, "loggph", "maxrate", OMPI_BCAST],
                   help="model to fit (loggph: with --from-collectives only; maxrate: paper 001's rows from "
                        "ping-pongs per channel, --platform tells which channels are within a node)")
    p.add_argument("-o", "--out", required=True, type=Path, help="parameter file to write (.toml)")
    p.add_argument("--transfers", action="append", default=[], metavar="CHANNEL=K",
                   help="transfers per transmission of a channel for tau-Lop (default shm=2, others 1)")
    p.add_argument("--benchmark", action="append", default=[], metavar="NAME",
                   help="fit only rows of this benchmark (repeat for several), e.g. osu_latency or imb_pingpong; "
                        "default: all but streaming and crossing ones (osu_bw, imb_pingping, ...)")
    p.add_argument("--statistic", default="median", choices=["median", "mean"],
                   help="per-point time to fit: the median over repetitions (robust, default; the mean where "
                        "a row has no median) or the mean")
    p.add_argument("--shm-channel", help="ompi_bcast_model: the shared-memory channel's name (c = 0; default shm)")
    p.add_argument("--network-channel",
                   help="ompi_bcast_model: the network channel's name (c = 1; default tcp)")
    p.add_argument("--from-collectives", action="store_true",
                   help="fit to measured times of forced collective algorithms (OSU sweeps, commcost import "
                        "coltune) by pricing each algorithm's schedule: inverse calibration (hockney)")
    p.add_argument("--platform", type=Path, help="--from-collectives: the platform the rows ran on (.toml)")
    p.add_argument("--collectives", help="--from-collectives: comma list of collectives to fit on (default all)")
    p.add_argument("--max-procs", type=int, help="--from-collectives: fit only rows of at most this many ranks")
    p.add_argument("--prior-weight", type=float,
                   help="--from-collectives: how many measured points the platform's nominal channel values "
                        "(nominal_latency_s, nominal_bandwidth) weigh as priors (default 1; 0: only where no "
                        "row tells)")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])


@command("fit", "fit model parameters from a measurements CSV and write a parameter file", _configure)
def _fit(args: argparse.Namespace) -> int:
    from commcost.calibration.from_measurements import NOT_ONE_MESSAGE, benchmark_rows, fit_channels, model_section
    from commcost.io.measurements import fit_times, measurement_columns, read_measurements
    from commcost.io.params_file import write_params

    _check_mode_options(args)
    transfers = transfer_counts(args.transfers)
    rows = read_measurements(args.measurements)
    if not rows:
        raise InputError("no measurements in the file", source=str(args.measurements))
    if args.from_collectives:
        return _fit_from_collectives(args, rows)
    if args.model == "loggph":
        raise InputError("LogGPH is fitted to collective times; expected --from-collectives", where="--model")
    columns = fit_times(measurement_columns(rows), args.statistic)
    if args.model == OMPI_BCAST:
        return _fit_ompi_bcast(args, columns)
    if args.model == "maxrate":
        return _fit_maxrate(args, columns)
    try:
        left_out = benchmark_rows(columns, args.benchmark)[1]
        fits = fit_channels(columns, args.model, transfers, args.benchmark)
    except InputError as exc:
        raise exc.located(source=str(args.measurements)) from None
    benchmarks = sorted({b for f in fits for b in f.benchmarks})
    meta = {
        "fitted_from": str(args.measurements),
        "fitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": args.model,
        "statistic": args.statistic,
        "points": sum(f.npoints for f in fits),
        "benchmarks": benchmarks,
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "quality": {f.channel: {"points": f.npoints, "mu_mean": f.report.get("mu_mean"),
                                "mu_max": f.report.get("mu_max")} for f in fits},
    }
    if args.model == "loggp":  # a ping-pong identifies G and 2o + L only: no [loggph] section a model could use
        meta["loggp"] = {f.channel: f.params for f in fits}
        meta["loggp_note"] = ("ping-pong times identify G and 2o + L only; o, L and g need a measured "
                              "overhead and gap, so no [loggph] section is written")
        write_params(args.out, {}, meta)
    else:
        write_params(args.out, {args.model: model_section(args.model, fits)}, meta)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "meta": meta, "left_out": left_out,
                          "channels": {f.channel: {**f.report, "benchmarks": f.benchmarks} for f in fits}},
                         indent=2, default=float))
        return 0
    print(f"{args.model} fitted from {sum(f.npoints for f in fits)} points of {args.measurements} -> {args.out}")
    for f in fits:
        quality = f"mu mean {f.report.get('mu_mean', float('nan')):.3f}, max {f.report.get('mu_max', float('nan')):.3f}"
        values = ", ".join(f"{k} = {v:.4g}" for k, v in f.params.items() if isinstance(v, float))
        print(f"  {f.channel:<8} {f.npoints:>5} points  {quality}  {values}")
        print(f"  {'':<8} from {', '.join(f'{b} ({n})' for b, n in f.benchmarks.items())}")
        segments = f.report.get("segments", {}).get("segments", [])
        for seg in segments if len(segments) > 1 else []:  # eager / rendezvous where the data breaks
            lo, hi = seg["nbytes_range"]
            print(f"           segment {lo:>9.0f} .. {hi:>9.0f} B  alpha = {seg['params']['alpha_s']:.4g}, "
                  f"beta = {seg['params']['beta_s_per_byte']:.4g}, mu mean {seg['mu_mean']:.3f}")
    for name, count in left_out.items():
        why = NOT_ONE_MESSAGE.get(name, "not asked for with --benchmark")
        print(f"  left out: {count} rows of {name} ({why}; --benchmark {name} to fit them)")
    if args.model == "loggp":
        print(f"  note: {meta['loggp_note']}")
    return 0


def _fit_maxrate(args: argparse.Namespace, columns) -> int:
    """Paper 001's max-rate rows from ping-pongs (:mod:`commcost.calibration.fit_maxrate`)."""
    from commcost.calibration.fit_maxrate import maxrate_from_pingpongs
    from commcost.io.params_file import write_params

    platform = None
    if args.platform is not None:
        from commcost.io.platform_file import load_platform

        platform, _ = load_platform(args.platform)
        intra = {c.name for c in platform.channels if c.level == "node"}
    else:
        intra = {"shm"}
    try:
        section, report = maxrate_from_pingpongs(columns, intra, args.benchmark, platform)
    except InputError as exc:
        raise exc.located(source=str(args.measurements)) from None
    meta = {"fitted_from": str(args.measurements), "model": "maxrate",
            "fitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "method": "paper 001 Table 1's rows from per-channel Hockney fits with protocol breaks",
            "quality": report}
    write_params(args.out, {"maxrate": section}, meta)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "maxrate": section, "report": report}, indent=2))
        return 0
    print(f"maxrate fitted from the ping-pong rows of {args.measurements} -> {args.out}")
    for channel, r in report["channels"].items():
        rows = ", ".join(f"{p} alpha {v['alpha_s'] * 1e6:.3f} us R_b {v['rate_bytes_per_s'] / 1e9:.3f} GB/s"
                         for p, v in r["rows"].items())
        print(f"  {channel:<6} -> {', '.join(r['localities'])} ({r['points']} points): {rows}")
    for key in ("node_rate", "contention"):
        if key in report:
            print(f"  {report[key]}")
    for note in report["notes"]:
        print(f"  note: {note}")
    return 0


def _fit_ompi_bcast(args: argparse.Namespace, columns) -> int:
    """Paper 004: gamma and Q from NBFT rows (eq. 14-15), o and L per algorithm from bcast+gather rows (eq. 16-19)."""
    from commcost.closedform.ompi_bcast_calibration import calibrate_paper004
    from commcost.closedform.ompi_bcast_params import SECTION
    from commcost.io.params_file import write_params

    try:
        params, fits, report = calibrate_paper004(columns, shm=args.shm_channel or "shm",
                                                  network=args.network_channel or "tcp")
    except InputError as exc:
        raise exc.located(source=str(args.measurements)) from None
    meta = {
        "fitted_from": str(args.measurements),
        "fitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": SECTION, "method": "paper 004 section 5: gamma, Q from NBFTs (eq. 14-15); o, L per "
                                    "algorithm from bcast + flat gather (eq. 16-19), Huber, relative residuals",
        "statistic": args.statistic,
        "points": sum(int(f.measured_s.size) for f in fits),
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "sources": report["sources"],
        "quality": {a: {k: v for k, v in r.items() if k != "residuals_s"} for a, r in report["algorithms"].items()},
    }
    write_params(args.out, {SECTION: params.to_dict()}, meta)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "meta": meta, "params": params.to_dict(), "report": report},
                         indent=2, default=float))
        return 0
    q = params.Q if len(params.Q) > 1 else params.Q[0]
    print(f"{SECTION} fitted from {meta['points']} experiments of {args.measurements} -> {args.out}")
    print(f"  gamma0 = {list(params.gamma0)}  gamma1 = {list(params.gamma1)}  Q = {q}")
    for name, source in report["sources"].items():
        print(f"    {name}: {source}")
    for f in fits:
        r = f.report()
        print(f"  {f.algorithm:<18} {r['points']:>3} points  mu mean {r['mu_mean']:.3f}, median {r['mu_median']:.3f}, "
              f"max {r['mu_max']:.3f}  "
              f"o0 = {r['o0_s']:.3g}, o1 = {r['o1_s']:.3g}, L0 = {r['L0_s']:.3g}, L1 = {r['L1_s']:.3g}")
    return 0


def _check_mode_options(args: argparse.Namespace) -> None:
    """Refuse an option of another kind of fit (it would be ignored) and an empty or impossible value."""
    only = {"--collectives": (args.collectives, args.from_collectives, "--from-collectives"),
            "--max-procs": (args.max_procs, args.from_collectives, "--from-collectives"),
            "--prior-weight": (args.prior_weight, args.from_collectives, "--from-collectives"),
            "--platform": (args.platform, args.from_collectives or args.model == "maxrate",
                           "--from-collectives or --model maxrate"),
            "--shm-channel": (args.shm_channel, args.model == OMPI_BCAST, f"--model {OMPI_BCAST}"),
            "--network-channel": (args.network_channel, args.model == OMPI_BCAST, f"--model {OMPI_BCAST}")}
    for flag, (value, applies, mode) in only.items():
        if value is not None and not applies:
            raise InputError(f"applies only with {mode}; this fit would ignore it", where=flag)
    for flag, value in (("--shm-channel", args.shm_channel), ("--network-channel", args.network_channel)):
        if value is not None and not value.strip():
            raise InputError("expected a channel's name, got an empty one", where=flag)
    if args.prior_weight is not None and not (math.isfinite(args.prior_weight) and args.prior_weight >= 0):
        raise InputError(f"expected a number of points >= 0, got {args.prior_weight}", where="--prior-weight")
    if args.max_procs is not None and args.max_procs < 2:
        raise InputError(f"expected --max-procs >= 2 (a collective's ranks), got {args.max_procs}", where="--max-procs")
    if args.collectives is not None:
        chosen = [c.strip() for c in args.collectives.split(",") if c.strip()]
        known = [c.value for c in collectives()]
        if not chosen or any(c not in known for c in chosen):
            raise InputError(f"expected a comma list of {', '.join(known)}, got {args.collectives!r}",
                             where="--collectives")


def _fit_from_collectives(args: argparse.Namespace, rows) -> int:
    import time

    from commcost.io.params_file import write_params
    from commcost.io.platform_file import load_platform

    if args.platform is None:
        raise InputError("fitting to collective times prices schedules on a platform; expected --platform",
                         where="--platform")
    platform, _ = load_platform(args.platform)
    chosen = [c.strip() for c in args.collectives.split(",") if c.strip()] if args.collectives else None
    started = time.perf_counter()
    try:
        fit = fit_collective_rows(rows, platform, args.model, chosen, args.max_procs,
                                  prior_weight=1.0 if args.prior_weight is None else args.prior_weight)
    except InputError as exc:
        raise exc.located(source=str(args.measurements)) from None
    spent = time.perf_counter() - started
    total = fit.summary()
    meta = {"fitted_from": str(args.measurements), "method": "inverse calibration on collective times",
            "fitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "quality": {"points": total["points"], "mu": total["mu"], "median_abs_pct": total["median_abs_pct"],
                        "unidentified": fit.unidentified, "poorly_identified": fit.weak,
                        "confounded": fit.confounded,
                        "per_algorithm": fit.per_algorithm}}
    write_params(args.out, collective_fit_sections(fit), meta)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "params": fit.params, "fitted": fit.extra,
                          "assumed": fit.assumed, "unidentified": fit.unidentified,
                          "poorly_identified": fit.weak, "confounded": fit.confounded,
                          "summary": total, "per_algorithm": fit.per_algorithm, "seconds": spent,
                          "corrections": {c: {"form": v.form, "held_out_procs": list(v.held_out),
                                              "sizes": v.points, "mean_penalty_pct": v.pct,
                                              "across_nodes": v.multi_node, "why": v.why}
                                          for c, v in fit.correction_choices.items()},
                          "steps": fit.steps, "pricings": fit.pricings}, indent=2))
        return 0
    print(f"{fit.model} fitted to {total['points']} measured points of forced algorithms in {spent:.1f} s "
          f"({fit.steps} steps, {fit.pricings} pricings of every point)")
    for channel, values in fit.params.items():
        print(f"  {channel:<6} " + "   ".join(
            f"{name} {value * 1e9:.5f} ns/B" if name.endswith("per_byte") else
            f"{name} {value:.0f}" if name.endswith("_bytes") else f"{name} {value * 1e6:.4f} us"
            for name, value in values.items()))
    if "reduction_s_per_byte" in fit.extra:
        rate = fit.extra["reduction_s_per_byte"]
        print(f"  reductions: {rate * 1e9:.5f} ns/B ({1e-9 / rate if rate > 0 else float('inf'):.2f} GB/s), "
              "written as [reduction.fitted]")
    for what in fit.assumed:
        print(f"  from the platform's nominal values: {what} (no row identifies it; written as said)")
    for what in fit.unidentified:
        print(f"  not identified by these rows: {what} (no training schedule uses it; not written)")
    for what in fit.weak:
        print(f"  poorly identified: {what}")
    for what in fit.confounded:
        print(f"  not identified apart: {what}")
    print(f"  measured/model: geometric mean {total['mu']:.3f}, median |error| {total['median_abs_pct']:.0f}%, "
          f"90th percentile {total['p90_abs_pct']:.0f}%")
    for collective, choice in fit.correction_choices.items():
        if not choice.held_out:
            print(f"  per-algorithm correction for {collective}: none ({choice.why})")
            continue
        scored = ", ".join(f"{form} {pct:.1f}%" for form, pct in choice.pct.items())
        where = "across nodes" if choice.multi_node else "on one node"
        print(f"  per-algorithm correction for {collective}: {choice.form} (cross-validated {where}: picks at P = "
              f"{', '.join(map(str, choice.held_out))}, each with corrections fitted below it; mean penalty "
              f"{scored}; {choice.points} points)")
    print("  per algorithm (geometric mean measured/model, median |error|):")
    for key, figures in fit.per_algorithm.items():
        print(f"    {key:<34} {figures['mu']:7.3f}  {figures['median_abs_pct']:6.0f}%  ({figures['points']} points)")
    print(f"wrote {args.out}")
    return 0
