"""Open MPI 5.0's fixed decisions (commcost.selection.ompi_fixed), checked point by point against
coll_tuned_decision_fixed.c (v5.0.10), against the ids ompi_info lists, and through fixed_selection."""

from __future__ import annotations

import pytest

from commcost.collectives import Collective, build, Case
from commcost.errors import InputError
from commcost.selection import ompi_fixed as of
from commcost.collectives import ompi_fixed_tables as tables
from collective_helpers import ompi_info_algorithms

# (P, n, id), worked by hand from ompi_coll_tuned_bcast_intra_dec_fixed: both sides of every size
# threshold of the P < 4, P < 8 and P < 256 rows and of the communicator-size thresholds.
BCAST_POINTS = [
    (2, 0, 3), (2, 31, 3), (2, 32, 5), (2, 255, 5), (2, 256, 3), (2, 511, 3), (2, 512, 7), (2, 1023, 7),
    (3, 1024, 1), (3, 32767, 1), (3, 32768, 5), (3, 131071, 5), (3, 131072, 2), (3, 262143, 2),
    (3, 262144, 1), (3, 524287, 1), (3, 524288, 6), (3, 1048575, 6), (3, 1048576, 5), (3, 1 << 30, 5),
    (4, 63, 5), (4, 64, 6), (7, 127, 6), (7, 128, 5), (5, 2047, 5), (5, 2048, 6), (6, 8191, 6), (6, 8192, 1),
    (7, 1048575, 1), (7, 1048576, 2), (8, 7, 7), (8, 8, 5), (15, 63, 5), (15, 64, 7), (8, 4095, 7),
    (8, 4096, 5), (8, 16383, 5), (8, 16384, 6), (8, 32767, 6), (8, 32768, 1),
    (16, 4095, 7), (16, 4096, 6), (31, 1048575, 6), (31, 1048576, 8), (32, 2047, 6), (63, 2048, 7),
    (64, 0, 7), (127, 1 << 24, 7), (128, 1, 6), (128, 2, 5), (255, 16383, 5), (255, 16384, 1),
    (200, 32767, 1), (200, 32768, 5), (200, 65535, 5), (200, 65536, 7), (256, 16383, 7), (1023, 16384, 4),
    (512, 32767, 4), (512, 32768, 7), (1024, 524287, 7), (2047, 524288, 8), (2048, 262143, 7),
    (4095, 262144, 8), (4096, 8191, 7), (4096, 8192, 5), (8192, 16383, 5), (8192, 16384, 7),
    (8192, 262143, 7), (8192, 262144, 8),
]

