"""``commcost fit``: model parameters from a measurements CSV, with a fit report."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path

from commcost.cli.main import OutputFormat, command
from commcost.errors import InputError


def _configure(p: argparse.ArgumentParser) -> None:
    from commcost.calibration.from_measurements import FITTABLE

    p.add_argument("measurements", type=Path, help="measurements CSV (commcost calibrate / commcost import)")
    p.add_argument("--model", required=True, choices=list(FITTABLE), help="model to fit")
    p.add_argument("-o", "--out", required=True, type=Path, help="parameter file to write (.toml)")
    p.add_argument("--transfers", action="append", default=[], metavar="CHANNEL=K",
                   help="transfers per transmission of a channel for tau-Lop (default shm=2, others 1)")
    p.add_argument("--benchmark", action="append", default=[], metavar="NAME",
                   help="fit only rows of this benchmark (repeat for several), e.g. osu_latency or imb_pingpong; "
                        "default: all but streaming and crossing ones (osu_bw, imb_pingping, ...)")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])


@command("fit", "fit model parameters from a measurements CSV and write a parameter file", _configure)
def _fit(args: argparse.Namespace) -> int:
    from commcost.calibration.from_measurements import NOT_ONE_MESSAGE, benchmark_rows, fit_channels
    from commcost.io.measurements import measurement_columns, read_measurements
    from commcost.io.params_file import write_params

    transfers = {}
    for item in args.transfers:
        name, _, k = item.partition("=")
        if not name or not k.isdigit() or int(k) < 1:
            raise InputError(f"expected CHANNEL=K with K >= 1, got {item!r}", where="--transfers")
        transfers[name] = int(k)
    rows = read_measurements(args.measurements)
    if not rows:
        raise InputError("no measurements in the file", source=str(args.measurements))
    columns = measurement_columns(rows)
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
        "points": sum(f.npoints for f in fits),
        "benchmarks": benchmarks,
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "quality": {f.channel: {"points": f.npoints, "mu_mean": f.report.get("mu_mean"),
                                "mu_max": f.report.get("mu_max")} for f in fits},
    }
    write_params(args.out, {args.model: {f.channel: f.params for f in fits}}, meta)
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
    for name, count in left_out.items():
        why = NOT_ONE_MESSAGE.get(name, "not asked for with --benchmark")
        print(f"  left out: {count} rows of {name} ({why}; --benchmark {name} to fit them)")
    return 0
