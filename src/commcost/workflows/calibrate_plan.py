"""calibrate's plan: the message sizes a budget allows, each run's share of the budget, how a run is named.

What for: :func:`commcost.workflows.calibrate.calibrate` and its dry run
decide from these what to measure and how long each mpirun may take; verify
reads ``--sizes`` with :func:`parse_sizes_option` too.
"""

from __future__ import annotations

from commcost.calibration.plan import Run
from commcost.errors import InputError

ALL_SIZES = tuple(4 ** k for k in range(12))  # 1 B .. 4 MiB
STARTUP_S = 3.0  # what one mpirun start-up and warm-up is allowed
FIT_S = 6.0  # kept back from the budget for the fits and the parameter file
GRACE_S = 4.0  # a run may overrun its share by this much before it is stopped
MIN_POINT_S = 0.25  # fewer sizes below this per-point budget
MIN_SIZES = 4
MIN_RUN_S = 0.5  # a run whose share is below this is not started


def sizes_for_budget(budget_s: float, runs: list[Run], procs: int, benchmarks: tuple[str, ...]) -> list[int]:
    """Ping-pong and Ring_tau sizes for a calibration: :func:`plan_sizes` of each channel's time per size (a
    channel's point-to-point run launched once per round)."""
    per_size = ("pingpong" in benchmarks) + procs * ("ringtau" in benchmarks)
    p2p = [r for r in runs if {"pingpong", "ringtau"} & set(r.benchmarks)]
    channels = max(1, len({r.channel for r in p2p}))
    rounds = max(1, len(p2p) // channels)
    measure = budget_s - FIT_S - STARTUP_S * len(runs)
    return plan_sizes(max(measure, 1.0) / channels / rounds / max(per_size, 1))


def parse_sizes_option(text: str) -> list[int]:
    """``--sizes 8,4KiB,1MiB``: the sizes in bytes, sorted and without repeats (calibrate and verify)."""
    from commcost.units import parse_nbytes

    try:
        sizes = sorted({int(parse_nbytes(s.strip())) for s in text.split(",") if s.strip()})
    except (InputError, ValueError):
        raise InputError(f"expected sizes in bytes separated by commas (8,4KiB,1MiB), got {text!r}",
                         where="--sizes") from None
    if not sizes:
        raise InputError("expected at least one size", where="--sizes")
    return sizes


def plan_sizes(channel_budget_s: float) -> list[int]:
    """Message sizes to measure per channel: powers of 4 from 1 B to 4 MiB, fewer if the budget is small."""
    n = int(min(len(ALL_SIZES), max(MIN_SIZES, channel_budget_s // MIN_POINT_S)))
    if n >= len(ALL_SIZES):
        return list(ALL_SIZES)
    picks = sorted({round(i * (len(ALL_SIZES) - 1) / (n - 1)) for i in range(n)})
    return [ALL_SIZES[i] for i in picks]


def run_name(run: Run) -> str:
    """How progress lines and errors name a run: channel, benchmarks, forced algorithm, round."""
    return (f"{run.channel} {','.join(run.benchmarks)}" + (f" {run.algorithm}" if run.algorithm else "")
            + (f" round {run.round + 1}" if run.round else ""))


def share(runs: list[Run], points: dict, present: set, left_s: float) -> float:
    """Seconds for the first of ``runs``: the time left, less a start-up per run, shared by points to measure.

    Only the leading runs that fit are counted (each needs a start-up and
    :data:`MIN_RUN_S`), so a small budget goes to the first runs in the
    plan (ping-pong and Ring_tau before the broadcasts), not thinly to all.
    """
    todo = [sum(1 for p in points[r] if p.ident() not in present) for r in runs]
    active = [n for n in todo if n]
    k = len(active)
    while k > 1 and left_s - STARTUP_S * k < MIN_RUN_S * k:
        k -= 1
    return (left_s - STARTUP_S * k) * todo[0] / max(sum(active[:k]), 1)

