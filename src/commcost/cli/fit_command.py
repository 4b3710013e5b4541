"""``commcost fit``: model parameters from a measurements CSV, with a fit report.

Models: ``hockney``, ``loggp`` and ``taulop`` per channel from point-to-point
rows (:mod:`commcost.calibration.from_measurements`), and ``ompi_bcast_model``,
paper 004's gamma, Q and per-algorithm o, L from NBFT and broadcast + flat
gather rows (:mod:`commcost.closedform.ompi_bcast_calibration`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.registry import OutputFormat, command
from commcost.collectives.barrier import SKEW_CHOICES
from commcost.workflows.fit import (ChannelFit, CollectivesFit, FitOptions, MaxrateFit, Paper004Fit,
                                    barrier_line, fit_measurements)
from commcost.workflows.options import from_namespace
from commcost.workflows.pricing import PAPER004

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
    p.add_argument("--barrier-skew", choices=SKEW_CHOICES,
                   help="--from-collectives: price each rank's time from when the barrier before the timed call "
                        "let it go (OSU's loop), the barrier Open MPI's fixed decision runs: ompi5 (4.1 on) or "
                        "ompi4 (4.0); auto: fit without and with each, keep the least loss (three fits); "
                        "default: every rank starts together")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])


@command("fit", "fit model parameters from a measurements CSV and write a parameter file", _configure)
def _fit(args: argparse.Namespace) -> int:
    result = fit_measurements(from_namespace(FitOptions, args))
    if args.format == OutputFormat.JSON.value:
        # the per-channel and paper 004 reports may hold numpy numbers: written as floats
        plain = isinstance(result, (MaxrateFit, CollectivesFit))
        print(json.dumps(result.to_dict(), indent=2, **({} if plain else {"default": float})))
        return 0
    printer = {ChannelFit: _print_channels, MaxrateFit: _print_maxrate, Paper004Fit: _print_ompi_bcast,
               CollectivesFit: _print_collectives}[type(result)]
    printer(result)
    return 0


def _print_channels(result: ChannelFit) -> None:
    """Each channel's points, quality and values, its benchmarks and segments; the rows left out."""
    from commcost.calibration.from_measurements import NOT_ONE_MESSAGE

    options, fits = result.options, result.fits
    print(f"{options.model} fitted from {sum(f.npoints for f in fits)} points of {options.measurements} -> "
          f"{options.out}")
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
    for name, count in result.left_out.items():
        why = NOT_ONE_MESSAGE.get(name, "not asked for with --benchmark")
        print(f"  left out: {count} rows of {name} ({why}; --benchmark {name} to fit them)")
    if options.model == "loggp":
        print(f"  note: {result.meta['loggp_note']}")


def _print_maxrate(result: MaxrateFit) -> None:
    """Each channel's rows of paper 001's table, the node rate and contention, the notes."""
    report = result.report
    print(f"maxrate fitted from the ping-pong rows of {result.options.measurements} -> {result.options.out}")
    for channel, r in report["channels"].items():
        rows = ", ".join(f"{p} alpha {v['alpha_s'] * 1e6:.3f} us R_b {v['rate_bytes_per_s'] / 1e9:.3f} GB/s"
                         for p, v in r["rows"].items())
        print(f"  {channel:<6} -> {', '.join(r['localities'])} ({r['points']} points): {rows}")
    for key in ("node_rate", "contention"):
        if key in report:
            print(f"  {report[key]}")
    for note in report["notes"]:
        print(f"  note: {note}")


def _print_ompi_bcast(result: Paper004Fit) -> None:
    """Paper 004's gamma and Q with their sources, and each algorithm's fit."""
    from commcost.closedform.ompi_bcast_params import SECTION

    params, meta = result.params, result.meta
    q = params.Q if len(params.Q) > 1 else params.Q[0]
    print(f"{SECTION} fitted from {meta['points']} experiments of {result.options.measurements} -> "
          f"{result.options.out}")
    print(f"  gamma0 = {list(params.gamma0)}  gamma1 = {list(params.gamma1)}  Q = {q}")
    for name, source in result.report["sources"].items():
        print(f"    {name}: {source}")
    for f in result.fits:
        r = f.report()
        print(f"  {f.algorithm:<18} {r['points']:>3} points  mu mean {r['mu_mean']:.3f}, median {r['mu_median']:.3f}, "
              f"max {r['mu_max']:.3f}  "
              f"o0 = {r['o0_s']:.3g}, o1 = {r['o1_s']:.3g}, L0 = {r['L0_s']:.3g}, L1 = {r['L1_s']:.3g}")


def _print_collectives(result: CollectivesFit) -> None:
    """The fitted channels, what no row identifies, the quality, the per-algorithm corrections and fits."""
    fit, total = result.fit, result.total
    print(f"{fit.model} fitted to {total['points']} measured points of forced algorithms in {result.seconds:.1f} s "
          f"({fit.steps} steps, {fit.pricings} pricings of every point)")
    for channel, values in fit.params.items():
        print(f"  {channel:<6} " + "   ".join(
            f"{name} {value * 1e9:.5f} ns/B" if name.endswith("per_byte") else
            f"{name} {value:.0f}" if name.endswith("_bytes") else f"{name} {value * 1e6:.4f} us"
            for name, value in values.items()))
    if "reduction_s_per_byte" in fit.extra:
        rate = fit.extra["reduction_s_per_byte"]
        print(f"  reductions: {fit.extra.get('reduction_s', 0.0) * 1e6:.4f} us + {rate * 1e9:.5f} ns/B "
              f"({1e-9 / rate if rate > 0 else float('inf'):.2f} GB/s), written as [reduction.fitted]")
    line = barrier_line(fit.barrier_summary())
    if line:
        print(f"  {line}")
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
    for collective, main in fit.correction_choices.items():
        for choice in (main, main.one_node):
            if choice is None:
                continue
            where = "across nodes" if choice.multi_node else "on one node"
            if not choice.held_out:
                print(f"  per-algorithm correction for {collective} {where}: none ({choice.why})")
                continue
            scored = ", ".join(f"{form} {pct:.1f}%" for form, pct in choice.pct.items())
            print(f"  per-algorithm correction for {collective} {where}: {choice.form} (cross-validated: picks at "
                  f"P = {', '.join(map(str, choice.held_out))}, each with corrections fitted below it; mean "
                  f"penalty {scored}; {choice.points} points)")
    corrected = fit.per_algorithm_corrected
    print("  per algorithm (geometric mean measured/model, median |error|" +
          ("; then with the kept corrections, each point's regime's" if corrected else "") + "):")
    for key, figures in fit.per_algorithm.items():
        more = f"   {corrected[key]['mu']:7.3f}  {corrected[key]['median_abs_pct']:6.0f}%" if key in corrected else ""
        print(f"    {key:<34} {figures['mu']:7.3f}  {figures['median_abs_pct']:6.0f}%{more}  "
              f"({figures['points']} points)")
    print(f"wrote {result.options.out}")
