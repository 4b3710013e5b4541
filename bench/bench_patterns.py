"""Speed of pricing an irregular point-to-point pattern at scale (issue 14, paper 001).

Run: ``python bench/bench_patterns.py``. Prints figures; asserts nothing.

A random pattern of 1,000,000 messages (64 B to 64 KiB, log-uniform) over
65,536 ranks, 32 per node on 2,048 Blue Waters XE nodes (two per Gemini,
a 16 x 8 x 8 torus), one phase of sends posted together. Priced under the
max-rate model with queue search (gamma n^2) and network contention, eq. 7's
cube and the torus routed dimension-order, and under Hockney as the
baseline in the same run; each with its transmissions per second.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import numpy as np

from commcost.io.params_file import load_params
from commcost.models import MODELS, PlacedSchedule
from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
from commcost.platform import Mapping
from commcost.platform.network import Torus3D
from commcost.platform.platform import Channel, Node, NodeType, Platform
from commcost.schedule import Schedule

NPROCS, MESSAGES, PPN = 65_536, 1_000_000, 32
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    rng = np.random.default_rng(1)
    src = np.sort(rng.integers(0, NPROCS, MESSAGES))
    dst = (src + rng.integers(1, NPROCS, MESSAGES)) % NPROCS
    nbytes = np.exp(rng.uniform(np.log(64), np.log(65536), MESSAGES)).round()
    n = MESSAGES
    t0 = time.perf_counter()
    schedule = Schedule(NPROCS, src, dst, nbytes, np.zeros(n, np.int64), np.ones(n, bool), ("exchange",),
                        name="random", checked=False)
    xe = NodeType("xe", 32, 2)
    nodes = tuple(Node(f"xe{i}", xe) for i in range(NPROCS // PPN))
    channels = (Channel("shm", 0, "node", ("shm", "shm")), Channel("gemini", 1, "world", ("gemini",)))
    platform = Platform("bluewaters", (xe,), nodes, channels, (), Torus3D((16, 8, 8), 2))
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, NPROCS, PPN))
    print(f"{n:,} messages over {NPROCS:,} ranks ({len(nodes):,} nodes) built and placed in "
          f"{time.perf_counter() - t0:.2f} s")
    base = load_params(os.path.join(ROOT, "examples", "params", "bluewaters.toml")).for_model("maxrate")
    for contention in ("cube", "topology"):
        model = MODELS["maxrate"](replace(base, contention=contention))
        t0 = time.perf_counter()
        terms = model.terms(placed)[0]
        spent = time.perf_counter() - t0
        print(f"maxrate + queue + contention ({contention}): {spent:.2f} s, {n / spent:,.0f} transmissions/s; "
              f"max-rate {terms.maxrate_s * 1e3:.3f} ms, queue {terms.queue_s * 1e3:.3f} ms, "
              f"contention {terms.contention_s * 1e3:.3f} ms")
    hockney = Hockney(HockneyParams({"shm": HockneyChannel(5e-7, 1.6e-10), "gemini": HockneyChannel(2.3e-6, 3.4e-10)}))
    t0 = time.perf_counter()
    total = hockney.total_time_s(placed)
    spent_h = time.perf_counter() - t0
    print(f"baseline Hockney: {spent_h:.2f} s, {n / spent_h:,.0f} transmissions/s ({total * 1e3:.3f} ms)")


if __name__ == "__main__":
    main()
