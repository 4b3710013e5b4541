"""What a calibration measures: the benchmark points of each mpirun, as data (no MPI here).

``commcost calibrate`` (the parent) and ``commcost.cli.mpi_worker`` (the
ranks) both build their points with :func:`run_points`, so the parent can
count progress and the worker can skip points already stored. A point is
the identifying part of a measurements row (docs/file-formats.md); how the
columns are used per benchmark:

==========  ================  ===========  ===========  ==========  =======  ===============================
benchmark   row benchmark     nprocs       nbytes       tau         segsize  collective / algorithm
==========  ================  ===========  ===========  ==========  =======  ===============================
pingpong    ``pingpong``      2            message      -           -        - / -
ringtau     ``ring_tau``      max(tau, 2)  message      tau         -        - / -
nbft        ``nbft``          P            message      -           -        - / -
bcast       ``bcast_gather``  all ranks    broadcast    -           m_s      ``bcast`` / Open MPI name
hvpp        ``hvpp``          2            one message  messages n  -        - / ``in_order``, ``reversed``
==========  ================  ===========  ===========  ==========  =======  ===============================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

BENCHMARKS = ("pingpong", "ringtau", "nbft", "bcast", "hvpp")
DEFAULT_BENCHMARKS = ("pingpong", "ringtau")
ROW_NAMES = {"pingpong": "pingpong", "ringtau": "ring_tau", "nbft": "nbft", "bcast": "bcast_gather",
             "hvpp": "hvpp"}
# coll_tuned_bcast_algorithm ids of Open MPI 5 (ompi_info --param coll tuned --level 9)
OMPI_BCAST_ALGORITHMS = {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "split_binary_tree",
                         5: "binary_tree", 6: "binomial", 7: "knomial", 8: "scatter_allgather",
                         9: "scatter_allgather_ring"}
SEGSIZE = 8192                                  # paper 004's m_s
NBFT_SIZES = (1024, SEGSIZE, 65536)             # Q(m) around m_s; gamma(P) at every size
BCAST_SIZES = tuple(16384 << k for k in range(7))  # 16 KiB .. 1 MiB, log2 step 1 (paper 004 section 6)
HVPP_TOTAL = 65536                              # bytes each way, split into n messages (paper 001 Fig. 4)
HVPP_COUNTS = (1, 4, 16, 64, 256)
HVPP_ORDERS = ("in_order", "reversed")


@dataclass(frozen=True)
class Point:
    """The identifying columns of one measurements row a benchmark will write."""

    benchmark: str
    channel: str
    nprocs: int
    nbytes: int
    tau: int | None = None
    segsize: int | None = None
    collective: str = ""
    algorithm: str = ""

    def ident(self) -> tuple:
        """The columns that name the point, as :func:`row_ident` gives them for a row."""
        return row_ident(self)


_IDENT = ("benchmark", "channel", "nprocs", "nbytes", "tau", "segsize", "collective", "algorithm")


def row_ident(row: Any) -> tuple:
    """The point a measurements row (anything with these attributes) measures, whatever its MPI and host."""
    return tuple(getattr(row, name) for name in _IDENT)


def parse_benchmarks(text: str) -> tuple[str, ...]:
    """``"pingpong,ringtau"`` -> ``("pingpong", "ringtau")``; ValueError naming an unknown one (``all`` = every one)."""
    names = [n.strip().lower().replace("_", "").replace("-", "") for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return BENCHMARKS
    aliases = {"ring": "ringtau", "highvolumepingpong": "hvpp", "bcastgather": "bcast"}
    names = [aliases.get(n, n) for n in names]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise ValueError(f"unknown benchmark {unknown[0] if unknown else text!r}; "
                         f"expected a comma-separated list of {', '.join(BENCHMARKS)} (or all)")
    return tuple(n for n in BENCHMARKS if n in names)


def run_points(benchmark: str, channel: str, procs: int, sizes: Sequence[int], *,
               algorithm: str = "") -> list[Point]:
    """The points one benchmark measures on ``procs`` ranks through ``channel``, in measuring order.

    ``sizes`` are the ping-pong and Ring_tau message sizes; Ring_tau runs
    tau = 1..procs (paper 000 section 5.2: tau processes each sending one
    message, so at most one transmission per rank); NBFT runs P = 2..procs
    at :data:`NBFT_SIZES` (paper 004 section 5.1); ``bcast`` one algorithm
    (an Open MPI name, forced by the launcher) at :data:`BCAST_SIZES`, all
    ranks; HighVolumePingPong n = :data:`HVPP_COUNTS` messages of
    :data:`HVPP_TOTAL` / n bytes, received in order and reversed.
    """
    name = ROW_NAMES[benchmark]
    if benchmark == "pingpong":
        return [Point(name, channel, 2, int(m)) for m in sizes]
    if benchmark == "ringtau":
        return [Point(name, channel, max(t, 2), int(m), tau=t) for m in sizes for t in range(1, procs + 1)]
    if benchmark == "nbft":
        return [Point(name, channel, p, m) for m in NBFT_SIZES for p in range(2, procs + 1)]
    if benchmark == "bcast":
        return [Point(name, channel, procs, m, segsize=SEGSIZE, collective="bcast", algorithm=algorithm)
                for m in BCAST_SIZES]
    if benchmark == "hvpp":
        return [Point(name, channel, 2, HVPP_TOTAL // n, tau=n, algorithm=order)
                for order in HVPP_ORDERS for n in HVPP_COUNTS]
    raise ValueError(f"unknown benchmark {benchmark!r}")


@dataclass(frozen=True)
class Run:
    """One mpirun: benchmarks measured in it, its channel and (bcast) the forced Open MPI algorithm id."""

    benchmarks: tuple[str, ...]
    channel: str
    algorithm_id: int | None = None

    @property
    def algorithm(self) -> str:
        """The forced algorithm's name, empty when none is forced."""
        return OMPI_BCAST_ALGORITHMS.get(self.algorithm_id, "") if self.algorithm_id else ""

    def points(self, procs: int, sizes: Sequence[int]) -> list[Point]:
        """Every point of the run, in measuring order."""
        return [p for b in self.benchmarks for p in run_points(b, self.channel, procs, sizes,
                                                               algorithm=self.algorithm)]


def plan_runs(benchmarks: Sequence[str], channels: Sequence[str], bcast_channels: Sequence[str] = ("shm",)) -> list[Run]:
    """The mpiruns of a calibration: per channel one run for the point-to-point benchmarks and NBFT,
    then one run per Open MPI broadcast algorithm 1..9 (each needs its own ``--mca`` settings)."""
    runs = []
    shared = tuple(b for b in benchmarks if b != "bcast")
    if shared:
        runs += [Run(shared, c) for c in channels]
    if "bcast" in benchmarks:
        runs += [Run(("bcast",), c, i) for c in bcast_channels for i in OMPI_BCAST_ALGORITHMS]
    return runs