# (collective, P, n, commutative, id), from the other *_intra_dec_fixed functions of the same file.
OTHER_POINTS = [
    ("scatter", 2, 1, True, 3), ("scatter", 2, 2, True, 1), ("scatter", 3, 131071, True, 1),
    ("scatter", 3, 131072, True, 3), ("scatter", 3, 262144, True, 1), ("scatter", 4, 2047, True, 2),
    ("scatter", 4, 2048, True, 1), ("scatter", 7, 32768, True, 3), ("scatter", 7, 1048576, True, 1),
    ("scatter", 16, 16384, True, 1), ("scatter", 16, 32768, True, 3), ("scatter", 64, 511, True, 2),
    ("scatter", 64, 512, True, 3),
    ("gather", 2, 1, True, 3), ("gather", 2, 2, True, 1), ("gather", 3, 4, True, 2), ("gather", 3, 32768, True, 1),
    ("gather", 3, 65536, True, 2), ("gather", 3, 131072, True, 3), ("gather", 4, 1023, True, 2),
    ("gather", 4, 1024, True, 1), ("gather", 7, 262144, True, 3), ("gather", 8, 1 << 20, True, 2),
    ("gather", 256, 2048, True, 1), ("gather", 511, 8192, True, 2),
    ("allgather", 2, 1 << 20, True, 6), ("allgather", 3, 1 << 20, True, 3), ("allgather", 31, 1, True, 3),
    ("allgather", 32, 1023, True, 3), ("allgather", 32, 1024, True, 5), ("allgather", 63, 65536, True, 4),
    ("allgather", 64, 512, True, 5), ("allgather", 300, 32, True, 2), ("allgather", 300, 128, True, 3),
    ("reduce", 2, 7, True, 7), ("reduce", 2, 8, True, 4), ("reduce", 3, 16, True, 3), ("reduce", 3, 32, True, 1),
    ("reduce", 3, 262144, True, 3), ("reduce", 3, 524288, True, 2), ("reduce", 3, 1048576, True, 3),
    ("reduce", 4, 4095, True, 4), ("reduce", 4, 4096, True, 2), ("reduce", 4, 65536, True, 5),
    ("reduce", 4, 262144, True, 1), ("reduce", 8, 8191, True, 4), ("reduce", 8, 8192, True, 5),
    ("reduce", 16, 4096, True, 5), ("reduce", 2, 7, False, 6), ("reduce", 2, 8, False, 1),
    ("reduce", 5, 0, False, 1), ("reduce", 8, 1024, False, 1), ("reduce", 8, 8192, False, 6),
    ("allreduce", 2, 7, True, 4), ("allreduce", 2, 8, True, 3), ("allreduce", 3, 4096, True, 4),
    ("allreduce", 3, 8192, True, 3), ("allreduce", 3, 16384, True, 4), ("allreduce", 3, 65536, True, 5),
    ("allreduce", 3, 262144, True, 6), ("allreduce", 4, 15, True, 4), ("allreduce", 4, 16, True, 3),
    ("allreduce", 4, 8192, True, 6), ("allreduce", 16, 63, True, 5), ("allreduce", 16, 64, True, 3),
    ("allreduce", 3, 131071, False, 3), ("allreduce", 3, 131072, False, 1), ("allreduce", 8, 1 << 20, False, 2),
    ("alltoall", 2, 1, True, 2), ("alltoall", 2, 2, True, 5), ("alltoall", 2, 4, True, 2),
    ("alltoall", 2, 16, True, 5), ("alltoall", 2, 64, True, 2), ("alltoall", 2, 256, True, 5),
    ("alltoall", 2, 4096, True, 2), ("alltoall", 2, 32768, True, 4), ("alltoall", 2, 262144, True, 5),
    ("alltoall", 2, 1048576, True, 2), ("alltoall", 3, 8191, True, 4), ("alltoall", 3, 8192, True, 1),
    ("alltoall", 4, 16384, True, 4), ("alltoall", 4, 65536, True, 1), ("alltoall", 4, 524288, True, 2),
    ("alltoall", 7, 1048576, True, 1), ("alltoall", 8, 262143, True, 4), ("alltoall", 8, 262144, True, 1),
    ("reduce_scatter", 2, 65535, True, 3), ("reduce_scatter", 2, 65536, True, 4),
    ("reduce_scatter", 2, 131072, True, 3), ("reduce_scatter", 4, 7, True, 1), ("reduce_scatter", 4, 8, True, 2),
    ("reduce_scatter", 4, 262144, True, 3), ("reduce_scatter", 4, 8, False, 1),
]


@pytest.mark.parametrize("nprocs,nbytes,alg", BCAST_POINTS)
def test_bcast_points(nprocs: int, nbytes: int, alg: int) -> None:
    decision = of.bcast_decision(nprocs, nbytes)
    assert decision.id == alg
    assert decision.name == tables.NAMES["bcast"][alg]


@pytest.mark.parametrize("collective,nprocs,nbytes,commutative,alg", OTHER_POINTS)
def test_other_points(collective: str, nprocs: int, nbytes: int, commutative: bool, alg: int) -> None:
    assert of.decide(collective, nprocs, nbytes, commutative).id == alg


def test_parameters_passed() -> None:
    """Fixed decisions pass segsize 0 and fan-out 0 (build_chain makes it 1); knomial gets radix 4."""
    assert of.bcast_decision(3, 200_000).params == {"segsize": 0, "fanout": 1}
    assert of.bcast_decision(2, 600).params == {"segsize": 0, "radix": 4}
    assert of.bcast_decision(3, 2000).params == {}
    assert of.decide("scatter", 7, 100_000).params == {"max_requests": 0}
    assert of.decide("gather", 3, 1 << 20).params == {"segsize": 0}
    assert of.decide("allgather", 300, 64).params == {"radix": 2}


