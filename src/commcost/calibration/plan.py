"""What a calibration measures: the benchmark points of each mpirun, as data (no MPI here).

``commcost calibrate`` (the parent) and ``commcost.launch.mpi_worker`` (the
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
crossing    ``crossing``      all ranks    message      pairs k     -        - / -
reduction   ``reduction``     1            buffer       -           -        - / ``<op>_<type>``
allreduce,  ``collective``    all ranks    message or   -           -        the collective / Open MPI name
reduce, ...                                block
==========  ================  ===========  ===========  ==========  =======  ===============================

``reduction`` runs on its own, one rank, channel ``local``
(``MPI_Reduce_local``, issue 7 item 2); every collective benchmark
(``allreduce``, ``reduce``, ``allgather``, ``alltoall``, ``scatter``,
``gather``; ``collectives`` = all six) launches one mpirun per Open MPI
algorithm id, forced with ``coll_tuned_<collective>_algorithm`` (issue 7
item 3), on the shm channel.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

COLLECTIVE_BENCHMARKS = ("allreduce", "reduce", "allgather", "alltoall", "scatter", "gather")
# the collectives the worker times as one call (forced algorithm, or the MPI's own pick with --calls)
TIMED_COLLECTIVES = (*COLLECTIVE_BENCHMARKS, "bcast")
BENCHMARKS = ("pingpong", "ringtau", "nbft", "bcast", "hvpp", "crossing", "reduction", *COLLECTIVE_BENCHMARKS)
DEFAULT_BENCHMARKS = ("pingpong", "ringtau")
MAX_CALIBRATION_RANKS = 4096  # a calibration is a short run; its plan holds a Ring_tau point per tau <= P
ROW_NAMES = {"pingpong": "pingpong", "ringtau": "ring_tau", "nbft": "nbft", "bcast": "bcast_gather",
             "hvpp": "hvpp", "crossing": "crossing", "reduction": "reduction", **{c: "collective" for c in COLLECTIVE_BENCHMARKS}}
# the reduction benchmark's (operation, datatype) pairs and buffer sizes (bytes, multiples of 8)
REDUCTIONS = (("sum", "double"), ("sum", "int"), ("max", "double"))
# 0 B is the call's overhead (Python, mpi4py), subtracted from the others by the fit
REDUCTION_SIZES = (0, *(8 << (3 * k) for k in range(7)))  # 0, 8 B .. 2 MiB, factor 8
# every forced-algorithm collective point: message (reduce, allreduce) or block (the others), bytes
COLLECTIVE_SIZES = (1024, 8192, 65536, 524288)
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
    run: int = 0  # the launch round (calibrate --rounds)

    def ident(self) -> tuple:
        """The columns that name the point, as :func:`row_ident` gives them for a row."""
        return row_ident(self)


_IDENT = ("benchmark", "channel", "nprocs", "nbytes", "tau", "segsize", "collective", "algorithm", "run")


def row_ident(row: Any) -> tuple:
    """The point a measurements row (anything with these attributes) measures, whatever its MPI and host."""
    return tuple(getattr(row, name) for name in _IDENT)


def parse_benchmarks(text: str) -> tuple[str, ...]:
    """``"pingpong,ringtau"`` -> ``("pingpong", "ringtau")``; ValueError naming an unknown one (``all`` = every one)."""
    names = [n.strip().lower().replace("_", "").replace("-", "") for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return BENCHMARKS
    aliases = {"ring": "ringtau", "highvolumepingpong": "hvpp", "bcastgather": "bcast", "reducelocal": "reduction"}
    names = [aliases.get(n, n) for n in names]
    if "collectives" in names:
        names = [n for n in names if n != "collectives"] + list(COLLECTIVE_BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise ValueError(f"unknown benchmark {unknown[0] if unknown else text!r}; "
                         f"expected a comma-separated list of {', '.join(BENCHMARKS)} (or collectives, all)")
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
    :data:`HVPP_TOTAL` / n bytes, received in order and reversed;
    ``crossing`` k = 1..P/2 pairs (rank i with rank i + P/2) exchanging at
    once, at ``sizes`` (paper 001 Fig. 6: the lower half's nodes with the
    upper half's, across the links between them);
    ``reduction`` every pair of :data:`REDUCTIONS` at :data:`REDUCTION_SIZES`
    on one rank; a collective one algorithm at :data:`COLLECTIVE_SIZES`, all
    ranks.
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
    if benchmark == "crossing":
        return [Point(name, channel, procs, int(m), tau=k) for m in sizes for k in range(1, procs // 2 + 1)]
    if benchmark == "reduction":
        return [Point(name, channel, 1, m, algorithm=f"{op}_{kind}") for op, kind in REDUCTIONS
                for m in REDUCTION_SIZES]
    if benchmark in COLLECTIVE_BENCHMARKS:
        return [Point(name, channel, procs, m, collective=benchmark, algorithm=algorithm) for m in COLLECTIVE_SIZES]
    raise ValueError(f"unknown benchmark {benchmark!r}")


def call_points(calls: str, channel: str, procs: int, sizes: Sequence[int], label: str) -> list[Point]:
    """The points of timing collectives on all ``procs`` ranks as the MPI selects them (no algorithm
    forced), labelled ``label`` in the algorithm column: ``commcost verify``'s runs with and without a rules
    file. ``calls`` is ``bcast:1024:65536,reduce``: each collective with its sizes (commcost's nbytes), or
    ``sizes`` where it names none."""
    out = []
    for item in (c.strip() for c in calls.split(",") if c.strip()):
        name, *own = item.split(":")
        out += [Point("collective", channel, procs, int(m), collective=name, algorithm=label)
                for m in (own or sizes)]
    return out


def ompi_algorithms(collective: str) -> dict[int, str]:
    """Open MPI 5's ``coll_tuned_<collective>_algorithm`` ids and names, as commcost's registry has them
    (checked against ``ompi_info`` by tests/test_ompi_info_algorithms.py)."""
    from commcost.collectives import Collective, algorithms

    return {a.id: a.name for a in algorithms(Collective(collective)) if a.library == "ompi" and a.id}


@dataclass(frozen=True)
class Run:
    """One mpirun: benchmarks measured in it, its channel, the forced Open MPI algorithm id (bcast or
    ``collective``) and, when not the calibration's ``--procs``, its rank count (``reduction``: 1)."""

    benchmarks: tuple[str, ...]
    channel: str
    algorithm_id: int | None = None
    collective: str = ""
    procs: int | None = None
    round: int = 0  # which launch of the same run this is (calibrate --rounds); its rows' ``run``

    @property
    def algorithm(self) -> str:
        """The forced algorithm's name, empty when none is forced."""
        if not self.algorithm_id:
            return ""
        if self.collective:
            return ompi_algorithms(self.collective).get(self.algorithm_id, "")
        return OMPI_BCAST_ALGORITHMS.get(self.algorithm_id, "")

    def points(self, procs: int, sizes: Sequence[int]) -> list[Point]:
        """Every point of the run, in measuring order (numbered with the run's round)."""
        points = [p for b in self.benchmarks for p in run_points(b, self.channel, procs, sizes,
                                                                 algorithm=self.algorithm)]
        return [replace(p, run=self.round) for p in points] if self.round else points


def plan_runs(benchmarks: Sequence[str], channels: Sequence[str], bcast_channels: Sequence[str] = ("shm",),
              procs: int | None = None) -> list[Run]:
    """The mpiruns of a calibration: per channel one run for the point-to-point benchmarks and NBFT,
    one single-rank run for the local reductions, then one run per Open MPI broadcast algorithm 1..9
    and one per algorithm of each collective benchmark (each needs its own ``--mca`` settings);
    with ``procs``, algorithms Open MPI does not run on that many ranks (two_proc) are left out."""
    from commcost.collectives import Collective, find

    runs = []
    shared = tuple(b for b in benchmarks if b not in ("bcast", "reduction", *COLLECTIVE_BENCHMARKS))
    if shared:
        runs += [Run(shared, c) for c in channels]
    if "reduction" in benchmarks:
        runs.append(Run(("reduction",), "local", procs=1))
    if "bcast" in benchmarks:
        runs += [Run(("bcast",), c, i) for c in bcast_channels for i in OMPI_BCAST_ALGORITHMS]
    for coll in (b for b in COLLECTIVE_BENCHMARKS if b in benchmarks):
        for i, name in ompi_algorithms(coll).items():
            if procs is None or find(Collective(coll), f"ompi.{name}").supports(procs):
                runs.append(Run((coll,), bcast_channels[0], i, collective=coll))
    return runs
