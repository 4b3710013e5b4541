"""Speed figures: pricing collective algorithms for selection, and at a million ranks.

Run: ``python bench/bench_collectives.py [--quick]``. Prints figures; asserts nothing.

* The selection grid: the 9 Open MPI bcast algorithms x 21 message sizes
  (1 B .. 1 MiB) x 11 process counts (2 .. 2048, 32 ranks per node,
  sequential mapping, contention per node) = 2,079 cases under tau-Lop (the tables of
  examples/params): the size sweep of ``price_grid`` (one build per size class,
  one pass over all sizes), against building and pricing every case on its own
  in the same run. Best and median of 5 runs (the machine may be shared).
* The same grid as ``commcost select`` prices it: branch and bound
  (:func:`commcost.selection.select.select`), a candidate skipped at a size
  where a lower bound already reaches the best time so far (the tau-Lop
  floor of :mod:`commcost.models.taulop.floor` for dependency schedules,
  the pipeline floor for phased ones), dependencies against phase
  barriers, and the picks checked against pricing every case.
* One binomial and one knomial broadcast of 64 KiB at P = 1,000,000
  (31,250 nodes of 32): build time and pricing time.

Every figure is given twice, in the same run: pricing the schedules' real
dependencies (the prediction) and the old phase pricing (a barrier between
phases, :meth:`Schedule.without_dependencies`), with their ratio, and the
predicted times of both (the barrier is an upper bound, often far off).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from commcost.collectives import Case, Collective, algorithms, build, find
from commcost.io.params_file import load_params
from commcost.models import PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform
from commcost.selection.decision import Choice
from commcost.selection.grid import price_grid, price_sizes
from commcost.selection.select import select

ROOT = Path(__file__).resolve().parent.parent
PPN = 32


def cluster(nnodes: int) -> Platform:
    kind = NodeType("node32", PPN)
    return Platform("bench", (kind,), tuple(Node(f"n{i}", kind) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm"), ContentionScope.NODE),
                     Channel("ib", 1, "world", ("ib",), ContentionScope.NODE)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="P up to 256 only")
    args = parser.parse_args()
    model = TauLop(load_params(ROOT / "examples" / "params" / "illustrative.toml").for_model("taulop"))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (wall times suffer when "
          "it exceeds the cores; the CPU time of this process does not)")
    bcasts = [a for a in algorithms(Collective.BCAST) if a.library == "ompi" and a.id is not None]  # coll/tuned's 1-9
    sizes = [1 << k for k in range(21)]
    procs = [1 << k for k in range(1, 9 if args.quick else 12)]
    platform = cluster(max(procs) // PPN + 1)
    mapping_of = lambda p: Mapping.sequential(platform, p, PPN)  # noqa: E731
    ncases = len(bcasts) * len(sizes) * len(procs)
    what = f"{ncases:,} cases ({len(bcasts)} algorithms x {len(sizes)} sizes x {len(procs)} process counts)"
    for barriers in (False, True):  # warm the law caches and the compiled loops
        price_grid(bcasts, procs[:2], sizes[:2], platform, mapping_of, model, phase_barriers=barriers)
    results = {}
    for barriers in (False, True):
        runs, cpu = [], []
        for _ in range(5):
            t0, c0 = time.perf_counter(), time.process_time()
            grid = price_grid(bcasts, procs, sizes, platform, mapping_of, model, phase_barriers=barriers)
            runs.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        results[barriers] = (grid, min(runs), float(np.median(runs)), min(cpu))
    print(f"selection grid, {what}, tau-Lop:")
    for barriers, label in ((False, "dependencies (prediction)"), (True, "old phase barriers")):
        grid, best, median, cpu_best = results[barriers]
        print(f"  {label:<26} size sweep: best {best:.3f} s, median {median:.3f} s of 5 "
              f"= {best / ncases * 1e6:.1f} us/case (CPU best {cpu_best:.3f} s)")
    grid, t_sweep = results[False][0], results[False][1]
    ratio = t_sweep / results[True][1]
    print(f"  dependencies / phase barriers, time to price: {ratio:.2f}x")
    builds = min(build_seconds(bcasts, procs, sizes) for _ in range(3))
    left = [results[b][1] - builds for b in (False, True)]
    print(f"  of which building the schedules (the same for both): best {builds:.3f} s of 3; pricing alone "
          f"about {left[0]:.3f} s against {left[1]:.3f} s ({left[0] / max(left[1], 1e-9):.2f}x; build time varies "
          "from run to run with memory)")
    rel = results[True][0].time_s / grid.time_s
    print(f"  barrier price / dependency price: median {np.median(rel):.2f}x, max {rel.max():.2f}x; "
          f"the pick differs in {int(np.sum(results[True][0].best() != grid.best()))} of "
          f"{len(procs) * len(sizes)} (P, size) points")
    t0 = time.perf_counter()
    baseline = price_grid(bcasts, procs, sizes, platform, mapping_of, model, sweep=False)
    t_cases = time.perf_counter() - t0
    same = np.allclose(grid.time_s, baseline.time_s, rtol=1e-9)
    print(f"  baseline, build + price every case (dependencies): {t_cases:.3f} s = "
          f"{t_cases / ncases * 1e3:.3f} ms/case ({t_cases / t_sweep:.1f}x the sweep; same numbers: {same})")
    winners = sorted({grid.algorithms[i].name for i in np.unique(grid.best())})
    print(f"  algorithms that win somewhere: {', '.join(winners)}")
    print("  per algorithm, size sweep (one run each): dependencies s, phase barriers s, ratio")
    for algorithm in bcasts:
        spent = []
        for barriers in (False, True):
            t0 = time.perf_counter()
            price_grid([algorithm], procs, sizes, platform, mapping_of, model, phase_barriers=barriers)
            spent.append(time.perf_counter() - t0)
        print(f"    {algorithm.name:<24} {spent[0]:8.3f} {spent[1]:8.3f} {spent[0] / spent[1]:6.2f}x")

    select_figures(bcasts, procs, sizes, platform, mapping_of, model, grid)

    big = 1_000_000
    platform = cluster(big // PPN)
    t0 = time.perf_counter()
    mapping = Mapping.sequential(platform, big, PPN)
    t_map = time.perf_counter() - t0
    print(f"P = {big:,} ({big // PPN:,} nodes of {PPN}; platform + mapping {t_map:.2f} s):")
    for name in ("binomial", "knomial"):
        algorithm = find(Collective.BCAST, name)
        t0, c0 = time.perf_counter(), time.process_time()
        schedule = build(algorithm, Case(Collective.BCAST, big, 64 * 1024)).schedule
        t1 = time.perf_counter()
        cost = model.price(PlacedSchedule.of(schedule, platform, mapping))
        t2, c2 = time.perf_counter(), time.process_time()
        phased = schedule.without_dependencies()
        t3 = time.perf_counter()
        old = model.price(PlacedSchedule.of(phased, platform, mapping))
        t4 = time.perf_counter()
        print(f"  {algorithm.key:<16} {schedule.ntransmissions:>9,} transmissions, {schedule.nphases:>3} phases: "
              f"build {t1 - t0:.3f} s, price {t2 - t1:.3f} s, total {t2 - t0:.3f} s (CPU {c2 - c0:.3f} s); "
              f"predicted {cost.time_s * 1e3:.3f} ms")
        print(f"  {'':<16} old phase pricing of the same build: price {t4 - t3:.3f} s "
              f"(dependencies / barriers: {(t2 - t1) / (t4 - t3):.2f}x the time; build + price "
              f"{(t2 - t0) / (t1 - t0 + t4 - t3):.2f}x); predicted {old.time_s * 1e3:.3f} ms "
              f"({old.time_s / cost.time_s:.2f}x the dependency price)")


def build_seconds(bcasts, procs, sizes) -> float:
    """Seconds to build the schedules a size sweep builds (one per algorithm, P and size class), alone."""
    t0 = time.perf_counter()
    for nprocs in procs:
        for algorithm in bcasts:
            values = algorithm.resolve_params({})
            if not algorithm.supports(nprocs):
                continue
            built = set()
            for nbytes in sizes:
                unit = algorithm.scale_unit(values, nprocs, nbytes)
                key = nbytes if unit is None else unit
                if key not in built:
                    built.add(key)
                    build(algorithm, Case(algorithm.collective, nprocs, key), values)
    return time.perf_counter() - t0


def select_figures(bcasts, procs, sizes, platform, mapping_of, model, grid) -> None:
    """The grid as ``commcost select`` prices it (branch and bound), dependencies against phase barriers."""
    choices = [Choice(a, {p.name: p.default for p in a.params}) for a in bcasts]
    mappings = {p: mapping_of(p) for p in procs}

    def pricer(barriers: bool):
        def price(choice, nprocs, at, bound=None):
            return price_sizes(choice.algorithm, dict(choice.params), nprocs, at, platform, mappings[nprocs], model,
                               bound=bound, phase_barriers=barriers)
        return price

    results = {}
    for barriers in (False, True):
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            result = select(Collective.BCAST, "ompi", choices, procs, sizes, pricer(barriers))
            runs.append(time.perf_counter() - t0)
        results[barriers] = (result, min(runs), float(np.median(runs)))
    print("selection as `commcost select` prices it (branch and bound: a candidate is skipped where a lower "
          "bound reaches the best so far):")
    for barriers, label in ((False, "dependencies (prediction)"), (True, "old phase barriers")):
        result, best, median = results[barriers]
        skipped = int(np.isinf(result.time_s).sum() - np.isinf(grid.time_s).sum())
        print(f"  {label:<26} best {best:.3f} s, median {median:.3f} s of 3; {skipped} of {result.time_s.size} "
              "candidate prices skipped")
    dep = results[False][0]
    print(f"  dependencies / phase barriers, time to select: {results[False][1] / results[True][1]:.2f}x")
    same = bool(np.array_equal(dep.best_index, grid.best())) and np.allclose(dep.best_time_s, grid.time_s.min(axis=0),
                                                                              rtol=1e-12)
    print(f"  picks and their times equal to pricing every case: {same}")


if __name__ == "__main__":
    main()
