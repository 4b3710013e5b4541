"""Open MPI 5's complete coll/tuned sets: small cases (P = 2, 4, 5, 8) of the algorithms added for issue 7."""

from __future__ import annotations

import numpy as np

from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check

ALLTOALL = Collective.ALLTOALL


def checked(collective, name, nprocs, nbytes, root=0, **params):
    """The schedule of ``name`` for one case, with payloads, after the data-flow checker."""
    cs = build(find(collective, name), Case(collective, nprocs, nbytes, root), params, data=True)
    check(cs)
    return cs


def phases(cs):
    """``[[(src, dst, payload, combine), ...] per phase]``."""
    s = cs.schedule
    return [[(int(s.src[i]), int(s.dst[i]), cs.payload[i], bool(cs.combine[i])) for i in range(sl.start, sl.stop)]
            for sl in s.phase_slices()]


# ------------------------------------------------------------------------------------------------ alltoall


def test_linear_sync_alltoall_on_5_ranks_with_two_outstanding_sends():
    """coll_base_alltoall.c linear_sync: rank r isends to r-1, r-2, ...; max_requests 2 gives 2 phases of 2."""
    n = 1
    cs = checked(ALLTOALL, "linear_sync", 5, n, max_requests=2)
    ph = phases(cs)
    assert len(ph) == 2
    assert [(s, t) for s, t, _, _ in ph[0] if s == 0] == [(0, 4), (0, 3)]
    assert [(s, t) for s, t, _, _ in ph[1] if s == 0] == [(0, 2), (0, 1)]
    assert ph[0][0][2] == ((4 * n, 5 * n),)  # block (0, 4)
    unlimited = checked(ALLTOALL, "linear_sync", 5, n).schedule
    linear = checked(ALLTOALL, "linear", 5, n).schedule
    for field in ("src", "dst", "nbytes", "phase"):
        assert np.array_equal(getattr(unlimited, field), getattr(linear, field))


def test_two_proc_alltoall_swaps_the_blocks_for_each_other():
    cs = checked(ALLTOALL, "two_proc", 2, 3)
    # block (0, 1) = [3, 6), block (1, 0) = [6, 9)
    assert phases(cs) == [[(0, 1, ((3, 6),), False), (1, 0, ((6, 9),), False)]]
