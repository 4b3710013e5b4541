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
from commcost.collectives.ompi_han import on_placement
from commcost.collectives.recorder import BYTES_PER_TRANSMISSION, ScheduleTooLarge, transmission_limit
from commcost.models import Model, PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.selection.folded_place import placed as place, placed_folded
from commcost.selection.long_pipeline import pipeline_statistic_s
from commcost.selection.round_fold import rounds_statistic_s
from commcost.selection.pipeline_price import pipeline_time_s
from commcost.platform import Mapping, Platform
from commcost.units import format_nbytes


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
               params: dict[str, int] | None = None, sweep: bool = True, phase_barriers: bool = False) -> Grid:
    """Price every (algorithm, P, size); ``sweep=False`` builds and prices each case on its own;
    ``phase_barriers`` prices every schedule with a barrier between its phases instead of its dependencies
    (what commcost did before schedules carried dependencies: a baseline for benchmarks, not a prediction)."""
    out = np.empty((len(algorithms), len(procs), len(sizes)))
    for p_index, nprocs in enumerate(procs):
        mapping = mapping_of(nprocs)
        for a_index, algorithm in enumerate(algorithms):
            mine = {k: v for k, v in (params or {}).items() if any(p.name == k for p in algorithm.params)}
            out[a_index, p_index] = price_sizes(algorithm, mine, nprocs, sizes, platform, mapping, model, root,
                                                sweep, phase_barriers=phase_barriers)
    return Grid(tuple(algorithms), tuple(procs), tuple(int(m) for m in sizes), out)


