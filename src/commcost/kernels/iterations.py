"""Iterations of a kernel schedule: phases whose names end in the same label form one iteration.

A kernel schedule stores runs of identical iterations once: a SUMMA run
k0..k1 is phase "pbc k=k0..k1" and phase "pbr k=k0..k1", both with
``repeat = k1 - k0 + 1``; a Wave2D run is phase "halo" repeated T times.
"""

from __future__ import annotations

from commcost.schedule import Schedule


def iteration_groups(schedule: Schedule) -> list[tuple[str, list[int], int]]:
    """(label, phase indices, repeats) of each run of identical iterations, in order."""
    groups: dict[str, list[int]] = {}
    for k, name in enumerate(schedule.phase_names):
        groups.setdefault(name.split(" ", 1)[-1], []).append(k)
    return [(label, phases, int(schedule.repeat[phases[0]])) for label, phases in groups.items()]
