"""Pricing a whole selection grid: algorithms x process counts x message sizes.

For each (algorithm, P) the schedule is built and placed once when the
algorithm's schedule scales with the message size
(:meth:`Algorithm.scales_with_size`, e.g. Open MPI's unsegmented trees),
and a model that can price a size sweep in one pass
(:meth:`TauLop.price_scaled`) prices all sizes at once. Otherwise each
case is built and priced on its own. Both give the same numbers (tested);
the first is what makes selection tables over hundreds of cases cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from commcost.collectives import Algorithm, Case, build
from commcost.models import Model, PlacedSchedule
from commcost.platform import Mapping, Platform


@dataclass(frozen=True)
class Grid:
    """``time_s[a, p, m]``: algorithm a, process count procs[p], message size sizes[m]."""

    algorithms: tuple[Algorithm, ...]
    procs: tuple[int, ...]
    sizes: tuple[int, ...]
    time_s: np.ndarray

    def best(self) -> np.ndarray:
        """Index of the fastest algorithm for every (P, m)."""
        return np.argmin(self.time_s, axis=0)


def price_grid(algorithms: Sequence[Algorithm], procs: Sequence[int], sizes: Sequence[int], platform: Platform,
               mapping_of: Callable[[int], Mapping], model: Model, root: int = 0,
               params: dict[str, int] | None = None, sweep: bool = True) -> Grid:
    """Price every (algorithm, P, size); ``sweep=False`` builds and prices each case on its own."""
    sizes_arr = np.asarray(sizes, dtype=np.float64)
    out = np.empty((len(algorithms), len(procs), len(sizes)))
    for p_index, nprocs in enumerate(procs):
        mapping = mapping_of(nprocs)
        for a_index, algorithm in enumerate(algorithms):
            mine = {k: v for k, v in (params or {}).items() if any(p.name == k for p in algorithm.params)}
            values = algorithm.resolve_params(mine)
            if sweep and algorithm.scales_with_size(values) and hasattr(model, "price_scaled") and min(sizes) > 0:
                unit = build(algorithm, Case(algorithm.collective, nprocs, 1, root), values).schedule
                placed = PlacedSchedule.of(unit, platform, mapping)
                out[a_index, p_index] = model.price_scaled(placed, sizes_arr)
                continue
            for m_index, nbytes in enumerate(sizes):
                schedule = build(algorithm, Case(algorithm.collective, nprocs, int(nbytes), root), values).schedule
                out[a_index, p_index, m_index] = model.total_time_s(PlacedSchedule.of(schedule, platform, mapping))
    return Grid(tuple(algorithms), tuple(procs), tuple(int(m) for m in sizes), out)