def price_sizes(algorithm: Algorithm, params: dict[str, int], nprocs: int, sizes: Sequence[int],
                platform: Platform, mapping: Mapping, model: Model, root: int = 0,
                sweep: bool = True, bound: np.ndarray | None = None, phase_barriers: bool = False,
                statistic: str = "max", refused: list[str] | None = None, element_bytes: int = 1) -> np.ndarray:
    """Seconds for one algorithm (with ``params``) on ``nprocs`` ranks at every size: one build per size
    class, one pass per class when the model can sweep (see the module docstring).

    With ``bound`` (seconds per size, e.g. the best time of other algorithms), a size where a cheap
    lower bound already reaches the bound is not priced and gets ``inf``: it cannot be the fastest. The
    bounds: a pipeline's phases each last at least one lone transmission of its last segment; a dependency
    schedule under a model with ``floor_scaled`` (tau-Lop: :mod:`commcost.models.taulop.floor`) takes at
    least the longest path of its waits at each transmission's least duration.
    An algorithm the library does not run on ``nprocs`` ranks gets ``inf`` at every size.
    ``phase_barriers``: see :func:`price_grid`. ``statistic``: the figure over ranks to predict
    (:meth:`Model.statistic_s`; ``max``, the last rank's, is the schedule's total): another one prices every
    size on its own, without bounds. A size whose schedule would exceed the recorder's limit on
    transmissions (:func:`commcost.collectives.recorder.transmission_limit`) gets ``inf`` (never picked),
    and a line saying so is appended to ``refused`` when given (as is a line beginning
    :data:`.long_pipeline.APPROXIMATE_NOTE` for a size priced by the approximate fold).
    ``element_bytes``: the call's datatype (:func:`commcost.collectives.registry.in_elements`); over 1, every
    size is built on its own (no scale units, no folded pipelines).
    """
    placed_params = on_placement(algorithm, params, mapping.node_of_rank)  # han: ppn from the placement
    if placed_params is None:  # a placement han's schedules do not describe
        return np.full(len(sizes), np.inf)
    params = placed_params
    values = algorithm.resolve_params(params)
    if not algorithm.supports(nprocs):  # Open MPI refuses it on this many ranks (two_proc on P != 2)
        return np.full(len(sizes), np.inf)
    if statistic not in ("max", ""):
        return _statistic_of_sizes(algorithm, values, nprocs, sizes, platform, mapping, model, root, statistic,
                                   refused, element_bytes)
    if element_bytes > 1:
        sweep = False
    out = np.empty(len(sizes))
    segsize = values.get("segsize", 0)
    from_tree: list[int] = []  # sizes a segmented tree pipeline prices from its tree (pipeline_price)
    if sweep and algorithm.pipelined and isinstance(model, TauLop) and segsize > 0:
        from_tree = [i for i in range(len(sizes)) if sizes[i] > segsize]
    unit = None
    if from_tree:
        unit = build(algorithm, Case(algorithm.collective, nprocs, 1, root), values).schedule
        if phase_barriers:
            unit = unit.without_dependencies()
        if unit.has_dependencies:  # pipeline_price assumes phase barriers: price the built pipeline instead
            from_tree = []
    if from_tree:
        placed = PlacedSchedule.of(unit, platform, mapping)
        laws = [law for law in model.laws_for(placed) if law is not None]  # type: ignore[attr-defined]
        for i in from_tree:
            nseg = -(-int(sizes[i]) // segsize)
            last = float(sizes[i] - (nseg - 1) * segsize)
            # every phase lasts at least one lone transmission of the last segment on the cheapest channel
            floor = (unit.nphases + nseg - 1) * min(law.time(last, 1) for law in laws)
            if bound is not None and floor >= bound[i]:
                out[i] = np.inf
                continue
            out[i] = pipeline_time_s(model, placed, nseg, float(segsize), last)  # type: ignore[arg-type]
    tree_priced = set(from_tree)
    if not phase_barriers and sweep:  # long pipelines of alike segments: from their first segments (long_pipeline)
        memo: dict = {}  # first segments shared by the sizes cut alike
        for i in range(len(sizes)):
            if i not in tree_priced:
                folded = pipeline_statistic_s(algorithm, values, nprocs, int(sizes[i]), platform, mapping, model,
                                              root, memo=memo, notes=refused,
                                              bound=None if bound is None else float(bound[i]))
                if folded is None:  # many alike rounds: from the first ones (round_fold)
                    folded = rounds_statistic_s(algorithm, values, nprocs, int(sizes[i]), platform, mapping, model,
                                                root, memo=memo)
                if folded is not None:
                    out[i] = folded
                    tree_priced.add(i)
    groups: dict[int, list[int]] = {}
    for m_index, nbytes in enumerate(sizes):
        if m_index in tree_priced:
            continue
        unit_n = algorithm.scale_unit(values, nprocs, int(nbytes)) if sweep else None
        key = unit_n if unit_n is not None else -1 - m_index
        groups.setdefault(key, []).append(m_index)
    phases_seen: dict[bytes, np.ndarray] = {}
    for key, members in groups.items():
        nbytes = key if key > 0 else int(sizes[members[0]])
        case = Case(algorithm.collective, nprocs, nbytes, root, element_bytes)
        try:
            placed = None if phase_barriers else placed_folded(algorithm, case, values, platform, mapping, model)
            schedule = placed.schedule if placed is not None else build(algorithm, case, values).schedule
        except ScheduleTooLarge:  # beyond what commcost records: never picked
            out[members] = np.inf
            _refuse(refused, algorithm, values, nprocs, [sizes[i] for i in members])
            continue
        if phase_barriers:
            schedule = schedule.without_dependencies()
        if key > 0 or schedule.has_dependencies:
            placed = placed if placed is not None else PlacedSchedule.of(schedule, platform, mapping)
            factors = np.array([sizes[i] for i in members], dtype=np.float64) / nbytes
            if bound is not None and schedule.has_dependencies and hasattr(model, "floor_scaled"):
                # branch and bound: a size whose floor reaches the bound cannot be the fastest
                hopeless = model.floor_scaled(placed, factors) >= bound[members]
                out[[i for i, h in zip(members, hopeless) if h]] = np.inf
                members = [i for i, h in zip(members, hopeless) if not h]
                factors = factors[~hopeless]
            if not members:
                continue
            if key > 0 and hasattr(model, "price_scaled"):
                out[members] = model.price_scaled(placed, factors)  # type: ignore[attr-defined]
            elif key > 0:  # one build, each size priced on it scaled, its fold and structure found once
                for i, factor in zip(members, factors):
                    one = placed.scaled(float(factor))
                    out[i] = model.total_time_s(one)
                    placed.keep_derived(one)
            else:  # a dependency schedule has no phases to share: its last end
                out[members[0]] = model.total_time_s(placed)
            continue
        # sizes whose schedules differ only in how often phases repeat (a long pipeline's steady steps)
        # share one pricing of the phases
        same = _without_repeats(schedule) if sweep else None
        phase_time = phases_seen.get(same) if same is not None else None
        if phase_time is None:
            phase_time = model.phase_times_s(PlacedSchedule.of(schedule, platform, mapping))
            if same is not None:
                phases_seen[same] = phase_time
        out[members[0]] = float(phase_time @ schedule.repeat)
    return out


def _statistic_of_sizes(algorithm: Algorithm, values: dict[str, int], nprocs: int, sizes: Sequence[int],
                        platform: Platform, mapping: Mapping, model: Model, root: int, statistic: str,
                        refused: list[str] | None = None, element_bytes: int = 1) -> np.ndarray:
    """Every size's ``statistic`` over ranks, each schedule built once per scale unit and priced on its own
    (in elements of ``element_bytes``: each size built on its own)."""
    out = np.empty(len(sizes))
    placed: dict[int, PlacedSchedule] = {}  # each unit placed once; its sizes priced on it scaled
    memo: dict = {}  # first rounds shared by the sizes cut alike
    for m_index, nbytes in enumerate(sizes):
        folded = None if element_bytes > 1 else pipeline_statistic_s(algorithm, values, nprocs, int(nbytes),
                                                                     platform, mapping, model, root, statistic,
                                                                     notes=refused)
        if folded is None and element_bytes == 1:
            folded = rounds_statistic_s(algorithm, values, nprocs, int(nbytes), platform, mapping, model, root,
                                        statistic, memo)
        if folded is not None:
            out[m_index] = folded
            continue
        unit = algorithm.scale_unit(values, nprocs, int(nbytes)) if element_bytes == 1 else None
        base = unit if unit is not None else int(nbytes)
        try:
            if base not in placed:
                case = Case(algorithm.collective, nprocs, base, root, element_bytes)
                placed[base] = place(algorithm, case, values, platform, mapping, model)
        except ScheduleTooLarge:
            out[m_index] = np.inf
            _refuse(refused, algorithm, values, nprocs, [nbytes])
            continue
        one = placed[base].scaled(nbytes / base) if base != nbytes else placed[base]
        out[m_index] = model.statistic_s(one, statistic)
        placed[base].keep_derived(one)
    return out


def _refuse(refused: list[str] | None, algorithm: Algorithm, values: dict[str, int], nprocs: int,
            sizes: Sequence[int]) -> None:
    """Say which candidate was not priced, where, and why (its schedule exceeds the limit on transmissions)."""
    if refused is not None:
        tunables = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        refused.append(f"{algorithm.key}{f'({tunables})' if tunables else ''} on {nprocs:,} ranks at "
                       f"{', '.join(f'{int(n):,}' for n in sizes)} B: more than {transmission_limit():,} "
                       f"transmissions (about {format_nbytes(transmission_limit() * BYTES_PER_TRANSMISSION)} while "
                       "priced)")


def _without_repeats(schedule) -> bytes:
    """A schedule's transmissions and phases, all but the repeat counts, as one key."""
    parts = (schedule.src, schedule.dst, schedule.nbytes, schedule.phase, schedule.posted, schedule.combine)
    if schedule.has_dependencies:
        parts += (schedule.after_ptr, schedule.after_idx)
    return b"|".join(np.ascontiguousarray(a).tobytes() for a in parts) + str(schedule.nprocs).encode()
