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
