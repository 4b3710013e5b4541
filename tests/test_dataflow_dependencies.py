"""The data-flow checker on dependency schedules: no transmission forwards data before it arrived."""

from __future__ import annotations

import pytest

from commcost.collectives.case import Case, Collective
from commcost.collectives.dataflow import DataflowError, check
from commcost.collectives.recorder import Recorder


def binomial_bcast(nprocs: int, nbytes: int, forget: tuple[int, int] | None = None):
    """Open MPI's binomial tree on P = 8 (0 -> 1, 2, 4; 1 -> 3, 5; 2 -> 6; 3 -> 7), each rank forwarding
    after its reception; ``forget`` = (src, dst) drops that send's wait."""
    rec = Recorder(Case(Collective.BCAST, nprocs, nbytes), data=True).dependencies()
    rec.phase("tree")
    got = {}
    for src, dst in ((0, 1), (0, 2), (0, 4), (1, 3), (1, 5), (2, 6), (3, 7)):
        i = rec.send(src, dst, (0, nbytes))
        if src in got and (src, dst) != forget:
            rec.wait(i, got[src])
        got[dst] = i
    return rec.build("binomial", {})


def test_a_tree_that_forwards_after_receiving_passes():
    report = check(binomial_bcast(8, 4))
    assert report.nbytes_sent == 7 * 4 and report.nbytes_redundant == 0


def test_forwarding_before_the_data_arrived_is_caught_even_if_it_comes_earlier_in_the_arrays():
    # 0 -> 1 comes first in the arrays, but 1 -> 3 does not wait for it: 1 may not hold the message yet
    with pytest.raises(DataflowError, match=r"1 -> 3: the sender does not hold byte 0 .*transmission 0"):
        check(binomial_bcast(8, 4, forget=(1, 3)))


def test_a_reduction_forwards_only_the_contributions_it_waited_for():
    case = Case(Collective.REDUCE, 4, 2)
    for wait_for_both in (True, False):
        rec = Recorder(case, data=True).dependencies()
        rec.phase("up")
        a = rec.send(2, 1, (0, 2), combine=True)
        b = rec.send(3, 1, (0, 2), combine=True)
        c = rec.send(1, 0, (0, 2), combine=True)
        rec.wait(c, a)
        if wait_for_both:
            rec.wait(c, b)
        cs = rec.build("chain", {})
        if wait_for_both:
            check(cs)
        else:  # rank 1 sent before it had 3's contribution: the root misses it
            with pytest.raises(DataflowError, match="missing rank 3"):
                check(cs)
