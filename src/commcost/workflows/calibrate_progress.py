"""calibrate's progress: a rich bar on stderr and one line per measured point (:class:`CalibrationProgress`)."""

from __future__ import annotations

import sys
import time


def format_point(m, unit: str | None = None) -> str:
    """One measured row as calibrate prints it: channel, benchmark, size, time, repetitions, CI."""
    from commcost.units import format_nbytes, format_seconds

    ci = f"{100 * m.ci95_rel:.1f}%" if m.ci95_rel is not None else "-"
    flag = "" if m.converged else "  (budget out)"
    what = (m.collective if m.benchmark == "collective" else m.benchmark) + (
        f" {m.algorithm}" if m.algorithm else "") + (f" P={m.nprocs}" if m.benchmark in (
            "nbft", "bcast_gather", "collective") else "") + (f" tau={m.tau}" if m.tau else "")
    return (f"{m.channel:<4} {what:<28} {format_nbytes(m.nbytes):>8}  {format_seconds(m.time_s_mean, unit):>11}  "
            f"reps {m.reps or 0:>7}  ci95 {ci}{flag}")


class CalibrationProgress:
    """A rich progress bar on stderr (points done of planned, time left of the budget) and a line per point."""

    def __init__(self, total: int, budget_s: float, started: float, bar: bool, lines: bool, unit: str = "us") -> None:
        self.total, self.budget_s, self.started, self.lines = total, budget_s, started, lines
        self.unit = unit
        self.seen: set = set()
        self.bar = None
        if bar:
            try:
                from rich.console import Console
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                           TimeElapsedColumn, TimeRemainingColumn)
            except ImportError:  # rich is optional: lines only
                return
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                TextColumn("(budget: {task.fields[left]:.0f} s left)"),
                                console=Console(file=sys.stderr), transient=False,
                                redirect_stdout=sys.stdout.isatty())  # lines go where stdout goes
            self.task = self.bar.add_task("calibrating", total=total, left=budget_s)

    def __enter__(self) -> "CalibrationProgress":
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def describe(self, text: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description=text)

    def update(self, rows, planned: set) -> None:
        from commcost.calibration.plan import row_ident

        for m in rows:
            ident = row_ident(m)
            if ident not in planned or ident in self.seen:
                continue
            self.seen.add(ident)
            elapsed = time.monotonic() - self.started
            if self.lines:
                left = max(self.budget_s - elapsed, 0.0)
                print(f"  [{len(self.seen):>3}/{self.total}] {format_point(m, self.unit)}   {elapsed:5.1f} s, "
                      f"at most {left:.0f} s left", flush=True)
        if self.bar is not None:
            left = max(self.budget_s - (time.monotonic() - self.started), 0.0)
            self.bar.update(self.task, completed=len(self.seen), left=left)
