"""Speed figures for issue 2: tau-Lop engine throughput and per-model pricing time.

Run: ``python bench/bench_engine.py [--transmissions N]``. Prints figures;
asserts nothing. The schedule is random: 1,024 ranks on 32 nodes of 32
(shared memory inside a node, Infiniband between nodes), 10 phases,
random destinations and sizes (1 B .. 64 KiB), with the tables of
examples/params. Baseline in the same run: the event loop is the
reference, the vectorized staircase is shown as a ratio against it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from commcost.io.params_file import load_params
from commcost.models import MODELS, PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.platform import Channel, Mapping, Node, NodeType, Platform
from commcost.schedule import Schedule

ROOT = Path(__file__).resolve().parent.parent
NPROCS, PPN = 1024, 32


def platform() -> Platform:
    kind = NodeType("node32", PPN)
    nodes = tuple(Node(f"n{i}", kind) for i in range(NPROCS // PPN))
    return Platform("bench", (kind,), nodes,
                    (Channel("shm", 0, "node", ("shm", "shm")), Channel("ib", 1, "world", ("ib",))))


def random_schedule(ntx: int, mode: str, seed: int = 1, nphases: int = 10) -> Schedule:
    rng = np.random.default_rng(seed)
    phase = np.sort(rng.integers(0, nphases, ntx))
    src = rng.integers(0, NPROCS, ntx)
    dst = (src + rng.integers(1, NPROCS, ntx)) % NPROCS
    order = np.lexsort((src, phase))
    nbytes = rng.integers(1, 1 << 16, ntx).astype(float)
    if mode == "posted":
        posted = np.ones(ntx, bool)
    elif mode == "sequence":
        posted = np.zeros(ntx, bool)
    else:  # each (phase, rank) picks its mode at random
        posted = (rng.random((nphases, NPROCS)) < 0.5)[phase[order], src[order]]
    return Schedule(NPROCS, src[order], dst[order], nbytes, phase[order], posted,
                    tuple(f"phase {i}" for i in range(nphases)), name=f"random-{mode}")


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transmissions", type=int, default=1_000_000)
    args = parser.parse_args()
    paramset = load_params(ROOT / "examples" / "params" / "illustrative.toml")
    plat = platform()
    mapping = Mapping.sequential(plat, NPROCS, PPN)
    n = args.transmissions
    print(f"tau-Lop engine, random schedule: {n:,} transmissions, {NPROCS} ranks, 32 nodes x 32, shm + ib, 10 phases")
    print(f"{'send mode':<10} {'path':<22} {'seconds':>9} {'transmissions/s':>16} {'vs event loop':>14}")
    for mode in ("posted", "mixed", "sequence"):
        placed = PlacedSchedule.of(random_schedule(n, mode), plat, mapping)
        t_events = timed(lambda: TauLop(paramset.for_model("taulop"), fast=False).end_times(placed))
        print(f"{mode:<10} {'event loop':<22} {t_events:9.3f} {n / t_events:16,.0f} {1.0:14.2f}")
        if mode == "posted":
            t_fast = timed(lambda: TauLop(paramset.for_model("taulop"), fast=True).end_times(placed))
            print(f"{mode:<10} {'vectorized staircase':<22} {t_fast:9.3f} {n / t_fast:16,.0f} "
                  f"{t_events / t_fast:13.1f}x")
    print()
    small = 32 * NPROCS
    placed = PlacedSchedule.of(random_schedule(small, "mixed", nphases=4), plat, mapping)
    print(f"price one {NPROCS}-rank schedule ({small:,} transmissions, 4 phases, mixed modes), best of 3:")
    base = None
    for name in sorted(MODELS):
        model = MODELS[name](paramset.for_model(name))
        t = timed(lambda: model.price(placed), repeat=3)
        base = base or t
        print(f"  {name:<10} {t * 1e3:9.2f} ms   ({t / base:5.2f}x {sorted(MODELS)[0]})")


if __name__ == "__main__":
    main()
