"""Balance an N x N block matrix among processes by their speeds into columns (paper 000): what
``commcost partition`` computes and writes.

The processes come from a process layout file, or from a row of a layout
table placed on a platform (:func:`load_processes`); their speeds (constant
or FPM tables) set each one's area (:func:`commcost.partition.balance`), and
:func:`commcost.partition.column_partition` arranges the areas in columns.
:func:`partition` writes the 2D distribution file (and a PNG when asked)
and returns what ``--format json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commcost.errors import InputError


@dataclass
class PartitionOptions:
    """What ``commcost partition`` balances and where it writes (its options, by their argparse names)."""

    layout: Path | None = None
    row: str | None = None
    platform: Path | None = None
    speeds: Path | None = None
    n: int = 0
    kb: int = 32
    columns: int | None = None
    output: Path | None = None
    png: Path | None = None


def load_processes(options: PartitionOptions):
    """The processes of --layout: a process layout file, or a layout table row placed on --platform."""
    from commcost.io.layout_file import read_layout_table
    from commcost.io.platform_file import load_platform
    from commcost.io.process_layout_file import is_layout_table, read_process_layout
    from commcost.partition.processes import processes_of_mapping
    from commcost.platform.layout import place_layout

    if not is_layout_table(options.layout):
        if options.row:
            raise InputError("--row applies to a layout table (Name M c=K ...); this is a process layout file",
                             source=str(options.layout))
        return read_process_layout(options.layout)
    if not options.row or not options.platform:
        raise InputError("a layout table needs --row NAME and --platform FILE", source=str(options.layout))
    rows = read_layout_table(options.layout)
    if options.row not in rows:
        raise InputError(f"no layout {options.row!r}; expected one of {', '.join(rows)}", where="--row")
    platform, _ = load_platform(options.platform)
    try:
        return processes_of_mapping(platform, place_layout(platform, rows[options.row]))
    except InputError as exc:
        raise exc.located(source=str(options.layout), where=options.row) from None


def partition(options: PartitionOptions) -> dict[str, Any]:
    """Balance, arrange in columns, write ``output`` (and ``png``); the partition's summary: its file, ranks,
    N, block side, column widths, time imbalance and each process's host and area."""
    from commcost.io.partition_file import write_partition
    from commcost.io.speeds_file import read_speeds
    from commcost.partition import balance, column_partition, imbalance
    from commcost.partition.processes import speeds_of

    processes = load_processes(options)
    table = read_speeds(options.speeds)
    try:
        fpms = speeds_of(processes, table)
    except InputError as exc:
        raise exc.located(source=str(options.speeds)) from None
    if options.n < 1 or options.kb < 1:
        raise InputError(f"expected --n >= 1 and --kb >= 1, got {options.n} and {options.kb}", where="--n")
    units = balance(fpms, float(options.n * options.n))
    try:
        part = column_partition(units, options.n, [p.host for p in processes], options.kb, options.columns)
    except InputError as exc:
        raise exc.located(where="--n" if options.columns is None else "--columns") from None
    write_partition(part, options.output)
    widths = [int(part.w[part.x == x][0]) for x in sorted(set(part.x.tolist()))]
    if options.png:
        from commcost.report.partition_plot import plot_partition

        plot_partition(part, options.png, kinds=[p.kind for p in processes])
    return {"output": str(options.output), "png": None if options.png is None else str(options.png),
            "procs": part.nprocs, "n": part.n, "block": part.block, "column_widths": widths,
            "imbalance": float(imbalance(fpms, part.area)),
            "processes": [{"rank": i, "host": p.host, "area": float(a)}
                          for i, (p, a) in enumerate(zip(processes, part.area))]}
