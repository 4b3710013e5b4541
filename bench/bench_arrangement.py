"""Speed of paper 002's arrangement heuristic at scale (issue 15 item 9).

Run: ``python bench/bench_arrangement.py [P]``. Prints figures; asserts nothing.

P = 4,096 ranks (default) on a four-level platform: 4 sites x 4 clusters x
16 nodes x 16 ranks per node. The heuristic's groups are the 256 nodes;
the bandwidth between two ranks' nodes depends on the innermost level they
share (same node, cluster, site, or none), horizontal bars slower than
vertical slices as in paper 002 Table 1. MPDATA's 8192 x 8192 x 64 domain.
Prints the heuristic's time, rounds and cost against the sequential 64 x 64
start and, as the baseline in the same run, the time of pricing every shape
once (step 1 alone).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from commcost.partition.arrangement import best_shape, factor_pairs, heuristic, mpdata_volumes, priced

SITES, CLUSTERS, NODES, PPN = 4, 4, 16, 16
# GB/s by the innermost level two nodes share: node, cluster, site, world (horizontal, vertical)
HORIZONTAL = (2.0, 0.04, 0.03, 0.00007)
VERTICAL = (8.0, 0.48, 0.45, 0.00056)


def platform_bandwidths(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """b_H, b_V (B/s) between every two of ``nodes`` nodes numbered site-major."""
    i = np.arange(nodes)
    cluster, site = i // NODES, i // (NODES * CLUSTERS)
    level = np.full((nodes, nodes), 3)
    level[site[:, None] == site[None, :]] = 2
    level[cluster[:, None] == cluster[None, :]] = 1
    level[i[:, None] == i[None, :]] = 0
    return np.array(HORIZONTAL)[level] * 1e9, np.array(VERTICAL)[level] * 1e9


def main() -> None:
    p = int(sys.argv[1]) if len(sys.argv) > 1 else SITES * CLUSTERS * NODES * PPN
    nodes = -(-p // PPN)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    bh, bv = platform_bandwidths(nodes)
    group = np.arange(p) // PPN

    def volumes(r: int, c: int) -> tuple[float, float]:
        return mpdata_volumes((8192, 8192, 64), (1, 1), r, c)

    side = int(round(np.sqrt(p)))
    r = max(d for d in range(1, side + 1) if p % d == 0)
    initial = priced(np.arange(p).reshape(p // r, r).T.copy(), group, bh, bv, volumes)
    t0 = time.perf_counter()
    shaped = best_shape(np.arange(p), group, bh, bv, volumes)
    base = time.perf_counter() - t0
    t0 = time.perf_counter()
    best, rounds = heuristic(np.arange(p), group, bh, bv, volumes)
    spent = time.perf_counter() - t0
    print(f"P = {p:,} ranks, {nodes} nodes (groups) on 4 levels, {len(factor_pairs(p))} shapes")
    print(f"baseline, step 1 alone (every shape, both fills): {base:.3f} s -> {shaped.shape[0]} x {shaped.shape[1]}, "
          f"{shaped.cost:.4g} s")
    print(f"heuristic: {spent:.2f} s ({spent / base:.1f}x step 1), {rounds} rounds -> {best.shape[0]} x "
          f"{best.shape[1]}, cost {best.cost:.4g} s; initial {initial.shape[0]} x {initial.shape[1]} "
          f"{initial.cost:.4g} s ({initial.cost / best.cost:.2f}x)")


if __name__ == "__main__":
    main()
