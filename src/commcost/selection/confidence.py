"""How far to trust a selection: each pick's margin to the runner-up, and where the model extrapolates.

A tuning file is only as good as the calibration behind it. Per (P, n) of
a :class:`~commcost.selection.select.SelectionResult`:

* the *margin*: the runner-up's predicted time over the best's, less one,
  the runner-up being the fastest candidate of another algorithm (0.03
  means it is predicted 3% slower; a pick by a margin under the model's
  error is a coin toss);
* the *region*: ``measured`` where the calibration timed this collective
  at this P and size, ``interpolated`` where P is within the calibrated
  rank count and n within the measured message sizes, ``extrapolated``
  elsewhere (larger communicators, sizes beyond the measured ones).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

REGIONS = ("measured", "interpolated", "extrapolated")


def margins(time_s: np.ndarray, algorithms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``[p, m]``: the fastest candidate of *another algorithm* over the fastest one, less one (inf where
    no other algorithm has a finite price), and the index of that runner-up (-1 where none).
    ``time_s[c, p, m]`` as in SelectionResult; ``algorithms[c]`` names candidate c's algorithm (segment
    sizes of one algorithm are variants of one pick, not rivals: where the message fits in a segment they
    tie exactly)."""
    names = np.asarray(algorithms)
    best = np.argmin(time_s, axis=0)
    rival = np.where(names[:, None, None] != names[best][None], time_s, np.inf)
    runner = np.argmin(rival, axis=0)
    second = np.take_along_axis(rival, runner[None], axis=0)[0]
    first = np.take_along_axis(time_s, best[None], axis=0)[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = second / first - 1.0
    ok = np.isfinite(first) & np.isfinite(second)
    return np.where(ok, out, np.inf), np.where(ok, runner, -1)


def regions(procs: Sequence[int], sizes: Sequence[int], calibrated_procs: int, size_range: tuple[int, int],
            measured: Iterable[tuple[int, int]] = ()) -> list[list[str]]:
    """``[p][m]``: each point's region (see the module docstring)."""
    timed = set(measured)
    lo, hi = size_range
    return [["measured" if (p, m) in timed else
             "interpolated" if p <= calibrated_procs and lo <= m <= hi else "extrapolated" for m in sizes]
            for p in procs]


def region_counts(table: list[list[str]]) -> dict[str, int]:
    """How many points of each region."""
    flat = [r for row in table for r in row]
    return {name: flat.count(name) for name in REGIONS}
