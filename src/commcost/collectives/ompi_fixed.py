"""Open MPI 5.0's own choice: the algorithm coll/tuned runs when no dynamic rules are given.

What the library runs by default, on a whole communicator or on the
sub-communicators of coll/han (:mod:`.ompi_han`); the selection layer
compares a model's choice with it (:mod:`commcost.selection.ompi_fixed`). Rewrites the decision functions
``ompi_coll_tuned_<collective>_intra_dec_fixed`` of
``ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`` (Open MPI v5.0.10; the
file is unchanged on the v5.0.x branch that 5.0.11 comes from) and what
``ompi_coll_tuned_<collective>_intra_do_this`` (coll_tuned_<collective>_decision.c)
then passes to the algorithm. The switch points are in :mod:`.ompi_fixed_tables`.

Message sizes are bytes as the C code computes them, which is commcost's
``Case.nbytes`` for every collective here: bcast, reduce and allreduce the
whole message (``dsize * count``); scatter, gather, allgather and alltoall
one rank's block (``dsize * scount``, not the total); reduce_scatter
(not a commcost collective yet) ``dsize * sum(rcounts)``. reduce, allreduce
and reduce_scatter also look at whether the op is commutative.

Parameters, in commcost's names: the fixed functions pass ``segsize 0``
(no segmentation) and fan-out 0 to every algorithm. The chain trees
(bcast and reduce id 2) get fan-out 0, which ``ompi_coll_base_topo_build_chain``
turns into 1, so ``fanout`` is 1 here. bcast knomial takes its radix from
``coll_tuned_bcast_algorithm_knomial_radix`` (default 4); scatter linear_nb
its ``max_requests`` from ``coll_tuned_scatter_algorithm_max_requests``
(``ompi_coll_tuned_scatter_blocking_send_ratio``, default 0: no blocking
sends); alltoall linear_sync and the segmented reduce trees take
``max_requests`` (alltoall: ``coll_tuned_alltoall_algorithm_max_requests``,
default 0; reduce: 0), 0 meaning no limit; allgather bruck (id 2) is
5.0's radix-2 Bruck, which takes no radix. Defaults of MCA parameters are assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from commcost.collectives import ompi_fixed_tables as tables
from commcost.collectives.case import Collective
from commcost.collectives.registry import Algorithm, find
from commcost.errors import InputError

VERSION = "Open MPI 5.0 fixed decision (coll_tuned_decision_fixed.c, v5.0.10 = v5.0.x)"
KNOMIAL_RADIX = 4  # coll_tuned_bcast_algorithm_knomial_radix, default
COLLECTIVES = ("bcast", "scatter", "gather", "allgather", "reduce", "allreduce", "alltoall", "reduce_scatter")


@dataclass(frozen=True)
class OmpiDecision:
    """Open MPI's pick for one call: the collective, the algorithm's id and name, and its arguments.

    ``params`` are the tunables the algorithm receives, in commcost's names
    (``segsize``, ``fanout``, ``radix``, ``max_requests``).
    """

    collective: str
    id: int
    name: str
    params: dict[str, int] = field(default_factory=dict)


def pick(row: tables.Row, nbytes: int) -> int:
    """The id a row of :mod:`.ompi_fixed_tables` gives for ``nbytes``."""
    alg = row[0]
    for index in range(1, len(row), 2):
        if nbytes < row[index]:
            break
        alg = row[index + 1]
    return alg


def lookup(table: tables.Table, nprocs: int, nbytes: int) -> int:
    """The id a table gives for a communicator of ``nprocs`` ranks and ``nbytes``."""
    for limit, row in table:
        if limit is None or nprocs < limit:
            return pick(row, nbytes)
    raise ValueError("a decision table must end with a row for every larger communicator")


def _params(collective: str, alg: int) -> dict[str, int]:
    """What ``ompi_coll_tuned_<collective>_intra_do_this`` passes to algorithm ``alg`` from a fixed decision."""
    if collective == "bcast":
        if alg == 1:
            return {}
        extra = {2: {"fanout": 1}, 7: {"radix": KNOMIAL_RADIX}}.get(alg, {})
        return {"segsize": 0, **extra}
    if collective == "reduce" and alg in (2, 3, 4, 5, 6):
        return {"segsize": 0, "max_requests": 0, **({"fanout": 1} if alg == 2 else {})}
    if collective == "allreduce" and alg == 5:
        return {"segsize": 0}
    if collective == "allgather" and alg == 2:
        return {"radix": 2}
    if (collective, alg) in (("scatter", 3), ("alltoall", 4)):
        return {"max_requests": 0}
    if (collective, alg) == ("gather", 3):
        return {"segsize": 0}
    return {}


def _decision(collective: str, alg: int) -> OmpiDecision:
    return OmpiDecision(collective, alg, tables.NAMES[collective][alg], _params(collective, alg))


def _check(nprocs: int, nbytes: int) -> None:
    if nprocs < 1 or nbytes < 0:
        raise InputError(f"need nprocs >= 1 and nbytes >= 0, got {nprocs} and {nbytes}")


def bcast_decision(nprocs: int, nbytes: int) -> OmpiDecision:
    """``ompi_coll_tuned_bcast_intra_dec_fixed``; ``nbytes`` = dsize * count, the whole message."""
    _check(nprocs, nbytes)
    return _decision("bcast", lookup(tables.BCAST, nprocs, nbytes))


def scatter_decision(nprocs: int, nbytes: int) -> OmpiDecision:
    """``ompi_coll_tuned_scatter_intra_dec_fixed``; ``nbytes`` = one rank's block (dsize * scount at the root)."""
    _check(nprocs, nbytes)
    return _decision("scatter", lookup(tables.SCATTER, nprocs, nbytes))


