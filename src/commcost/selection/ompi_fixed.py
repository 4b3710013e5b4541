"""Open MPI 5.0's fixed decision as selections: the baseline a tuning file changes.

The decisions themselves (what ``coll_tuned_decision_fixed.c`` picks) are
:mod:`commcost.collectives.ompi_fixed`; here they become :class:`Choice` objects and
rules, with stand-ins for the ids commcost does not model.
"""

from __future__ import annotations

from typing import Iterable

from commcost.collectives import Algorithm, Collective, find
from commcost.collectives import ompi_fixed_tables as tables
from commcost.collectives.ompi_fixed import (COLLECTIVES, KNOMIAL_RADIX, VERSION, OmpiDecision, allgather_decision,
                                             allreduce_decision, alltoall_decision, bcast_decision, decide,
                                             gather_decision, lookup, pick, reduce_decision,
                                             reduce_scatter_decision, registered, scatter_decision)
from commcost.errors import InputError
from commcost.selection.decision import Choice, Selection, compress

__all__ = ["COLLECTIVES", "KNOMIAL_RADIX", "VERSION", "OmpiDecision", "allgather_decision", "allreduce_decision",
           "alltoall_decision", "as_choice", "bcast_decision", "decide", "fixed_selection", "gather_decision",
           "is_modelled", "lookup", "pick", "reduce_decision", "reduce_scatter_decision", "registered",
           "scatter_decision", "stand_in", "switch_procs", "switch_sizes"]


def as_choice(decision: OmpiDecision) -> Choice | None:
    """The decision as a :class:`Choice` of commcost's registered algorithm, or None when unregistered.

    Only the tunables commcost's builder takes are kept (e.g. reduce
    binomial's ``max_requests`` 0, no limit, is not modelled).
    """
    algorithm = registered(decision)
    if algorithm is None:
        return None
    known = {p.name for p in algorithm.params}
    return Choice(algorithm, {k: v for k, v in decision.params.items() if k in known})


def _not_modelled(*_: object) -> None:
    raise InputError("commcost has no schedule for this Open MPI algorithm yet")


def stand_in(decision: OmpiDecision) -> Choice:
    """A Choice for an id commcost does not register: an unregistered :class:`Algorithm` with Open MPI's
    name and id whose builder raises, so a :class:`Selection` keeps Open MPI's full decision."""
    algorithm = Algorithm(Collective(decision.collective), "ompi", decision.name, _not_modelled,
                          "not modelled by commcost (Open MPI fixed decision only)", id=decision.id)
    return Choice(algorithm, dict(decision.params))


def fixed_selection(collective: Collective, procs: Iterable[int], sizes: Iterable[int],
                    commutative: bool = True) -> Selection:
    """Open MPI's fixed decisions over a grid of communicator sizes x message sizes, compressed into rules.

    Every grid point gets its rule; ids commcost does not register (several
    reduce and allreduce ids, the two_proc algorithms of allgather and
    alltoall, alltoall linear_sync) appear as :func:`stand_in` choices; tell
    them with :func:`is_modelled`. Between grid points the decision of the
    point below is assumed (see :func:`.decision.compress`), so the grid
    must hold every switch point to be exact (:func:`switch_sizes`).
    """
    procs, sizes = sorted(set(procs)), sorted(set(sizes))
    grid = [[_choice(decide(collective, p, m, commutative)) for m in sizes] for p in procs]
    return compress(collective, "ompi", procs, sizes, grid, VERSION)


def _choice(decision: OmpiDecision) -> Choice:
    return as_choice(decision) or stand_in(decision)


def is_modelled(choice: Choice) -> bool:
    """Whether commcost can build the schedule of ``choice`` (its algorithm is registered)."""
    try:
        return find(choice.algorithm.collective, choice.algorithm.key) is choice.algorithm
    except InputError:
        return False


def _table(collective: Collective | str, commutative: bool) -> tuple[str, tables.Table]:
    """Open MPI's name of the collective and its table of switch points."""
    name = collective.value if isinstance(collective, Collective) else collective
    key = name.upper() + ("" if commutative else "_NONCOMMUTATIVE")
    return name, getattr(tables, key, None) or getattr(tables, name.upper())


def switch_sizes(collective: Collective | str, commutative: bool = True) -> list[int]:
    """Every message size where some row of the collective's table switches, with 0: a grid that holds
    these sizes gives an exact :func:`fixed_selection`."""
    name, table = _table(collective, commutative)
    rows = [row for _, row in table] + [getattr(tables, name.upper() + "_PAIR", (0,))]
    return sorted({0} | {limit for row in rows for limit in row[1::2]})


def switch_procs(collective: Collective | str, commutative: bool = True) -> list[int]:
    """Every communicator size where the collective's table changes row, with 1 and 2 (and 3 for the
    ``== 2`` special cases)."""
    _, table = _table(collective, commutative)
    return sorted({1, 2, 3} | {limit for limit, _ in table if limit is not None})
