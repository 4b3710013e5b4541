"""``commcost export-goal``: a schedule file or a collective algorithm as a LogGOPSim GOAL text file.

The GOAL file (:mod:`commcost.io.goal_file`) lets LogGOPSim (Hoefler,
Schneider and Lumsdaine 2010) simulate the same transmissions and waits
that commcost prices, as an independent check of a LogGP price.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commcost.cli.collective_options import add_collective_options, collective_schedule
from commcost.cli.options import add_format_option, print_json, wants_json
from commcost.cli.registry import command
from commcost.errors import InputError


def _configure(p: argparse.ArgumentParser) -> None:
    from commcost.collectives import Collective

    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--schedule", type=Path, help="schedule file (.json or .toml)")
    what.add_argument("--collective", choices=[c.value for c in Collective],
                      help="export a collective algorithm's schedule instead of a schedule file")
    p.add_argument("-o", "--output", type=Path, help="GOAL file to write (default: standard output)")
    p.add_argument("--reduce-time-per-byte", type=float, metavar="T",
                   help="give each combine (reduction) transmission a 'calc' on its receiver of nbytes x T "
                        "time units (LogGOPSim's unit; default: no calc)")
    add_collective_options(p)
    add_format_option(p, "the file written, its counts, and without -o the GOAL text as 'goal'")


@command("export-goal", "write a schedule or a collective algorithm as a LogGOPSim GOAL file", _configure)
def _export_goal(args: argparse.Namespace) -> int:
    from commcost.io.goal_file import goal_lines
    from commcost.io.schedule_file import load_schedule

    if args.collective is None:
        for flag in ("algorithm", "procs", "nbytes"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag} goes with --collective, not --schedule", where=f"--{flag}")
    schedule = load_schedule(args.schedule) if args.schedule else collective_schedule(args)[1]
    rate = args.reduce_time_per_byte
    if rate is not None and not 0 <= rate < float("inf"):
        raise InputError(f"expected a finite time per byte >= 0, got {rate}", where="--reduce-time-per-byte")
    try:
        lines = list(goal_lines(schedule, rate))  # every check done before anything is written
    except InputError as exc:
        raise exc.located(source=str(args.schedule) if args.schedule else None) from None
    text = "\n".join(lines) + "\n"
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    if wants_json(args):
        print_json({"output": None if args.output is None else str(args.output), "schedule": schedule.name,
                    "ranks": schedule.nprocs, "transmissions": schedule.transmissions_run, "lines": len(lines),
                    **({"goal": text} if args.output is None else {})})
    elif args.output is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {args.output}: {schedule.transmissions_run} transmissions on {schedule.nprocs} ranks")
    return 0
