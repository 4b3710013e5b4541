"""Rules files written by commcost steer the real Open MPI (issue 5 item 3): who sends what to whom.

The signal is Open MPI's pml/monitoring component, read by
:func:`ompi_monitoring.run_monitored`: at MPI_Finalize every rank reports
one line per peer it sent to, ``I <rank> <peer> <bytes> bytes <count> msgs
sent`` for collective (internal) traffic. Peers and message counts tell the algorithms apart:
basic_linear bcast sends from the root to every rank; binomial sends 0->1,
0->2, 1->3 (P = 4); pipeline with segments sends along the chain
0->1->2->3, ceil(n / segsize) messages each. The runs are skipped when
mpi4py or mpirun are missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ompi_monitoring
from commcost.collectives import Collective, find
from commcost.io.ompi_rules import write_ompi_rules
from commcost.selection.decision import Choice, Rule, Selection

pytestmark = pytest.mark.skipif(not ompi_monitoring.available(), reason="needs mpi4py and mpirun")


def sends(rules: Path | None, nprocs: int, collective: str, nbytes: int) -> dict[tuple[int, int], int]:
    """``{(rank, peer): messages}`` of one collective call under ``rules`` (None: no rules file)."""
    mca = {} if rules is None else {"coll_tuned_use_dynamic_rules": "1",
                                    "coll_tuned_dynamic_rules_filename": str(rules)}
    traffic = ompi_monitoring.run_monitored(collective, nprocs, nbytes, mca=mca)
    return {pair: messages for pair, (_, messages) in traffic.items()}


LINEAR = {(0, 1): 1, (0, 2): 1, (0, 3): 1}
BINOMIAL = {(0, 1): 1, (0, 2): 1, (1, 3): 1}


@pytest.fixture(scope="module")
def bcast_rules(tmp_path_factory) -> Path:
    lin = Choice(find(Collective.BCAST, "basic_linear"))
    binomial = Choice(find(Collective.BCAST, "binomial"), {"segsize": 0})
    pipeline = Choice(find(Collective.BCAST, "pipeline"), {"segsize": 16384})
    chain = Choice(find(Collective.BCAST, "chain"), {"segsize": 0, "fanout": 1})
    sel = Selection(Collective.BCAST, "ompi", (
        Rule(3, 4, 0, 1023, lin), Rule(3, 4, 1024, 65535, binomial), Rule(3, 4, 65536, 1 << 24, pipeline),
        Rule(2, 2, 0, 1 << 24, chain)), "tuning-file test")
    path = tmp_path_factory.mktemp("rules") / "bcast.rules"
    write_ompi_rules([sel], path)
    return path


@pytest.mark.parametrize("nprocs, nbytes, expected", [
    (4, 1023, LINEAR),                                  # below the boundary: basic_linear
    (4, 1024, BINOMIAL),                                # at the boundary: binomial
    (4, 200000, {(0, 1): 13, (1, 2): 13, (2, 3): 13}),  # pipeline, ceil(200000 / 16384) = 13 segments
])
def test_bcast_runs_the_algorithm_the_file_names(bcast_rules, nprocs, nbytes, expected):
    assert sends(bcast_rules, nprocs, "bcast", nbytes) == expected


def test_a_malformed_file_is_rejected_and_open_mpi_falls_back_to_its_fixed_decision(bcast_rules, tmp_path):
    bad = tmp_path / "bad.rules"
    # the first rule of a communicator size must be for 0 bytes; Open MPI drops the whole file
    bad.write_text(bcast_rules.read_text().replace("\n0 1 0 0\n", "\n1 1 0 0\n", 1))
    fixed = sends(None, 4, "bcast", 100)
    assert fixed != LINEAR  # Open MPI's own choice for P = 4, 100 bytes is not basic_linear...
    assert sends(bcast_rules, 4, "bcast", 100) == LINEAR  # ...the good file's is...
    assert sends(bad, 4, "bcast", 100) == fixed  # ...and the bad file changes nothing


def test_allreduce_and_alltoall_from_one_file(tmp_path):
    ring = Choice(find(Collective.ALLREDUCE, "ompi.ring"))
    rdouble = Choice(find(Collective.ALLREDUCE, "ompi.recursive_doubling"))
    bruck = Choice(find(Collective.ALLTOALL, "ompi.modified_bruck"))
    pairwise = Choice(find(Collective.ALLTOALL, "ompi.pairwise"))
    path = tmp_path / "two.rules"
    write_ompi_rules([Selection(Collective.ALLREDUCE, "ompi", (Rule(4, 4, 0, 4095, rdouble),
                                                               Rule(4, 4, 4096, 1 << 20, ring))),
                      Selection(Collective.ALLTOALL, "ompi", (Rule(4, 4, 0, 99, bruck),
                                                              Rule(4, 4, 100, 1 << 20, pairwise)))], path)
    # ring: each rank to its right neighbour, 2 (P - 1) = 6 messages; recursive doubling: to r^1 and r^2
    assert sends(path, 4, "allreduce", 8192) == {(r, (r + 1) % 4): 6 for r in range(4)}
    assert sends(path, 4, "allreduce", 64) == {(r, r ^ d): 1 for r in range(4) for d in (1, 2)}
    # modified Bruck: log2 P = 2 steps to r+1 and r+2; pairwise: P - 1 steps, one message to every other rank
    # (not basic_linear: it posts persistent requests, which pml/monitoring does not count)
    assert sends(path, 4, "alltoall", 50) == {(r, (r + d) % 4): 1 for r in range(4) for d in (1, 2)}
    assert sends(path, 4, "alltoall", 200) == {(r, q): 1 for r in range(4) for q in range(4) if q != r}
