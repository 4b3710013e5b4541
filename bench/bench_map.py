"""Speed and gain of ``commcost map``'s local search (issue 15 item 6).

Run: ``python bench/bench_map.py [SECONDS]``. Prints figures; asserts nothing.

Three cases on a two-level platform (16 clusters of 16 nodes, 16 ranks per
node; shm in a node, a fast network in a cluster, a slow one between
clusters; Hockney), each searched for SECONDS (default 10) from the
sequential and the METIS (graph) start:

- Open MPI's recursive-doubling allgather of 4 KiB blocks on 256 ranks (16
  nodes of one cluster);
- MPDATA's halo exchange on 64 x 64 = 4,096 ranks (256 nodes), 8192 x 8192 x 64;
- a periodic 5-point stencil on 32 x 32 ranks numbered at random (64 nodes);
- a random sparse exchange on 1,024 ranks (64 nodes): each rank sends 32 KiB
  to 6 random partners.

Per case and start: the price of the start, of the result, the placements
priced per second, and whether the search reached a local optimum. The
baseline in the same run is the sequential placement's price (mpirun's
default): the ratio is what the search buys.
"""

from __future__ import annotations

import sys

import numpy as np

from commcost.collectives import Case, Collective, build, find
from commcost.kernels.mpdata import halo_schedule
from commcost.mapping import graph_start, group_swaps, improve
from commcost.mapping.local_search import level_groups, node_classes, schedule_pricer
from commcost.models import MODELS
from commcost.models.hockney import HockneyParams
from commcost.partition.arrangement import mpdata_volumes
from commcost.platform import Channel, Mapping, Node, NodeType, Platform
from commcost.schedule import ScheduleBuilder, SendMode

CLUSTERS, NODES, PPN = 16, 16, 16


def platform() -> Platform:
    t = NodeType("n16", PPN)
    nodes = tuple(Node(f"c{c}n{n}", t, (f"c{c}",)) for c in range(CLUSTERS) for n in range(NODES))
    channels = (Channel("shm", 0, "node", ("shm", "shm")), Channel("ib", 1, "cluster", ("ib",)),
                Channel("wan", 2, "world", ("wan",)))
    return Platform("bench-map", (t,), nodes, channels, levels=("cluster",))


def model():
    return MODELS["hockney"](HockneyParams.from_dict({
        "shm": {"alpha_s": 0.5e-6, "beta_s_per_byte": 1e-10},
        "ib": {"alpha_s": 2e-6, "beta_s_per_byte": 1e-9},
        "wan": {"alpha_s": 50e-6, "beta_s_per_byte": 1e-8}}))


def sparse(p: int, partners: int, nbytes: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    b = ScheduleBuilder(p, f"random exchange, {partners} partners")
    b.phase("exchange", SendMode.POSTED)
    for r in range(p):
        for d in rng.choice(np.delete(np.arange(p), r), partners, replace=False):
            b.send(r, int(d), nbytes)
    return b.build()


def shuffled_stencil(side: int, nbytes: int, seed: int = 1):
    """A periodic 5-point stencil on side x side ranks whose rank numbers were dealt at random (an
    application that numbered its ranks without the machine in mind)."""
    label = np.random.default_rng(seed).permutation(side * side)
    b = ScheduleBuilder(side * side, f"5-point stencil {side} x {side}, ranks shuffled")
    b.phase("exchange", SendMode.POSTED)
    for i in range(side):
        for j in range(side):
            for di, dj in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                b.send(int(label[i * side + j]), int(label[((i + di) % side) * side + (j + dj) % side]), nbytes)
    return b.build()


def cases():
    rd = build(find(Collective.ALLGATHER, "recursive_doubling"), Case(Collective.ALLGATHER, 256, 4096, 0),
               {}).schedule
    h, w = mpdata_volumes((8192, 8192, 64), (1, 1), 64, 64)
    return [("recursive-doubling allgather of 4 KiB, 256 ranks", rd),
            ("MPDATA 64 x 64", halo_schedule(64, 64, h, w)),
            ("shuffled 5-point stencil, 32 x 32 ranks, 64 KiB", shuffled_stencil(32, 65536)),
            ("random exchange, 1,024 ranks", sparse(1024, 6, 32768))]


def main(seconds: float) -> None:
    plat, mod = platform(), model()
    swaps, classes = group_swaps(plat), node_classes(plat)
    print(f"{len(plat.nodes)} nodes ({CLUSTERS} clusters x {NODES}), {PPN} ranks per node, Hockney; "
          f"{seconds:g} s of search per start")
    for name, schedule in cases():
        p = schedule.nprocs
        used = p // PPN
        capacity = np.where(np.arange(len(plat.nodes)) < used, PPN, 0)
        base = Mapping.on_nodes(np.zeros(p, dtype=np.int64))
        price = schedule_pricer(schedule, plat, mod, base)
        plain = schedule_pricer(schedule, plat, mod, base, tie_break=False)
        in_order = Mapping.sequential(plat, p, PPN).node_of_rank
        sequential = plain(in_order)
        print(f"\n{name}: {schedule.ntransmissions:,} transmissions on {used} nodes; sequential "
              f"{sequential * 1e3:.3f} ms")
        for label, start in (("sequential", in_order),
                             ("graph", graph_start(schedule, capacity, level_groups(plat)))):
            r = improve(price, start, capacity, swaps, seconds, classes=classes)
            print(f"  from {label:<10} {r.start_time_s * 1e3:9.3f} ms -> {r.time_s * 1e3:9.3f} ms  "
                  f"({sequential / r.time_s:5.2f}x sequential)  {r.evaluations:,} placements in {r.seconds:.1f} s "
                  f"({r.evaluations / r.seconds:,.0f}/s), {'local optimum' if r.converged else 'time limit'}; "
                  f"{dict(r.accepted)}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
