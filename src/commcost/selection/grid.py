"""Pricing a whole selection grid: algorithms x process counts x message sizes.

For each (algorithm, P) the sizes are grouped by the size n0 their schedule
scales from (:meth:`Algorithm.scale_unit`: 1 for Open MPI's unsegmented
trees, P for scatter-allgather with equal blocks, ...); each group is built
and placed once, at n0, and a model that can price a size sweep in one
pass (:meth:`TauLop.price_scaled`) prices the whole group at once. Sizes
with no such n0 are built and priced on their own. Both give the same
numbers (tested); the first is what makes selection tables over thousands
of cases cheap.
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
    out = np.empty((len(algorithms), len(procs), len(sizes)))
    for p_index, nprocs in enumerate(procs):
        mapping = mapping_of(nprocs)
        for a_index, algorithm in enumerate(algorithms):
            mine = {k: v for k, v in (params or {}).items() if any(p.name == k for p in algorithm.params)}
            values = algorithm.resolve_params(mine)
            groups: dict[int, list[int]] = {}
            for m_index, nbytes in enumerate(sizes):
                unit = algorithm.scale_unit(values, nprocs, int(nbytes)) if sweep else None
                key = unit if unit is not None and hasattr(model, "price_scaled") else -1 - m_index
                groups.setdefault(key, []).append(m_index)
            for key, members in groups.items():
                nbytes = key if key > 0 else int(sizes[members[0]])
                schedule = build(algorithm, Case(algorithm.collective, nprocs, nbytes, root), values).schedule
                placed = PlacedSchedule.of(schedule, platform, mapping)
                if key > 0:
                    factors = np.array([sizes[i] for i in members], dtype=np.float64) / key
                    out[a_index, p_index, members] = model.price_scaled(placed, factors)
                else:
                    out[a_index, p_index, members[0]] = model.total_time_s(placed)
    return Grid(tuple(algorithms), tuple(procs), tuple(int(m) for m in sizes), out)
