"""Paper 002's arrangement heuristic against general graph-mapping tools on the same cost (issue 15 item 3).

Run: ``python bench/bench_mapping_libraries.py``. Prints a table; asserts nothing.

The case is paper 002 section 5.1's: 12 Grid'5000 nodes in 4 clusters (one
MPDATA process per node, examples/grid5000), Table 1's horizontal and
vertical bandwidths, a 512 x 512 x 64 domain, 1 x 1 halo, 8-byte values.
Every method's arrangement is priced with paper 002 eq. 1-3
(:func:`commcost.partition.arrangement.cost`), over the shapes of
``factor_pairs(12)``, and the table gives cost_H, cost_V, the total, the
shape, the seconds spent and the gap to the exhaustive optimum:

* paper 002's heuristic (section 4.2) from the sequential order;
* the exhaustive optimum (every placement of group labels on every shape);
* Scotch (``amk_grf`` + ``scotch_gmap``): per shape, the periodic grid as
  the source graph (edge weights h, w) and the 12 nodes as a target graph
  with distance d(A, B) = (h / b_H(A, B) + w / b_V(A, B)) / (h + w); Scotch
  has one distance per pair and minimizes sum(weight x distance), so eq.
  1-3's asymmetric cost (horizontal edges priced by b_H, vertical ones by
  b_V) is symmetrized this way. A mapping that is not one cell per node is
  repaired greedily (:func:`rebalance`);
* the optimum of Scotch's own objective (every placement per shape, the
  one cheapest under eq. 1-3 over the shapes): what Scotch could reach at
  best, so the loss of the symmetrization alone, apart from Scotch's search;
* METIS (pymetis): per shape, the grid cut into as many parts as groups
  with target weights group size / p, then every assignment of parts to
  groups, each part evened to its group's size, priced with eq. 1-3;
* commcost's local search (:func:`commcost.mapping.improve`): the cells are
  the "ranks", the 12 processes the "nodes" (one slot each), from the
  sequential fill, 5 s per shape.

The times include running the tools and the bench's own pricing, summed over
the four shapes. Scotch's weights are integers in 32 bits (Debian's 7.0.3):
see :mod:`commcost.io.scotch_files` for the scales. Scotch's own statistics
(``scotch_gmap -vm``) and ``gmtst`` misplace terminals of the ``deco 1``
targets ``amk_grf`` writes (``archDecoDomTerm`` returns the 0-based index
where a 1-based domain number is meant, so a label read back lands on the
domain before it); the mappings ``scotch_gmap`` writes name the right
labels (checked on a path onto a path), and the bench prices them itself.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from commcost.workflows.arrange import process_groups
from commcost.io.bandwidths_file import load_bandwidths
from commcost.io.platform_file import load_platform
from commcost.io.scotch_files import grid_adjacency, grid_graph_text, read_mapping, target_graph_text
from commcost.mapping import improve
from commcost.partition.arrangement import (Arrangement, _multiset_permutations, cost, exhaustive, factor_pairs,
                                            heuristic, mpdata_volumes, priced)

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "grid5000"
DOMAIN, HALO, VALUE_BYTES = (512, 512, 64), (1, 1), 8
SCOTCH_TOOLS = ("amk_grf", "scotch_gmap")
SCOTCH_OPTIONS = ("-Cd",)  # deterministic; the default strategy (quality over speed, 5 % imbalance)
LOCAL_SEARCH_S = 5.0

Price = Callable[[np.ndarray], float]


def load_case() -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Paper 002 section 5.1: the group (cluster) of each of the 12 processes, b_H and b_V (B/s), and the
    cluster names."""
    platform, _ = load_platform(EX / "platform.toml")
    bandwidths = load_bandwidths(EX / "bandwidths.toml")
    _, group = process_groups(platform, bandwidths, None, 1, EX / "bandwidths.toml")
    return group, bandwidths.horizontal, bandwidths.vertical, list(bandwidths.groups)


def volumes(r: int, c: int) -> tuple[float, float]:
    """h, w (bytes per horizontal, vertical neighbour per step) of the r x c arrangement (paper 002 sec. 3)."""
    return mpdata_volumes(DOMAIN, HALO, r, c, VALUE_BYTES)


def grid_of(node_of_cell: np.ndarray, r: int, c: int) -> np.ndarray:
    """The r x c grid whose cell k = j * r + i (column-major, as the source graph numbers them) holds
    ``node_of_cell[k]``."""
    return np.asarray(node_of_cell, dtype=np.int64).reshape(c, r).T.copy()


