"""Local search for the rank-to-node placement that minimizes a schedule's predicted time.

The placement is ``node_of_rank`` (an array: the node index of each rank)
under per-node capacities (ranks a node may hold). The search prices
placements through a callable, so any model prices them
(:func:`schedule_pricer`: the schedule placed and priced whole, contention
and dependencies included), and accepts a move only when the price falls
(first improvement). A price may come with a tie-breaker (the pricer's is
the sum over ranks of each rank's busy time): a move that leaves the time
as it is but lowers the tie-breaker is taken too, which walks the
plateaus a max over ranks makes (one rank swap rarely shortens a ring's
slowest link, but it shortens the others). Its moves, in this order in every pass:

1. **group swaps** (:func:`group_swaps`): the ranks of two groups of the
   platform (two sites, two clusters, two nodes) trade places node by node,
   outermost level first. Swaps that only relabel (two groups of one parent
   with the same node types and inner structure, on a platform without a
   modelled network) are left out: they cannot change a price.
2. **rank swaps**: two ranks on different nodes trade places, in a seeded
   random order.
3. **rank moves**: a rank goes to a node with a free slot (only when the
   capacities leave room).

Passes repeat until one finds no improving move (``converged``) or the time
limit ends the search. This is commcost's own addition beyond paper 002,
whose heuristic (section 4.2) searches 2D arrangements of one kernel under
its bandwidth cost; here any schedule under any model.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from commcost.errors import InputError
from commcost.models import Model, PlacedSchedule
from commcost.platform import Mapping, Platform
from commcost.schedule import Schedule

Price = Callable[[np.ndarray], "float | tuple[float, float]"]
REL_GAIN = 1e-9  # a move is an improvement when it lowers the price by more than this fraction


@dataclass(frozen=True)
class Move:
    """A group swap: the ranks on ``nodes_a[k]`` and on ``nodes_b[k]`` trade places, for every k."""

    level: str
    a: str
    b: str
    nodes_a: tuple[int, ...]
    nodes_b: tuple[int, ...]


@dataclass
class SearchResult:
    """Where a search ended: the placement, its price and the price it started from, how many placements
    it priced, the moves it accepted by kind, its seconds, and whether a whole pass found no improvement."""

    node_of_rank: np.ndarray
    time_s: float
    start_time_s: float
    evaluations: int
    seconds: float
    converged: bool
    accepted: dict[str, int] = field(default_factory=dict)


def schedule_pricer(schedule: Schedule, platform: Platform, model: Model, base: Mapping,
                    tie_break: bool = True) -> Price:
    """The predicted seconds of ``schedule`` under ``model`` with its ranks on the given nodes (each rank
    keeps its kind and cores from ``base``), with the sum of the ranks' busy times (``Cost.rank_time_s``)
    as tie-breaker unless ``tie_break`` is False."""
    kind, cores = base.kind[: schedule.nprocs], base.cores[: schedule.nprocs]

    def price(node_of_rank: np.ndarray) -> "float | tuple[float, float]":
        placed = PlacedSchedule.of(schedule, platform, Mapping(node_of_rank, kind, cores))
        if not tie_break:
            return model.total_time_s(placed)
        cost = model.price(placed)
        return cost.time_s, float(cost.rank_time_s.sum())

    return price


class GroupSwaps:
    """Every swap of two equal-sized groups at one level of a platform (outermost level first, nodes last)
    that is not a relabeling, generated afresh on each iteration (N nodes make up to N(N-1)/2 node swaps:
    never held in memory at once)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.levels = []
        for depth in range(len(platform.levels), -1, -1):
            number = platform.group_numbers(depth)
            groups = [np.flatnonzero(number == g).tolist() for g in range(int(number.max()) + 1)]
            self.levels.append((depth, groups, [_signature(platform, m, depth) for m in groups]))

    def __iter__(self) -> Iterator[Move]:
        nodes = self.platform.nodes
        for depth, groups, signatures in self.levels:
            level = self.platform.all_levels[depth]
            for i, a in enumerate(groups):
                for j in range(i + 1, len(groups)):
                    b = groups[j]
                    if len(a) != len(b):
                        continue
                    if self.platform.network is None and signatures[i] == signatures[j]:
                        continue  # same parent, same types and inner structure: a relabeling
                    name_a, name_b = ((nodes[a[0]].name, nodes[b[0]].name) if depth == 0 else
                                      (nodes[a[0]].groups[depth - 1], nodes[b[0]].groups[depth - 1]))
                    yield Move(level, name_a, name_b, tuple(a), tuple(b))


def group_swaps(platform: Platform) -> GroupSwaps:
    """The group swaps of ``platform`` (:class:`GroupSwaps`), iterable as often as a search needs."""
    return GroupSwaps(platform)


def _signature(platform: Platform, members: list[int], depth: int) -> tuple:
    """What a group looks like from outside: its parent, its nodes' types and its inner grouping."""
    nodes = platform.nodes
    parent = tuple(nodes[members[0]].groups[depth:])
    inner = []
    for d in range(1, depth):
        seen: dict[str, int] = {}
        inner.append(tuple(seen.setdefault(nodes[m].groups[d - 1], len(seen)) for m in members))
    return parent, tuple(nodes[m].type.name for m in members), tuple(inner)