def gather_decision(nprocs: int, nbytes: int) -> OmpiDecision:
    """``ompi_coll_tuned_gather_intra_dec_fixed``; ``nbytes`` = one rank's block (dsize * rcount at the root)."""
    _check(nprocs, nbytes)
    return _decision("gather", lookup(tables.GATHER, nprocs, nbytes))


def allgather_decision(nprocs: int, nbytes: int) -> OmpiDecision:
    """``ompi_coll_tuned_allgather_intra_dec_fixed``; ``nbytes`` = one rank's block (dsize * scount)."""
    _check(nprocs, nbytes)
    alg = pick(tables.ALLGATHER_PAIR, nbytes) if nprocs == 2 else lookup(tables.ALLGATHER, nprocs, nbytes)
    return _decision("allgather", alg)


def alltoall_decision(nprocs: int, nbytes: int) -> OmpiDecision:
    """``ompi_coll_tuned_alltoall_intra_dec_fixed``; ``nbytes`` = the block for one peer (dsize * scount)."""
    _check(nprocs, nbytes)
    alg = pick(tables.ALLTOALL_PAIR, nbytes) if nprocs == 2 else lookup(tables.ALLTOALL, nprocs, nbytes)
    return _decision("alltoall", alg)


def reduce_decision(nprocs: int, nbytes: int, commutative: bool = True) -> OmpiDecision:
    """``ompi_coll_tuned_reduce_intra_dec_fixed``; ``nbytes`` = dsize * count, the whole vector."""
    _check(nprocs, nbytes)
    table = tables.REDUCE if commutative else tables.REDUCE_NONCOMMUTATIVE
    return _decision("reduce", lookup(table, nprocs, nbytes))


def allreduce_decision(nprocs: int, nbytes: int, commutative: bool = True) -> OmpiDecision:
    """``ompi_coll_tuned_allreduce_intra_dec_fixed``; ``nbytes`` = dsize * count, the whole vector."""
    _check(nprocs, nbytes)
    table = tables.ALLREDUCE if commutative else tables.ALLREDUCE_NONCOMMUTATIVE
    return _decision("allreduce", lookup(table, nprocs, nbytes))


def reduce_scatter_decision(nprocs: int, nbytes: int, commutative: bool = True) -> OmpiDecision:
    """``ompi_coll_tuned_reduce_scatter_intra_dec_fixed``; ``nbytes`` = dsize * sum(rcounts), the whole input."""
    _check(nprocs, nbytes)
    table = tables.REDUCE_SCATTER if commutative else tables.REDUCE_SCATTER_NONCOMMUTATIVE
    return _decision("reduce_scatter", lookup(table, nprocs, nbytes))


def decide(collective: Collective | str, nprocs: int, nbytes: int, commutative: bool = True) -> OmpiDecision:
    """Open MPI 5.0's fixed decision for ``collective`` (a :class:`Collective` or Open MPI's name)."""
    name = collective.value if isinstance(collective, Collective) else collective
    if name in ("reduce", "allreduce", "reduce_scatter"):
        return {"reduce": reduce_decision, "allreduce": allreduce_decision,
                "reduce_scatter": reduce_scatter_decision}[name](nprocs, nbytes, commutative)
    simple = {"bcast": bcast_decision, "scatter": scatter_decision, "gather": gather_decision,
              "allgather": allgather_decision, "alltoall": alltoall_decision}
    if name not in simple:
        raise InputError(f"no fixed decision for {name!r}; expected one of {', '.join(COLLECTIVES)}")
    return simple[name](nprocs, nbytes)


def registered(decision: OmpiDecision) -> Algorithm | None:
    """commcost's algorithm for the decision's id, or None when commcost does not model it (yet)."""
    try:
        collective = Collective(decision.collective)
        return find(collective, str(decision.id))
    except (ValueError, InputError):
        return None


