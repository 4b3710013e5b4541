"""Speed figures for issue 5: a model-based selection over 2..4096 ranks and 1 B..4 MiB.

Run: ``python bench/bench_selection.py``. Prints figures; asserts nothing.

* Open MPI's 9 bcast algorithms at their defaults, 12 process counts
  (2..4096, 32 ranks per node, sequential mapping) x 23 sizes (1 B..4 MiB),
  under tau-Lop (examples/params, illustrative tables) and under paper 004's
  closed forms; against building and pricing every case one by one (baseline).
* The same grid with the segment size as a decision variable (0, 8, 32,
  128 KiB: 27 candidates), with and without branch and bound.
Best of 3 runs (the machine may be shared).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from commcost.collectives import Collective
from commcost.io.params_file import load_params
from commcost.models.taulop.model import TauLop
from commcost.platform import Mapping
from commcost.selection.select import DEFAULT_SEGSIZES, candidates, schedule_pricer, select

from bench_collectives import PPN, cluster

ROOT = Path(__file__).resolve().parent.parent


CPU: list[float] = []


def best_of(runs: int, fn):
    """Best wall time of ``runs`` calls (and the best CPU time, appended to CPU), and the last result."""
    times, cpu, result = [], [], None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU.append(min(cpu))
    return min(times), result


def main() -> None:
    from commcost.workflows.pricing import paper004_pricer

    params = load_params(ROOT / "examples" / "params" / "illustrative.toml")
    model = TauLop(params.for_model("taulop"))
    procs = [1 << k for k in range(1, 13)]
    sizes = [1 << k for k in range(23)]
    platform = cluster(procs[-1] // PPN)
    mapping_of = lambda p: Mapping.sequential(platform, p, PPN)  # noqa: E731
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; grid {len(procs)} process counts (2..4096, {PPN}/node) "
          f"x {len(sizes)} sizes (1 B..4 MiB) = {len(procs) * len(sizes)} points")

    plain = candidates(Collective.BCAST, "ompi")
    price = schedule_pricer(model, platform, mapping_of)
    t_fast, fast = best_of(3, lambda: select(Collective.BCAST, "ompi", plain, procs, sizes, price))

    def one_by_one(choice, nprocs, szs, bound=None):
        from commcost.selection.grid import price_sizes
        return price_sizes(choice.algorithm, dict(choice.params), nprocs, szs, platform, mapping_of(nprocs), model,
                           sweep=False)
    t0 = time.perf_counter()
    slow = select(Collective.BCAST, "ompi", plain, procs, sizes, one_by_one)
    t_slow = time.perf_counter() - t0
    same = np.array_equal(fast.best_index, slow.best_index)
    print(f"tau-Lop, {len(plain)} candidates: {t_fast:.3f} s; baseline (every case built and priced) "
          f"{t_slow:.3f} s ({t_slow / t_fast:.0f}x); same choices: {same}; {len(fast.selection.rules)} rules "
          f"(CPU time {CPU[-1]:.3f} s)")

    p004 = paper004_pricer(params.for_model("ompi_bcast_model"), mapping_of, 0)
    t_p004, r = best_of(3, lambda: select(Collective.BCAST, "ompi", plain, procs, sizes, p004))
    print(f"paper 004 closed forms, {len(plain)} candidates: {t_p004:.3f} s; {len(r.selection.rules)} rules")

    segmented = candidates(Collective.BCAST, "ompi", {"segsize": DEFAULT_SEGSIZES})
    t_seg, res = best_of(3, lambda: select(Collective.BCAST, "ompi", segmented, procs, sizes, price))
    pruned = float(np.mean(np.isinf(res.time_s)))
    no_bound = lambda c, p, s, bound=None: price(c, p, s, None)  # noqa: E731
    t_nb, res_nb = best_of(1, lambda: select(Collective.BCAST, "ompi", segmented, procs, sizes, no_bound))
    same = np.allclose(res.best_time_s, res_nb.best_time_s, rtol=1e-12)
    print(f"tau-Lop, segment size as a decision variable ({len(segmented)} candidates): {t_seg:.3f} s "
          f"({100 * pruned:.0f}% of candidate points pruned); without branch and bound {t_nb:.3f} s "
          f"({t_nb / t_seg:.1f}x); same best times: {same}; {len(res.selection.rules)} rules "
          f"(CPU time {CPU[-2]:.3f} s)")


if __name__ == "__main__":
    main()