def eq_cost(node_of_cell: np.ndarray, r: int, c: int, group: np.ndarray, bh: np.ndarray, bv: np.ndarray,
            volumes_of: Callable[[int, int], tuple[float, float]] = volumes) -> float:
    """Paper 002 eq. 1-3 (cost_H + cost_V) of the grid holding process ``node_of_cell[k]`` on cell k, h and
    w from ``volumes_of(r, c)``; two neighbouring cells on one process exchange nothing (as :func:`cost`
    prices self-pairs)."""
    h, w = volumes_of(r, c)
    return sum(cost(grid_of(node_of_cell, r, c), group, bh, bv, h, w))


def node_distance(group: np.ndarray, bh: np.ndarray, bv: np.ndarray, h: float, w: float) -> np.ndarray:
    """Scotch's one distance per pair of processes (nodes): d(A, B) = (h / b_H + w / b_V) / (h + w) between
    their groups, the seconds per byte of a neighbour pair averaged over the two directions of eq. 1-2 by
    their volumes."""
    g = np.asarray(group)
    return (h / bh[g[:, None], g[None, :]] + w / bv[g[:, None], g[None, :]]) / (h + w)


def rebalance(labels: np.ndarray, capacity: np.ndarray, price: Price) -> tuple[np.ndarray, int]:
    """Move cells off over-full labels (nodes, parts) onto labels with room, one at a time, each time the
    move whose result ``price`` finds cheapest, until no label holds more than its capacity. Returns the
    labels and the number of cells moved."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    capacity = np.asarray(capacity, dtype=np.int64)
    if labels.min(initial=0) < 0 or labels.max(initial=0) >= len(capacity) or capacity.sum() < len(labels):
        raise ValueError("labels out of range or capacities too small for the cells")
    counts = np.bincount(labels, minlength=len(capacity))
    moved = 0
    while np.any(counts > capacity):
        best = None
        for k in np.flatnonzero(counts[labels] > capacity[labels]):
            for t in np.flatnonzero(counts < capacity):
                candidate = labels.copy()
                candidate[k] = t
                value = price(candidate)
                if best is None or value < best[0]:
                    best = (value, int(k), int(t))
        _, k, t = best
        counts[labels[k]] -= 1
        counts[t] += 1
        labels[k] = t
        moved += 1
    return labels, moved


def scotch_missing() -> str | None:
    """Why the Scotch row cannot run (a tool not on PATH), or None."""
    missing = [tool for tool in SCOTCH_TOOLS if shutil.which(tool) is None]
    return f"{', '.join(missing)} not on PATH (Debian: apt-get install scotch)" if missing else None


def run_scotch(r: int, c: int, h: float, w: float, distance: np.ndarray, price: Price,
               options: tuple[str, ...] = SCOTCH_OPTIONS) -> tuple[np.ndarray, int]:
    """Map the r x c periodic grid (:func:`grid_graph_text`, weights h, w) onto the targets of ``distance``
    (:func:`target_graph_text`, built into a ``deco`` architecture by ``amk_grf``) with ``scotch_gmap``, in
    a temporary directory. Returns the target of each cell (k = j * r + i), made one per target by
    :func:`rebalance` under ``price`` when Scotch's balance tolerance left a target with two cells, and the
    number of cells so moved (0: Scotch's mapping as it came)."""
    n = len(distance)
    if r * c != n:
        raise ValueError(f"a {r} x {c} grid needs {r * c} targets, got {n}")
    with tempfile.TemporaryDirectory(prefix="commcost-scotch-") as tmp:
        d = Path(tmp)
        (d / "grid.grf").write_text(grid_graph_text(r, c, h, w))
        (d / "nodes.grf").write_text(target_graph_text(distance))
        for command in (["amk_grf", "nodes.grf", "nodes.tgt"],
                        ["scotch_gmap", *options, "grid.grf", "nodes.tgt", "grid.map"]):
            done = subprocess.run(command, cwd=d, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
        mapping = read_mapping((d / "grid.map").read_text(), n, source="grid.map")
    if mapping.max() >= n:
        raise ValueError(f"scotch_gmap placed a cell on target {mapping.max()}; expected 0 to {n - 1}")
    return rebalance(mapping, np.ones(n, dtype=np.int64), price)


def scotch_row(group, bh, bv) -> tuple[Arrangement, float, str, list[tuple[int, int, np.ndarray, int]]]:
    """The cheapest (under eq. 1-3) of Scotch's mappings over the shapes, the seconds for all shapes, what
    was repaired, and per shape (r, c, the node of each cell, cells moved)."""
    p = len(group)
    started = time.perf_counter()
    best, shapes = None, []
    for r, c in factor_pairs(p):
        h, w = volumes(r, c)
        mapping, moved = run_scotch(r, c, h, w, node_distance(group, bh, bv, h, w),
                                    lambda x, r=r, c=c: eq_cost(x, r, c, group, bh, bv))
        a = priced(grid_of(mapping, r, c), group, bh, bv, volumes)
        shapes.append((r, c, mapping, moved))
        best = a if best is None or a.cost < best.cost else best
    spent = time.perf_counter() - started
    repairs = [f"{r}x{c}: {moved} cell(s) moved" for r, c, _, moved in shapes if moved]
    note = "repaired " + ", ".join(repairs) if repairs else "one cell per node: no repair"
    return best, spent, note, shapes


def scotch_objective(group_of_cell: np.ndarray, r: int, c: int, group_distance: np.ndarray) -> np.ndarray:
    """What Scotch minimizes, for each row of ``group_of_cell`` (the group on each cell, k = j * r + i, one
    process per node): the sum over the grid's edges of weight (h or w, 2h or 2w when merged) x the
    symmetrized distance between the groups of its ends (:func:`node_distance`)."""
    h, w = volumes(r, c)
    xadj, adjncy, weights = grid_adjacency(r, c, h, w, scale=10**9)
    src = np.repeat(np.arange(r * c), np.diff(xadj))
    g = np.atleast_2d(group_of_cell)
    return (weights * group_distance[g[:, src], g[:, adjncy]]).sum(axis=1) / 2


def symmetrized_optimum_row(group, bh, bv) -> tuple[Arrangement, float, str, dict[tuple[int, int], float]]:
    """Per shape, the placement of group labels that minimizes :func:`scotch_objective` (every placement,
    as :func:`exhaustive`); the one of them cheapest under eq. 1-3, the seconds, and per shape the optimum
    of Scotch's objective. What Scotch could reach at best: the loss of the symmetrization alone."""
    p = len(group)
    started = time.perf_counter()
    placements = np.array(list(_multiset_permutations(group.tolist())), dtype=np.int64)
    members = {int(g): np.flatnonzero(group == g) for g in np.unique(group)}
    best, optima = None, {}
    for r, c in factor_pairs(p):
        h, w = volumes(r, c)
        gd = (h / bh + w / bv) / (h + w)
        values = scotch_objective(placements, r, c, gd)
        k = int(np.argmin(values))
        optima[(r, c)] = float(values[k])
        taken = {g: iter(m) for g, m in members.items()}
        node_of_cell = np.array([next(taken[int(g)]) for g in placements[k]], dtype=np.int64)
        a = priced(grid_of(node_of_cell, r, c), group, bh, bv, volumes)
        best = a if best is None or a.cost < best.cost else best
    return best, time.perf_counter() - started, "best under Scotch's objective", optima


def metis_row(group, bh, bv) -> tuple[Arrangement, float, str]:
    """METIS: per shape, the grid graph cut into as many parts as groups (target weights = group sizes /
    p); then, for every assignment of parts to groups, each part evened to its group's size
    (:func:`rebalance` under eq. 1-3) and priced; the cheapest over assignments and shapes."""
    import pymetis

    p = len(group)
    sizes = np.bincount(group)
    members = [np.flatnonzero(group == g) for g in range(len(sizes))]
    started = time.perf_counter()
    best, evened, part_sizes, best_moved = None, 0, [], 0
    for r, c in factor_pairs(p):
        h, w = volumes(r, c)
        xadj, adjncy, weights = grid_adjacency(r, c, h, w)
        _, parts = pymetis.part_graph(len(sizes), pymetis.CSRAdjacency(xadj.tolist(), adjncy.tolist()),
                                      eweights=weights.tolist(), tpwgts=(sizes / p).tolist(),
                                      options=pymetis.Options(seed=0))
        parts = np.asarray(parts, dtype=np.int64)
        part_sizes.append("/".join(map(str, np.bincount(parts, minlength=len(sizes)))))
        cells = grid_of(np.arange(p), r, c)
        for assign in itertools.permutations(range(len(sizes))):
            assign = np.array(assign)

            def price(labels: np.ndarray) -> float:
                return sum(cost(cells, assign[labels], bh, bv, h, w))

            labels, moved = rebalance(parts, sizes[assign], price)
            evened += moved > 0
            taken = [iter(m) for m in members]
            node_of_cell = np.array([next(taken[assign[k]]) for k in labels], dtype=np.int64)
            a = priced(grid_of(node_of_cell, r, c), group, bh, bv, volumes)
            if best is None or a.cost < best.cost:
                best, best_moved = a, moved
    spent = time.perf_counter() - started
    tries = len(factor_pairs(p)) * math.factorial(len(sizes))
    same = len(set(part_sizes)) == 1
    return best, spent, (f"{part_sizes[0] if same else ', '.join(part_sizes)} parts to "
                         f"{'/'.join(map(str, sizes))}: {evened}/{tries} evened, {best_moved} moved")


def local_search_row(group, bh, bv) -> tuple[Arrangement, float, str]:
    """commcost's local search (rank swaps of cells' processes) from the sequential fill, per shape."""
    p = len(group)
    started = time.perf_counter()
    best, evaluations = None, 0
    for r, c in factor_pairs(p):
        result = improve(lambda x, r=r, c=c: eq_cost(x, r, c, group, bh, bv), np.arange(p),
                         np.ones(p, dtype=np.int64), time_limit_s=LOCAL_SEARCH_S, seed=0)
        evaluations += result.evaluations
        a = priced(grid_of(result.node_of_rank, r, c), group, bh, bv, volumes)
        best = a if best is None or a.cost < best.cost else best
    return best, time.perf_counter() - started, f"{evaluations} evaluations"


def main() -> None:
    group, bh, bv, names = load_case()
    p = len(group)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"paper 002 section 5.1: {p} processes, one per node, clusters "
          + ", ".join(f"{n} {int((group == g).sum())}" for g, n in enumerate(names)))
    print(f"domain {'x'.join(map(str, DOMAIN))}, halo 1x1, {VALUE_BYTES}-byte values; shapes "
          + ", ".join(f"{r}x{c}" for r, c in factor_pairs(p)) + "; costs: paper 002 eq. 1-3")
    rows = []
    started = time.perf_counter()
    optimum = exhaustive(group, bh, bv, volumes)
    rows.append(("exhaustive optimum", optimum, time.perf_counter() - started, "every placement, every shape"))
    started = time.perf_counter()
    best, rounds = heuristic(np.arange(p), group, bh, bv, volumes)
    rows.append(("paper 002 heuristic", best, time.perf_counter() - started, f"{rounds} rounds, sequential order"))
    why = scotch_missing()
    shapes = []
    if why is None:
        a, seconds, note, shapes = scotch_row(group, bh, bv)
        rows.append(("Scotch gmap", a, seconds, note))
    sym, seconds, note, optima = symmetrized_optimum_row(group, bh, bv)
    rows.append(("Scotch-objective opt.", sym, seconds, note))
    skipped = None if importlib.util.find_spec("pymetis") else "METIS row skipped: pymetis is not installed"
    if skipped is None:
        rows.append(("METIS (pymetis)", *metis_row(group, bh, bv)))
    rows.append(("commcost local search", *local_search_row(group, bh, bv)))
    print(f"{'method':<21} {'shape':<6} {'cost_H s':>8} {'cost_V s':>8} {'total s':>8} {'gap %':>7} "
          f"{'seconds':>7} note")
    for label, a, seconds, note in rows:
        gap = 100 * (a.cost / optimum.cost - 1)
        print(f"{label:<21} {a.shape[0]:>2} x {a.shape[1]:<2} {a.cost_h:>8.5g} {a.cost_v:>8.5g} {a.cost:>8.5g} "
              f"{gap:>7.3f} {seconds:>7.3f} {note}")
    print("Scotch has one distance per node pair, d(A, B) = (h / b_H + w / b_V) / (h + w) with the shape's h, w:")
    print("  eq. 1-3's asymmetric cost symmetrized; 'Scotch-objective opt.' is the best Scotch could do with it.")
    if skipped:
        print(skipped)
    if why is not None:
        print(f"Scotch row skipped: {why}")
    else:
        print(f"Scotch: amk_grf (deco target from the complete graph of distances), scotch_gmap "
              f"{' '.join(SCOTCH_OPTIONS)} (default strategy);")
        print("  per shape, eq. 1-3 cost and Scotch's own objective against its optimum over every placement:")
        for r, c, mapping, _ in shapes:
            h, w = volumes(r, c)
            mapped = scotch_objective(group[mapping], r, c, (h / bh + w / bv) / (h + w))[0]
            print(f"  {r} x {c}: eq. 1-3 {eq_cost(mapping, r, c, group, bh, bv):.5g} s, objective "
                  f"{100 * (mapped / optima[(r, c)] - 1):.2f} % above its optimum")
    print("arrangements (cluster per cell, rows separated by |):")
    for label, a, _, _ in rows:
        print(f"  {label:<22} " + " | ".join(" ".join(f"{names[group[q]][:5]:<5}" for q in row) for row in a.grid))


if __name__ == "__main__":
    main()
