"""The embedded Open MPI, with no dynamic rules, runs what commcost.selection.ompi_fixed says it picks.

The signal is pml monitoring (tests/ompi_monitoring.py): the messages each
rank's collective sent, per peer, must equal those of commcost's schedule of
the decided algorithm, and differ from those of a rival algorithm, so the
match tells the algorithm apart. Skipped without mpi4py and mpirun.
"""

from __future__ import annotations

import pytest

import ompi_monitoring as om
from commcost.collectives import Case, Collective, build, find
from commcost.selection import ompi_fixed as of

# (collective, P, n, the id ompi_fixed gives, a rival whose messages differ at this point)
POINTS = [
    ("bcast", 4, 2000, 5, "basic_linear"),
    ("bcast", 4, 10000, 1, "binomial"),
    ("bcast", 3, 200000, 2, "basic_linear"),
    ("scatter", 4, 100, 2, "basic_linear"),
    ("gather", 4, 2000, 1, "binomial"),
    ("reduce", 4, 100000, 5, "linear"),
    ("allreduce", 4, 10000, 6, "recursive_doubling"),
]


@pytest.mark.skipif(not om.available(), reason="needs mpi4py and mpirun")
@pytest.mark.parametrize("collective,nprocs,nbytes,alg,rival", POINTS)
def test_open_mpi_runs_the_fixed_decision(collective: str, nprocs: int, nbytes: int, alg: int, rival: str) -> None:
    decision = of.decide(collective, nprocs, nbytes)
    assert decision.id == alg
    choice = of.as_choice(decision)
    assert choice is not None
    case = Case(Collective(collective), nprocs, nbytes)
    expected = om.traffic_of_schedule(build(choice.algorithm, case, choice.params).schedule)
    other = om.traffic_of_schedule(build(find(case.collective, rival), case).schedule)
    assert expected != other
    assert om.run_monitored(collective, nprocs, nbytes) == expected


@pytest.mark.skipif(not om.available(), reason="needs mpi4py and mpirun")
def test_the_signal_follows_a_forced_algorithm() -> None:
    """Forcing basic_linear where the fixed rules pick binary_tree changes the messages to basic_linear's."""
    case = Case(Collective.BCAST, 4, 2000)
    forced = om.run_monitored("bcast", 4, 2000, mca={"coll_tuned_use_dynamic_rules": "1",
                                                      "coll_tuned_bcast_algorithm": "1"})
    assert forced == om.traffic_of_schedule(build(find(Collective.BCAST, "1"), case).schedule)
