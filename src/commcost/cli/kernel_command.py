"""`commcost partition` and `predict --kernel`: balanced 2D partitions and the kernels built on them (paper 000)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import add_format_option, print_json, wants_json
from commcost.cli.registry import OutputFormat, command
from commcost.workflows.kernels import KERNELS, KernelOptions, price_kernel
from commcost.workflows.options import from_namespace
from commcost.workflows.partitioning import PartitionOptions, partition


def configure_kernel_options(p: argparse.ArgumentParser, what: argparse._MutuallyExclusiveGroup) -> None:
    """Add ``--kernel`` to predict's what-to-price group and the kernel options."""
    what.add_argument("--kernel", choices=KERNELS, help="price a data-parallel kernel on --partition (paper 000)")
    k = p.add_argument_group("kernels (with --kernel)")
    k.add_argument("--partition", type=Path, help="2D distribution file (commcost partition -o, FuPerMod style)")
    k.add_argument("--iteration", type=int, help="SUMMA: price iteration K alone (with --explain: its formula)")
    k.add_argument("--steps", type=int, default=1, help="Wave2D: time steps T (default 1)")


def predict_kernel(args: argparse.Namespace, platform, spec, model, params) -> int:
    """Price a kernel on a partition (:func:`commcost.workflows.kernels.price_kernel`) and print it."""
    from commcost.report.cost_report import cost_to_dict, render_text
    from commcost.report.kernel_report import kernel_to_dict, render_kernel

    priced = price_kernel(from_namespace(KernelOptions, args), platform, spec, model, params)
    schedule, costs = priced.schedule, priced.costs
    if getattr(args, "html", None):
        _html(args, priced.part, schedule, costs, priced.mapping)
    if args.format == OutputFormat.JSON.value:
        doc = kernel_to_dict(schedule, costs)
        if args.iteration is not None:
            doc["costs"] = [cost_to_dict(c, schedule.name) for c in costs]
        print(json.dumps(doc, indent=2))
    elif args.iteration is not None and args.kernel == "summa":
        print("\n\n".join(render_text(c, schedule.name) for c in costs))
    else:
        print(render_kernel(schedule, costs, unit=args.unit))
    return 0


def _html(args: argparse.Namespace, part, schedule, costs, mapping) -> None:
    """``--html``: provenance, the partition drawn (GPU processes hatched), the cost per iteration run and per
    channel, on one page."""
    from commcost.cli.options import write_html
    from commcost.platform import RankKind
    from commcost.report.html_page import HtmlPage
    from commcost.report.kernel_report import render_kernel
    from commcost.report.partition_plot import partition_figure
    from commcost.report.provenance import run_provenance
    from commcost.report.selection_map import figure_png

    page = HtmlPage(f"commcost predict: {schedule.name} on {part.nprocs} ranks",
                    run_provenance(getattr(args, "argv", None), {"partition": args.partition,
                                                                 "platform": args.platform, "parameters": args.params}))
    page.section("Cost")
    page.table(("model", "total (s)", *(f"{c} (s, phase ends summed)" for c in costs[0].channel_time_s)),
               [[c.model, c.time_s, *c.channel_time_s.values()] for c in costs])
    page.preformatted(render_kernel(schedule, costs, unit=args.unit))
    page.section("Partition")
    kinds = ["gpu" if k == RankKind.GPU else "cpu" for k in mapping.kind]
    page.figure(figure_png(partition_figure(part, kinds=kinds)),
                f"N = {part.n} blocks over {part.nprocs} ranks: fill by node, GPU processes hatched, label: rank")
    write_html(args, page)


def _configure_partition(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layout", required=True, type=Path,
                   help="process layout file (host kind [count]) or layout table (Name M c=6 ...) with --row")
    p.add_argument("--row", help="layout table row (e.g. M10; paper 000 Table 1); needs --platform")
    p.add_argument("--platform", type=Path, help="platform file (.toml) to place a layout table row on")
    p.add_argument("--speeds", required=True, type=Path, help="speeds file: constant speeds or FPM tables")
    p.add_argument("--n", required=True, type=int, help="matrix side N in blocks")
    p.add_argument("--kb", type=int, default=32, help="block side b in elements (default 32)")
    p.add_argument("--columns", type=int, help="number of columns (default: the least sum of half-perimeters)")
    p.add_argument("-o", "--output", required=True, type=Path, help="2D distribution file to write")
    p.add_argument("--png", type=Path, help="also draw the partition to this PNG (fill: node, label: rank)")
    add_format_option(p)


@command("partition", "balance an N x N block matrix among processes by speed (FPMs) into columns (paper 000)",
         _configure_partition)
def _partition(args: argparse.Namespace) -> int:
    doc = partition(from_namespace(PartitionOptions, args))
    if wants_json(args):
        print_json(doc)
        return 0
    widths = doc["column_widths"]
    print(f"P = {doc['procs']}, N = {doc['n']} blocks of {doc['block']}x{doc['block']}: "
          f"{len(widths)} columns of widths {' '.join(map(str, widths))}; "
          f"time imbalance max/min {doc['imbalance']:.4f}; wrote {args.output}")
    if args.png:
        print(f"wrote {args.png}")
    return 0
