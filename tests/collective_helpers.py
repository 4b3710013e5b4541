"""Helpers the collective tests share: build with payloads and check, and list phases."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check


@lru_cache(maxsize=1)
def ompi_info_algorithms() -> dict[str, dict[int, str]]:
    """``coll_tuned_<collective>_algorithm``'s "Valid values" (id -> name, 0 "ignore" included) from the
    embedded ``ompi_info --param coll tuned --level 9`` (beside this Python, else on PATH); skip if missing."""
    beside = Path(sys.executable).parent / "ompi_info"
    exe = str(beside) if beside.is_file() else shutil.which("ompi_info")
    if exe is None:
        pytest.skip("ompi_info is not installed")
    text = subprocess.run([exe, "--param", "coll", "tuned", "--level", "9"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    valid: dict[str, dict[int, str]] = {}
    for match in re.finditer(r'"coll_tuned_(\w+?)_algorithm".*?Valid values: ([^\n]+)', text, re.S):
        pairs = (item.strip().split("|") for item in match.group(2).split(","))
        valid[match.group(1)] = {int(i): name for i, name in pairs}
    return valid


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


def waits_of(cs) -> dict[tuple, list[tuple]]:
    """``{(src, dst, payload): [(src, dst, payload) it waits for, ...]}`` of a dependency schedule built with
    payloads; the payload tells segments apart (each key must be unique)."""
    s = cs.schedule
    key = [(int(s.src[i]), int(s.dst[i]), cs.payload[i]) for i in range(s.ntransmissions)]
    assert len(set(key)) == len(key), "two transmissions carry the same bytes between the same ranks"
    return {key[i]: sorted(key[j] for j in s.after(i)) for i in range(s.ntransmissions)}


def hockney_path(schedule, t: float = 1.0) -> float:
    """Critical path of a dependency schedule when every message takes ``t``: transmission i starts once
    every one it waits for has ended and its sender's previous send (in array order) has ended."""
    end = [0.0] * schedule.ntransmissions
    last: dict[int, float] = {}
    for i in range(schedule.ntransmissions):
        src = int(schedule.src[i])
        start = max([last.get(src, 0.0)] + [end[j] for j in schedule.after(i).tolist()])
        end[i] = last[src] = start + t
    return max(end, default=0.0)


def edges_of(cs) -> list[tuple[int, int, float]]:
    """(src, dst, nbytes) of every transmission, in recorded order."""
    s = cs.schedule
    return list(zip(s.src.tolist(), s.dst.tolist(), s.nbytes.tolist()))


def waited_by(cs) -> dict[int, set[int]]:
    """The transmissions each transmission waits for, by id."""
    s = cs.schedule
    return {i: set(s.after_idx[s.after_ptr[i]:s.after_ptr[i + 1]].tolist()) for i in range(s.ntransmissions)}
