"""`commcost partition` and `predict --kernel`: balanced 2D partitions and the kernels built on them (paper 000)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import add_format_option, print_json, wants_json
from commcost.cli.registry import OutputFormat, command
from commcost.errors import InputError

KERNELS = ("summa", "wave2d")


def configure_kernel_options(p: argparse.ArgumentParser, what: argparse._MutuallyExclusiveGroup) -> None:
    """Add ``--kernel`` to predict's what-to-price group and the kernel options."""
    what.add_argument("--kernel", choices=KERNELS, help="price a data-parallel kernel on --partition (paper 000)")
    k = p.add_argument_group("kernels (with --kernel)")
    k.add_argument("--partition", type=Path, help="2D distribution file (commcost partition -o, FuPerMod style)")
    k.add_argument("--iteration", type=int, help="SUMMA: price iteration K alone (with --explain: its formula)")
    k.add_argument("--steps", type=int, default=1, help="Wave2D: time steps T (default 1)")


def kernel_schedule(args: argparse.Namespace, part):
    """The schedule --kernel asks for on a partition."""
    from commcost.kernels import summa, summa_iteration, wave2d

    if args.kernel == "summa":
        if args.iteration is None:
            return summa(part)
        if not 0 <= args.iteration < part.n:
            raise InputError(f"expected an iteration in 0..{part.n - 1}, got {args.iteration}", where="--iteration")
        return summa_iteration(part, args.iteration)
    if args.steps < 1:
        raise InputError(f"expected --steps >= 1, got {args.steps}", where="--steps")
    return wave2d(part, args.steps)


def predict_kernel(args: argparse.Namespace, platform, spec, model, params) -> int:
    """Price a kernel on a partition; for hloggp also under paper 000's kernel rule."""
    from commcost.workflows.pricing import load_mapping, price_placed
    from commcost.closedform import hloggp_kernels
    from commcost.io.partition_file import read_partition
    from commcost.models import PlacedSchedule
    from commcost.platform import Mapping
    from commcost.report.cost_report import cost_to_dict, render_text
    from commcost.report.kernel_report import kernel_to_dict, render_kernel

    if args.partition is None:
        raise InputError("--kernel needs --partition FILE", where="--partition")
    part = read_partition(args.partition)
    schedule = kernel_schedule(args, part)
    if args.mapping:
        mapping = load_mapping(args, platform, spec, part.nprocs)
    else:
        try:
            mapping = Mapping.from_node_names(platform, list(part.hosts))
        except InputError as exc:
            raise exc.located(source=str(args.partition), where="host") from None
    costs = [price_placed(args, schedule, platform, mapping, model)]
    if args.model == "hloggp":
        try:
            costs.append(hloggp_kernels.price(PlacedSchedule.of(schedule, platform, mapping),
                                              params.for_model("hloggp")))
        except InputError as exc:
            raise exc.located(source=str(args.params)) from None
    if getattr(args, "html", None):
        _html(args, part, schedule, costs, mapping)
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


def load_processes(args: argparse.Namespace):
    """The processes of --layout: a process layout file, or a layout table row placed on --platform."""
    from commcost.io.layout_file import read_layout_table
    from commcost.io.platform_file import load_platform
    from commcost.io.process_layout_file import is_layout_table, read_process_layout
    from commcost.partition.processes import processes_of_mapping
    from commcost.platform.layout import place_layout

    if not is_layout_table(args.layout):
        if args.row:
            raise InputError("--row applies to a layout table (Name M c=K ...); this is a process layout file",
                             source=str(args.layout))
        return read_process_layout(args.layout)
    if not args.row or not args.platform:
        raise InputError("a layout table needs --row NAME and --platform FILE", source=str(args.layout))
    rows = read_layout_table(args.layout)
    if args.row not in rows:
        raise InputError(f"no layout {args.row!r}; expected one of {', '.join(rows)}", where="--row")
    platform, _ = load_platform(args.platform)
    try:
        return processes_of_mapping(platform, place_layout(platform, rows[args.row]))
    except InputError as exc:
        raise exc.located(source=str(args.layout), where=args.row) from None


@command("partition", "balance an N x N block matrix among processes by speed (FPMs) into columns (paper 000)",
         _configure_partition)
def _partition(args: argparse.Namespace) -> int:
    from commcost.io.partition_file import write_partition
    from commcost.io.speeds_file import read_speeds
    from commcost.partition import balance, column_partition, imbalance
    from commcost.partition.processes import speeds_of

    processes = load_processes(args)
    table = read_speeds(args.speeds)
    try:
        fpms = speeds_of(processes, table)
    except InputError as exc:
        raise exc.located(source=str(args.speeds)) from None
    if args.n < 1 or args.kb < 1:
        raise InputError(f"expected --n >= 1 and --kb >= 1, got {args.n} and {args.kb}", where="--n")
    units = balance(fpms, float(args.n * args.n))
    try:
        part = column_partition(units, args.n, [p.host for p in processes], args.kb, args.columns)
    except InputError as exc:
        raise exc.located(where="--n" if args.columns is None else "--columns") from None
    write_partition(part, args.output)
    widths = [int(part.w[part.x == x][0]) for x in sorted(set(part.x.tolist()))]
    if args.png:
        from commcost.report.partition_plot import plot_partition

        plot_partition(part, args.png, kinds=[p.kind for p in processes])
    if wants_json(args):
        print_json({"output": str(args.output), "png": None if args.png is None else str(args.png),
                    "procs": part.nprocs, "n": part.n, "block": part.block, "column_widths": widths,
                    "imbalance": float(imbalance(fpms, part.area)),
                    "processes": [{"rank": i, "host": p.host, "area": float(a)}
                                  for i, (p, a) in enumerate(zip(processes, part.area))]})
        return 0
    print(f"P = {part.nprocs}, N = {part.n} blocks of {part.block}x{part.block}: "
          f"{len(widths)} columns of widths {' '.join(map(str, widths))}; "
          f"time imbalance max/min {imbalance(fpms, part.area):.4f}; wrote {args.output}")
    if args.png:
        print(f"wrote {args.png}")
    return 0
