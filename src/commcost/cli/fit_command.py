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
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])


@command("fit", "fit model parameters from a measurements CSV and write a parameter file", _configure)
def _fit(args: argparse.Namespace) -> int:
    from commcost.calibration.from_measurements import fit_channels
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
        fits = fit_channels(columns, args.model, transfers)
    except InputError as exc:
        raise exc.located(source=str(args.measurements)) from None
    meta = {
        "fitted_from": str(args.measurements),
        "fitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": args.model,
        "points": sum(f.npoints for f in fits),
        "mpi": sorted({m for m in columns["mpi"].tolist() if m}),
        "host": sorted({h for h in columns["host"].tolist() if h}),
        "quality": {f.channel: {"points": f.npoints, "mu_mean": f.report.get("mu_mean"),
                                "mu_max": f.report.get("mu_max")} for f in fits},
    }
    write_params(args.out, {args.model: {f.channel: f.params for f in fits}}, meta)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"out": str(args.out), "meta": meta, "channels": {f.channel: f.report for f in fits}},
                         indent=2, default=float))
        return 0
    print(f"{args.model} fitted from {sum(f.npoints for f in fits)} points of {args.measurements} -> {args.out}")
    for f in fits:
        quality = f"mu mean {f.report.get('mu_mean', float('nan')):.3f}, max {f.report.get('mu_max', float('nan')):.3f}"
        values = ", ".join(f"{k} = {v:.4g}" for k, v in f.params.items() if isinstance(v, float))
        print(f"  {f.channel:<8} {f.npoints:>5} points  {quality}  {values}")
    return 0
