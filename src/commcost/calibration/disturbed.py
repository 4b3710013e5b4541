"""Single-transmission cells a calibration measured while the machine slowed single transfers down.

What for: a cell (one benchmark, channel and size) is the median of many
repetitions, so one preempted repetition does not move it, but a
disturbance that lasts as long as the cell does. On this project's 2-vCPU
VM whole stretches of a calibration measured every single transmission
(ping-pong, Ring_tau at tau = 1) 3-6x slow while Ring_tau's two concurrent
transmissions (tau = 2) stayed as fast as ever: ping-pong 1,517 us and
tau = 1 1,654 us at 4 MiB against tau = 2's 390 us, where undisturbed
launches measure about 280 us for all three. The likely cause is the host
placing both vCPUs on one core: the rank waiting for its transfer spins
beside the one copying it. A fit takes such cells as the truth, and
tau-Lop then priced a 4 MiB broadcast 6x too slow.

The test is tau-Lop's own constraint (paper 000 section 3): L(m, 1) <=
L(m, tau), one transmission is not slower than tau of them sharing the
channel. Measured times break it mildly without any disturbance, because
Open MPI's shared-memory rendezvous overlaps the handshakes of Ring_tau's
concurrent exchange (undisturbed tau = 1 cells measured up to 1.7x the
tau = 2 cell at 256 KiB-1 MiB on that VM), so a cell counts as disturbed
when it takes over :data:`SLACK` (2.5) times the fastest tau >= 2 cell of
its channel and size; the disturbed cells measured 4.2-6.4x. The ping-pong
measures the same single transmission as tau = 1 and is held to the same
bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from commcost.errors import InputError

SLACK = 2.5


@dataclass(frozen=True)
class Disturbed:
    """A single-transmission cell (``benchmark`` ``pingpong`` or ``ring_tau`` at tau = 1) measured over
    :data:`SLACK` times the fastest concurrent (tau >= 2) Ring_tau cell of its channel and size."""

    channel: str
    benchmark: str
    nbytes: int
    time_s: float
    concurrent_s: float

    @property
    def label(self) -> str:
        """``shm ring_tau tau=1 4194304 B: 1654 us against 390 us with tau >= 2``."""
        what = "ring_tau tau=1" if self.benchmark == "ring_tau" else self.benchmark
        return (f"{self.channel} {what} {self.nbytes} B: {self.time_s * 1e6:.0f} us against "
                f"{self.concurrent_s * 1e6:.0f} us with tau >= 2")

    def as_dict(self) -> dict[str, Any]:
        """For params.toml's ``[meta]`` and ``--format json``."""
        return {"channel": self.channel, "benchmark": self.benchmark, "nbytes": self.nbytes,
                "time_s": self.time_s, "concurrent_s": self.concurrent_s}


def disturbed_cells(rows: Iterable[Any]) -> list[Disturbed]:
    """The disturbed single-transmission cells of ``rows`` (measurement rows), by channel, benchmark and size.
    A cell's time is the median over its rows (its launches) of each row's ``fit_time_s``."""
    single: dict[tuple[str, str, int], list[float]] = {}
    concurrent: dict[tuple[str, int], dict[int, list[float]]] = {}
    for row in rows:
        t = row.fit_time_s
        if not (t and t > 0):
            continue
        if row.benchmark == "pingpong" or (row.benchmark == "ring_tau" and row.tau == 1):
            single.setdefault((row.channel, row.benchmark, int(row.nbytes)), []).append(t)
        elif row.benchmark == "ring_tau" and row.tau and row.tau >= 2:
            concurrent.setdefault((row.channel, int(row.nbytes)), {}).setdefault(int(row.tau), []).append(t)
    out = []
    for (channel, benchmark, nbytes), times in sorted(single.items()):
        taus = concurrent.get((channel, nbytes))
        if not taus:
            continue
        fastest = min(float(np.median(v)) for v in taus.values())
        t = float(np.median(times))
        if t > SLACK * fastest:
            out.append(Disturbed(channel, benchmark, nbytes, t, fastest))
    return out


def disturbed_warning(cells: list[Disturbed] | list[dict[str, Any]]) -> str:
    """One line for calibrate's and tune's warnings: how many cells, the worst, and what to do."""
    try:
        cells = [c if isinstance(c, Disturbed) else Disturbed(**c) for c in cells]
        worst = max(cells, key=lambda c: c.time_s / c.concurrent_s)
    except (TypeError, ValueError, ZeroDivisionError):
        raise InputError("expected a list of tables with channel, benchmark, nbytes, time_s and concurrent_s (> 0)",
                         where="meta.disturbed") from None
    return (f"{len(cells)} single-transmission cell(s) measured over {SLACK:g}x two concurrent transmissions of the "
            f"same size (worst {worst.label}): the machine slowed single transfers while calibrating (on a VM: "
            "vCPUs sharing a core?), and the fits take these cells as they are; calibrate again (--fresh), or "
            "with --rounds 3 (tune --calibration-rounds 3)")