def test_as_choice() -> None:
    """Registered ids give commcost's algorithm with the tunables it takes; unregistered ones None."""
    choice = of.as_choice(of.bcast_decision(3, 200_000))
    assert choice is not None and choice.algorithm.name == "chain" and dict(choice.params) == {"segsize": 0,
                                                                                                "fanout": 1}
    reduce = of.as_choice(of.decide("reduce", 8, 1 << 20))
    assert reduce is not None and reduce.algorithm.name == "binomial" and dict(reduce.params) == {"segsize": 0}
    assert of.as_choice(of.decide("allgather", 300, 64)).algorithm.name == "bruck"
    # every id Open MPI 5 can pick is modelled now (issue 7), the two_proc ones and reduce_scatter included
    for collective, nprocs, nbytes in [("allreduce", 3, 100_000), ("reduce", 2, 1), ("reduce_scatter", 4, 8),
                                       ("allgather", 2, 8), ("alltoall", 2, 2), ("alltoall", 3, 1)]:
        decision = of.decide(collective, nprocs, nbytes)
        choice = of.as_choice(decision)
        assert choice is not None and (choice.algorithm.id, choice.algorithm.name) == (decision.id, decision.name)


def test_registered_choices_build() -> None:
    """Every registered choice over the switch points builds a schedule with its parameters."""
    for collective in Collective:
        for nprocs in (2, 3, 4, 8, 16):
            for nbytes in of.switch_sizes(collective)[:12]:
                choice = of.as_choice(of.decide(collective, nprocs, nbytes))
                if choice is not None:
                    build(choice.algorithm, Case(collective, nprocs, max(nbytes, 1)), choice.params)


def test_bad_input() -> None:
    with pytest.raises(InputError):
        of.decide("barrier", 4, 8)
    with pytest.raises(InputError):
        of.bcast_decision(0, 8)


def _ompi_info_valid() -> dict[str, dict[int, str]]:
    return ompi_info_algorithms()


@pytest.mark.parametrize("collective", of.COLLECTIVES)
def test_ids_are_valid_for_ompi_info(collective: str) -> None:
    """Every id a table can give is one ompi_info lists for the collective, under the same name."""
    valid = _ompi_info_valid()[collective]
    for name, table in vars(tables).items():
        if not name.startswith(collective.upper()) or name.startswith("REDUCE_SCATTER") != (
                collective == "reduce_scatter"):
            continue
        rows = [table] if name.endswith("_PAIR") else [row for _, row in table]
        for row in rows:
            for alg in row[0::2]:
                assert alg in valid and valid[alg] == tables.NAMES[collective][alg], (name, alg)


@pytest.mark.parametrize("collective", list(Collective))
@pytest.mark.parametrize("commutative", [True, False])
def test_fixed_selection_reproduces_decisions(collective: Collective, commutative: bool) -> None:
    """A grid over every switch point gives rules that answer like the decision function, on and
    between grid points."""
    procs, sizes = of.switch_procs(collective, commutative), of.switch_sizes(collective, commutative)
    selection = of.fixed_selection(collective, procs, sizes, commutative)
    assert selection.library == "ompi" and "5.0" in selection.source
    probe_procs = sorted(set(procs) | {p + 1 for p in procs} | {p - 1 for p in procs if p > 1})
    probe_sizes = sorted(set(sizes) | {s + 1 for s in sizes} | {s - 1 for s in sizes if s > 0})
    for nprocs in probe_procs:
        if nprocs > procs[-1]:
            continue
        for nbytes in probe_sizes:
            if nbytes > sizes[-1]:
                continue
            decision = of.decide(collective, nprocs, nbytes, commutative)
            choice = selection.choice(nprocs, nbytes)
            assert choice is not None
            assert (choice.algorithm.id, choice.algorithm.collective) == (decision.id, collective)
            assert of.is_modelled(choice) == (of.as_choice(decision) is not None)
            if of.is_modelled(choice):
                assert choice == of.as_choice(decision)


def test_stand_in_does_not_build() -> None:
    choice = of.stand_in(of.OmpiDecision("alltoall", 99, "not_modelled"))
    assert not of.is_modelled(choice) and choice.algorithm.name == "not_modelled"
    with pytest.raises(InputError):
        build(choice.algorithm, Case(Collective.ALLTOALL, 2, 2))
