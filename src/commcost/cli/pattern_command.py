"""``commcost predict --pattern spmv|spgemm --matrix A.mtx``: irregular exchanges of sparse kernels, per level.

Paper 001 section 5 (Fig. 10-11): the halo exchange of an SpMV or the row
exchange of an SpGEMM, on the matrix or on every level of its classical AMG
hierarchy (``--amg-levels``), split over ``--procs`` ranks
(``--partition contiguous|metis``) placed ``--ppn`` per node. Each level is
priced under ``--model``; under ``maxrate`` its time is split into the
max-rate, queue search and contention terms
(:meth:`commcost.models.maxrate.MaxRate.terms`), with the postal model of
the same parameters beside it (alpha + s / R_b by locality and protocol: no
injection limit, no queue search, no contention), the baseline the paper
improves on. ``--plot FILE.png`` draws the split as stacked bars.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.errors import InputError
from commcost.workflows.kernels import PatternOptions, price_pattern
from commcost.workflows.options import from_namespace


def configure_pattern_options(p: argparse.ArgumentParser, what: argparse._MutuallyExclusiveGroup) -> None:
    """Add ``--pattern`` to predict's what-to-price group and its options (``--procs``, ``--ppn`` and
    ``--partition`` are shared with collectives and kernels)."""
    what.add_argument("--pattern", choices=["spmv", "spgemm"],
                      help="price a sparse kernel's irregular exchange on --matrix (paper 001)")
    g = p.add_argument_group("sparse patterns (with --pattern)")
    g.add_argument("--matrix", type=Path, help="Matrix Market file (.mtx)")
    g.add_argument("--amg-levels", action="store_true",
                   help="every level of the matrix's classical (Ruge-Stuben) AMG hierarchy, as paper 001")
    g.add_argument("--value-bytes", type=int, default=8, help="bytes per matrix or vector value (default 8)")
    g.add_argument("--plot", type=Path, help="write the per-level split as a stacked-bar PNG")


def predict_pattern(args: argparse.Namespace, platform, spec, model, params) -> int:
    """Price the pattern per level (:func:`commcost.workflows.kernels.price_pattern`) and print the table (or
    JSON), and the plot when asked."""
    priced = price_pattern(from_namespace(PatternOptions, args), platform, spec, model)
    rows, partition, maxrate = priced.rows, priced.partition, priced.maxrate
    if args.plot is not None:
        _plot(rows, args, maxrate)
    if getattr(args, "html", None):
        _html(rows, args, partition, maxrate)
    if args.format == "json":
        print(json.dumps({"pattern": args.pattern, "matrix": str(args.matrix), "procs": args.procs,
                          "partition": partition, "model": args.model, "levels": rows}, indent=2))
        return 0
    _print_table(rows, args, partition, maxrate)
    return 0


def _print_table(rows: list[dict], args: argparse.Namespace, partition: str, maxrate: bool) -> None:
    from commcost.units import format_nbytes, format_seconds

    print(f"{args.pattern} of {args.matrix} on {args.procs} ranks ({partition} rows), model {args.model}")
    head = f"{'level':>5} {'rows':>8} {'messages':>9} {'max in':>6} {'bytes':>10}"
    if maxrate:
        head += f" {'max-rate':>10} {'queue':>10} {'contention':>10} {'total':>10} {'postal':>10}"
    else:
        head += f" {'time':>10}"
    print(head)
    for r in rows:
        line = (f"{r['level']:>5} {r['rows']:>8} {r['messages']:>9} {r['max_messages_received']:>6} "
                f"{format_nbytes(r['bytes']):>10}")
        keys = ("maxrate_s", "queue_s", "contention_s", "time_s", "postal_s") if maxrate else ("time_s",)
        line += "".join(f" {format_seconds(r[k], args.unit):>10}" for k in keys)
        print(line)
    if args.plot is not None:
        print(f"wrote {args.plot}")


def _figure(rows: list[dict], args: argparse.Namespace, maxrate: bool):
    """Per level, the time as stacked bars (max-rate: its three terms, paper 001 eq. 4, and postal beside)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from commcost.report.palette import style

    fig, ax = plt.subplots(figsize=(7, 4))
    x = [r["level"] for r in rows]
    if maxrate:
        bottom = [0.0] * len(rows)
        for k, (key, label) in enumerate((("maxrate_s", "max-rate"), ("queue_s", "queue search"),
                                          ("contention_s", "contention"))):
            values = [r[key] for r in rows]
            ax.bar(x, values, bottom=bottom, label=label, color=style(k).colour, edgecolor="black",
                   hatch=("", "..", "//")[k])
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.plot(x, [r["postal_s"] for r in rows], "k_", markersize=20, label="postal")
    else:
        ax.bar(x, [r["time_s"] for r in rows], label=args.model, color=style(0).colour, edgecolor="black")
    ax.set_xlabel("AMG level" if args.amg_levels else "level")
    ax.set_ylabel("time of the level's exchange (seconds)")
    ax.set_title(f"{args.pattern}, {args.procs} ranks, {args.model}")
    ax.legend()
    fig.tight_layout()
    return fig


def _html(rows: list[dict], args: argparse.Namespace, partition: str, maxrate: bool) -> None:
    """``--html``: provenance, the table per level and the picture, on one page."""
    from commcost.cli.options import write_html
    from commcost.report.html_page import HtmlPage
    from commcost.report.provenance import run_provenance
    from commcost.report.selection_map import figure_png

    page = HtmlPage(f"commcost predict: {args.pattern} of {args.matrix.name} on {args.procs} ranks",
                    run_provenance(getattr(args, "argv", None), {"matrix": args.matrix, "platform": args.platform,
                                                                 "parameters": args.params}))
    page.section("Cost per level")
    page.paragraph(f"{partition} rows, model {args.model}; times in seconds.")
    keys = ["level", "rows", "nnz", "messages", "max_messages_received", "bytes",
            *(("maxrate_s", "queue_s", "contention_s", "time_s", "postal_s") if maxrate else ("time_s",))]
    page.table(keys, [[r[k] for k in keys] for r in rows])
    page.figure(figure_png(_figure(rows, args, maxrate)), f"{args.pattern} per level under {args.model}"
                + (": the max-rate model's terms stacked, postal beside" if maxrate else ""))
    write_html(args, page)


def _plot(rows: list[dict], args: argparse.Namespace, maxrate: bool) -> None:
    import matplotlib.pyplot as plt

    fig = _figure(rows, args, maxrate)
    try:
        fig.savefig(args.plot)
    except OSError as exc:
        raise InputError(f"cannot write the plot ({exc.strerror})", source=str(args.plot)) from None
    finally:
        plt.close(fig)
