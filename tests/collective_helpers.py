"""Helpers the collective tests share: build with payloads and check, and list phases."""

from __future__ import annotations

from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check


def run(collective: Collective, name: str, nprocs: int, nbytes: int, root: int = 0, **params: int):
    """Build ``name`` with payloads, run the data-flow checker, return the CollectiveSchedule."""
    cs = build(find(collective, name), Case(collective, nprocs, nbytes, root), params, data=True)
    check(cs)
    return cs


def phases(cs) -> list[list[tuple[int, int, tuple]]]:
    """``[[(src, dst, payload), ...] per phase]``."""
    s = cs.schedule
    return [[(int(s.src[i]), int(s.dst[i]), cs.payload[i]) for i in range(sl.start, sl.stop)]
            for sl in s.phase_slices()]
