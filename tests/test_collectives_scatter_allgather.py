"""Open MPI's scatter, gather and allgather algorithms: hand-worked schedules and paper 003's stage sizes."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build, find
from collective_helpers import phases, run


def sizes(cs) -> list[list[float]]:
    s = cs.schedule
    return [list(s.nbytes[sl]) for sl in s.phase_slices()]


def blocks(payload: tuple, n: int) -> list[int]:
    """The blocks a payload carries, in buffer order."""
    return [b for a, z in payload for b in range(a // n, z // n)]


# --------------------------------------------------------------------------------------------- registry


def test_open_mpi_names_and_ids():
    def ids(collective):
        return {a.name: a.id for a in algorithms(collective) if a.library == "ompi" and a.id is not None}
    assert ids(Collective.SCATTER) == {"basic_linear": 1, "binomial": 2, "linear_nb": 3}
    assert ids(Collective.GATHER) == {"basic_linear": 1, "binomial": 2, "linear_sync": 3}
    assert ids(Collective.ALLGATHER) == {"linear": 1, "bruck": 2, "recursive_doubling": 3, "ring": 4, "neighbor": 5,
                                         "two_proc": 6, "sparbit": 7}
    assert find(Collective.ALLGATHER, "2").resolve_params() == {}
    # Open MPI main's k-ary Bruck and direct messaging stay available, without a 5.0 id
    assert find(Collective.ALLGATHER, "bruck-k-fanout").key == "generic.bruck-k-fanout"
    assert find(Collective.ALLGATHER, "direct-messaging").id is None


# ------------------------------------------------------------------------------------------------ scatter


def test_binomial_scatter_on_8_ranks():
    n = 3
    cs = run(Collective.SCATTER, "binomial", 8, n)
    got = [[(src, dst, blocks(p, n)) for src, dst, p in ph] for ph in phases(cs)]
    assert got == [
        [(0, 4, [4, 5, 6, 7])],
        [(0, 2, [2, 3]), (4, 6, [6, 7])],
        [(0, 1, [1]), (2, 3, [3]), (4, 5, [5]), (6, 7, [7])],
    ]
    assert not cs.schedule.posted.any()  # blocking sends


def test_binomial_scatter_with_a_root_wraps_runs_of_blocks():
    n = 2
    cs = run(Collective.SCATTER, "binomial", 8, n, root=5)
    first, second = phases(cs)[:2]
    assert [(s, d, blocks(p, n)) for s, d, p in first] == [(5, 1, [1, 2, 3, 4])]
    # virtual ranks 2, 3 are ranks 7, 0: one transmission, two byte ranges
    assert second[0] == (5, 7, ((14, 16), (0, 2)))
    assert cs.schedule.nbytes[1] == 2 * n


def test_binomial_scatter_on_10_ranks_is_open_mpis_picture():
    # coll_base_scatter.c: 0 -> 8, 4, 2, 1; 8 -> 9; 4 -> 6, 5; 2 -> 3; 6 -> 7
    cs = run(Collective.SCATTER, "binomial", 10, 1)
    assert [[(s, d, blocks(p, 1)) for s, d, p in ph] for ph in phases(cs)] == [
        [(0, 8, [8, 9])],
        [(0, 4, [4, 5, 6, 7])],
        [(0, 2, [2, 3]), (4, 6, [6, 7])],
        [(0, 1, [1]), (2, 3, [3]), (4, 5, [5]), (6, 7, [7]), (8, 9, [9])],
    ]


def test_paper_003_binomial_scatter_stage_sizes_halve():
    """Paper 003, Table 1 and Fig. 3: stage i has 2^i transmissions of m / 2^(i+1), m = P n in all."""
    p, n = 16, 1024
    m = p * n
    cs = build(find(Collective.SCATTER, "binomial"), Case(Collective.SCATTER, p, n))
    assert sizes(cs) == [[m / 2 ** (i + 1)] * 2 ** i for i in range(4)]  # P/2 n, P/4 n, ...
    assert cs.schedule.nbytes.sum() == np.log2(p) * m / 2  # "log2 P (m/2) bytes in scatter"


def test_linear_scatters():
    cs = run(Collective.SCATTER, "basic_linear", 5, 4, root=2)
    assert [(s, d, blocks(p, 4)) for s, d, p in phases(cs)[0]] == [(2, r, [r]) for r in (0, 1, 3, 4)]
    assert not cs.schedule.posted.any()
    cs = run(Collective.SCATTER, "linear_nb", 5, 4, root=2)
    assert cs.schedule.nphases == 1 and cs.schedule.posted.all()
    cs = run(Collective.SCATTER, "linear_nb", 8, 4, max_requests=3)
    # ranks 3 and 6 get blocking sends: a phase ends after each
    assert [[d for _, d, _ in ph] for ph in phases(cs)] == [[1, 2, 3], [4, 5, 6], [7]]


# ------------------------------------------------------------------------------------------------- gather


def test_binomial_gather_mirrors_the_scatter():
    n = 3
    cs = run(Collective.GATHER, "binomial", 8, n, root=0)
    got = [[(src, dst, blocks(p, n)) for src, dst, p in ph] for ph in phases(cs)]
    assert got == [
        [(1, 0, [1]), (3, 2, [3]), (5, 4, [5]), (7, 6, [7])],
        [(2, 0, [2, 3]), (6, 4, [6, 7])],
        [(4, 0, [4, 5, 6, 7])],
    ]


def test_linear_gathers():
    cs = run(Collective.GATHER, "basic_linear", 4, 5, root=1)
    assert [(s, d, blocks(p, 5)) for s, d, p in phases(cs)[0]] == [(0, 1, [0]), (2, 1, [2]), (3, 1, [3])]
    cs = run(Collective.GATHER, "linear_sync", 3, 11, root=0, segsize=3)
    assert phases(cs) == [
        [(0, 1, ())], [(1, 0, ((11, 14),))],
        [(0, 2, ())], [(2, 0, ((22, 25),)), (1, 0, ((14, 22),))],
        [(2, 0, ((25, 33),))],
    ]
    # Open MPI's default segment size 0: the whole block first, then an empty second segment
    cs = run(Collective.GATHER, "linear_sync", 2, 11, root=1)
    assert sizes(cs) == [[0.0], [11.0], [0.0]]


# ---------------------------------------------------------------------------------------------- allgather


def test_ring_allgather_on_5_ranks_has_4_phases_of_5_blocks():
    n = 7
    cs = run(Collective.ALLGATHER, "ring", 5, n)
    assert sizes(cs) == [[n] * 5] * 4
    for i, ph in enumerate(phases(cs)):
        assert [(s, d, blocks(p, n)) for s, d, p in ph] == [(r, (r + 1) % 5, [(r - i) % 5]) for r in range(5)]
    assert cs.schedule.posted.all()


def test_recursive_doubling_on_8_ranks_doubles_the_message():
    n = 4
    cs = run(Collective.ALLGATHER, "recursive_doubling", 8, n)
    assert sizes(cs) == [[n] * 8, [2 * n] * 8, [4 * n] * 8]
    for k, ph in enumerate(phases(cs)):
        d = 2 ** k
        for s, t, p in ph:
            assert t == s ^ d
            assert blocks(p, n) == list(range(s & ~(d - 1), (s & ~(d - 1)) + d))


def test_paper_003_recursive_doubling_stage_sizes_double():
    """Paper 003, Table 2 and Fig. 4: stage i, P exchanges of 2^i m / P; (P-1) m bytes moved in all."""
    p, m = 16, 16 * 1024
    cs = build(find(Collective.ALLGATHER, "recursive_doubling"), Case(Collective.ALLGATHER, p, m // p))
    assert sizes(cs) == [[2 ** i * m / p] * p for i in range(4)]  # m, 2m, 4m, ... in units of m/P
    assert cs.schedule.nbytes.sum() == (p - 1) * m


def test_recursive_doubling_falls_back_to_bruck_on_non_power_of_two():
    for p in (3, 6, 12):
        rd = build(find(Collective.ALLGATHER, "recursive_doubling"), Case(Collective.ALLGATHER, p, 5)).schedule
        bruck = build(find(Collective.ALLGATHER, "bruck"), Case(Collective.ALLGATHER, p, 5)).schedule
        k2 = build(find(Collective.ALLGATHER, "bruck-k-fanout"), Case(Collective.ALLGATHER, p, 5)).schedule
        for field in ("src", "dst", "nbytes", "phase"):
            assert np.array_equal(getattr(rd, field), getattr(bruck, field))
            assert np.array_equal(getattr(k2, field), getattr(bruck, field))


def test_bruck_on_6_ranks():
    n = 2
    cs = run(Collective.ALLGATHER, "bruck", 6, n)
    # distances 1, 2, 4: runs of 1, 2, then min(4, 6 - 4) = 2 blocks, sent to r - distance
    assert sizes(cs) == [[n] * 6, [2 * n] * 6, [2 * n] * 6]
    for ph, d in zip(phases(cs), (1, 2, 4)):
        assert [t for _, t, _ in ph] == [(r - d) % 6 for r in range(6)]
    s, t, p = phases(cs)[1][5]
    assert (s, t, blocks(p, n)) == (5, 3, [5, 0])  # blocks 5, 0: a wrapped run
    assert p == ((10, 12), (0, 2))


def test_bruck_with_radix_3_on_10_ranks_is_open_mpis_picture():
    cs = run(Collective.ALLGATHER, "bruck-k-fanout", 10, 1, radix=3)
    # step 0: 1 block to r-1 and r-2; step 1: 3 blocks to r-3, r-6; step 2: min(9, 10-9)=1 block to r-9
    assert sizes(cs) == [[1] * 20, [3] * 20, [1] * 10]
    assert [t for s, t, _ in phases(cs)[1] if s == 0] == [7, 4]


def test_neighbor_exchange():
    n = 3
    cs = run(Collective.ALLGATHER, "neighbor", 6, n)
    assert sizes(cs) == [[n] * 6, [2 * n] * 6, [2 * n] * 6]
    first = [(s, t) for s, t, _ in phases(cs)[0]]
    assert first == [(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4)]
    odd = build(find(Collective.ALLGATHER, "neighbor"), Case(Collective.ALLGATHER, 5, n)).schedule
    ring = build(find(Collective.ALLGATHER, "ring"), Case(Collective.ALLGATHER, 5, n)).schedule
    assert np.array_equal(odd.dst, ring.dst) and odd.nphases == ring.nphases


def test_sparbit_and_direct_messaging():
    cs = run(Collective.ALLGATHER, "sparbit", 6, 1)
    # coll_base_allgather.c's example: 1 block at distance 4, 1 at 2 (one ignored), then 3 at 1
    assert [len(ph) for ph in sizes(cs)] == [6, 6, 18]
    cs = run(Collective.ALLGATHER, "direct-messaging", 4, 2)
    assert cs.schedule.nphases == 1 and cs.schedule.ntransmissions == 12


@pytest.mark.parametrize("collective, name, params", [
    (Collective.ALLGATHER, "bruck-k-fanout", {"radix": 3}),
    (Collective.ALLGATHER, "bruck-k-fanout", {"radix": 4}),
    (Collective.ALLGATHER, "bruck-k-fanout", {"radix": 7}),
    (Collective.SCATTER, "linear_nb", {"max_requests": 2}),
    (Collective.SCATTER, "linear_nb", {"max_requests": 5}),
    (Collective.GATHER, "linear_sync", {"segsize": 1}),
    (Collective.GATHER, "linear_sync", {"segsize": 20}),
])
def test_non_default_parameters_hold(collective, name, params):
    for p in range(1, 34):
        for root in ({0, p // 2, p - 1} if collective.rooted else {0}):
            run(collective, name, p, 5, root, **params)


def test_zero_bytes_send_nothing():
    for collective, names in ((Collective.SCATTER, ("basic_linear", "binomial", "linear_nb")),
                              (Collective.GATHER, ("basic_linear", "binomial", "linear_sync")),
                              (Collective.ALLGATHER, ("bruck", "recursive_doubling", "ring", "linear",
                                                      "neighbor", "sparbit", "direct-messaging"))):
        for name in names:
            assert run(collective, name, 6, 0).schedule.ntransmissions == 0


def test_binomial_and_logarithmic_schedules_scale_to_large_p():
    """Numpy batches per phase: a million-rank binomial tree, 2^16-rank allgathers, in a blink."""
    for collective, name, p in ((Collective.SCATTER, "binomial", 1 << 20),
                                (Collective.GATHER, "binomial", 1 << 20),
                                (Collective.ALLGATHER, "recursive_doubling", 1 << 16),
                                (Collective.ALLGATHER, "bruck", 1 << 16)):
        cs = build(find(collective, name), Case(collective, p, 8, 3 if collective.rooted else 0))
        assert cs.schedule.nphases == p.bit_length() - 1


def test_linear_allgather_is_a_gather_then_a_bcast_on_5_ranks():
    """coll_base_allgather.c basic_linear: gather to rank 0 (basic_linear: 4 blocks in), then bcast of 5 blocks."""
    n = 2
    cs = run(Collective.ALLGATHER, "linear", 5, n)
    ph = phases(cs)
    assert [(s, t, p) for s, t, p in ph[0]] == [(r, 0, ((r * n, (r + 1) * n),)) for r in range(1, 5)]
    assert [(s, t, p) for s, t, p in ph[1]] == [(0, r, ((0, 5 * n),)) for r in range(1, 5)]
    tree = run(Collective.ALLGATHER, "linear", 8, n, gather=2, bcast=6)  # binomial gather, binomial bcast
    assert sizes(tree)[:3] == [[n] * 4, [2 * n] * 2, [4 * n]]
    assert sizes(tree)[3:] == [[8 * n] * 3, [8 * n] * 3, [8 * n]]  # bmtree: the root posts to 3 children


def test_two_proc_allgather_swaps_blocks():
    cs = run(Collective.ALLGATHER, "two_proc", 2, 3)
    assert phases(cs) == [[(0, 1, ((0, 3),)), (1, 0, ((3, 6),))]]