def level_groups(platform: Platform) -> list[np.ndarray]:
    """A group number per node at each of the platform's levels, outermost first (for the graph start)."""
    return [platform.group_numbers(depth) for depth in range(len(platform.levels), 0, -1)]


def node_classes(platform: Platform) -> np.ndarray:
    """A number per node; two empty nodes of one number are interchangeable (same parent groups and type,
    and no modelled network), so a rank move needs to try only one of them."""
    if platform.network is not None:
        return np.arange(len(platform.nodes))
    keys = [(tuple(node.groups), node.type.name) for node in platform.nodes]
    lookup = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    return np.array([lookup[key] for key in keys], dtype=np.int64)


def improve(price: Price, start: np.ndarray, capacity: np.ndarray, swaps: Iterable[Move] = (),
            time_limit_s: float = 10.0, seed: int = 0, max_evaluations: int | None = None,
            classes: np.ndarray | None = None) -> SearchResult:
    """First-improvement local search from ``start`` (a node per rank) under ``capacity`` (ranks per node):
    group swaps (``swaps``: a list, or :class:`GroupSwaps`, iterated once per pass), rank swaps, rank moves
    (to one empty node per class of ``classes``, default every node
    its own class), pass after pass until a pass improves nothing or the time limit (or
    ``max_evaluations``) is reached."""
    node = np.asarray(start, dtype=np.int64).copy()
    capacity = np.asarray(capacity, dtype=np.int64)
    counts = np.bincount(node, minlength=len(capacity))
    if len(counts) > len(capacity):
        raise InputError("the start places ranks beyond the platform's nodes", where="start")
    over = np.flatnonzero(counts > capacity)
    if len(over):
        raise InputError(f"the start places more ranks on node {over[0]} than its {capacity[over[0]]} slots",
                         where="start")
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    deadline = started + time_limit_s
    state = {"node": node, "best": _pair(price(node)), "counts": counts}
    start_time = state["best"][0]
    evaluations = 1
    accepted: Counter[str] = Counter()

    def out_of_budget() -> bool:
        return time.perf_counter() > deadline or (max_evaluations is not None and evaluations >= max_evaluations)

    def tried(candidate: np.ndarray, kind: str) -> bool:
        nonlocal evaluations
        t = _pair(price(candidate))
        evaluations += 1
        if _better(t, state["best"]):
            state.update(node=candidate, best=t, counts=np.bincount(candidate, minlength=len(capacity)))
            accepted[kind] += 1
            return True
        return False

    converged = False
    while True:
        improved = interrupted = False
        for move in swaps:
            if interrupted := out_of_budget():
                break
            candidate = _swapped(state["node"], move, state["counts"], capacity)
            if candidate is not None and tried(candidate, f"{move.level} swap"):
                improved = True
        for i, j in ([] if interrupted else _rank_pairs(len(node), rng)):
            if interrupted := out_of_budget():
                break
            current = state["node"]
            if current[i] == current[j]:
                continue
            candidate = current.copy()
            candidate[i], candidate[j] = current[j], current[i]
            improved |= tried(candidate, "rank swap")
        for i in ([] if interrupted else rng.permutation(len(node))):
            for n in _targets(state["counts"], capacity, classes):
                if interrupted := out_of_budget():
                    break
                if n == state["node"][i]:
                    continue
                candidate = state["node"].copy()
                candidate[i] = n
                if tried(candidate, "rank move"):
                    improved = True
                    break
            if interrupted:
                break
        if interrupted or not improved:
            converged = not interrupted
            break
    return SearchResult(state["node"], state["best"][0], start_time, evaluations, time.perf_counter() - started,
                        converged, dict(accepted))


def _pair(value: "float | tuple[float, float]") -> tuple[float, float]:
    return (float(value[0]), float(value[1])) if isinstance(value, tuple) else (float(value), 0.0)


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """``a`` below ``b`` by more than :data:`REL_GAIN` in time, or level in time and so below in the
    tie-breaker."""
    if a[0] < b[0] - REL_GAIN * b[0]:
        return True
    return a[0] <= b[0] + REL_GAIN * b[0] and a[1] < b[1] - REL_GAIN * b[1]


def _targets(counts: np.ndarray, capacity: np.ndarray, classes: np.ndarray | None) -> np.ndarray:
    """Nodes with room: every partly filled one, and the first empty one of each class."""
    room = np.flatnonzero(counts < capacity)
    if classes is None:
        return room
    empty = room[counts[room] == 0]
    _, first = np.unique(classes[empty], return_index=True)
    return np.sort(np.concatenate([room[counts[room] > 0], empty[first]]))


def _swapped(node: np.ndarray, move: Move, counts: np.ndarray, capacity: np.ndarray) -> np.ndarray | None:
    """The placement with the move's node pairs traded, or None when it changes nothing or overfills."""
    candidate = node.copy()
    changed = False
    for a, b in zip(move.nodes_a, move.nodes_b):
        if counts[a] > capacity[b] or counts[b] > capacity[a]:
            return None
        on_a, on_b = node == a, node == b
        candidate[on_a], candidate[on_b] = b, a
        changed |= bool(on_a.any() or on_b.any())
    return candidate if changed else None


def _rank_pairs(p: int, rng: np.random.Generator) -> Iterator[tuple[int, int]]:
    """Every pair of ``p`` ranks once, in a random order of first ranks and of partners."""
    for i in rng.permutation(p):
        for j in rng.permutation(p):
            if j > i:
                yield int(i), int(j)
