"""Open MPI 5's complete coll/tuned sets: small cases (P = 2, 4, 5, 8) of the algorithms added for issue 7."""

from __future__ import annotations

import numpy as np

from commcost.collectives import Case, Collective, build, find
from commcost.collectives.dataflow import check

ALLTOALL, REDUCE, ALLREDUCE = Collective.ALLTOALL, Collective.REDUCE, Collective.ALLREDUCE
REDUCE_SCATTER = Collective.REDUCE_SCATTER


def checked(collective, name, nprocs, nbytes, root=0, **params):
    """The schedule of ``name`` for one case, with payloads, after the data-flow checker."""
    cs = build(find(collective, name), Case(collective, nprocs, nbytes, root), params, data=True)
    check(cs)
    return cs


def same_schedule(a, b) -> bool:
    """Whether two schedules have the same transmissions in the same phases."""
    return all(np.array_equal(getattr(a.schedule, f), getattr(b.schedule, f))
               for f in ("src", "dst", "nbytes", "phase")) and np.array_equal(a.combine, b.combine)


def edges(phase):
    """(src, dst, payload) of a phase, combine dropped."""
    return [(s, t, p) for s, t, p, _ in phase]


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


# -------------------------------------------------------------------------------------------------- reduce


def test_chain_reduce_on_5_ranks_two_chains_two_segments():
    """build_chain(2, 5): 0 <- 1 <- 2, 0 <- 3 <- 4. The root takes a segment from head 1, then head 3
    (slots 1, 2; the tails slot 0; period 2): segment 1 runs two phases behind segment 0."""
    cs = checked(REDUCE, "chain", 5, 4, fanout=2, segsize=2)
    ph = phases(cs)
    assert [sorted(edges(p)) for p in ph] == [
        [(2, 1, ((0, 2),)), (4, 3, ((0, 2),))],
        [(1, 0, ((0, 2),))],
        [(2, 1, ((2, 4),)), (3, 0, ((0, 2),)), (4, 3, ((2, 4),))],
        [(1, 0, ((2, 4),))],
        [(3, 0, ((2, 4),))],
    ]
    assert all(c for p in ph for _, _, _, c in p)


def test_pipeline_reduce_on_4_ranks_root_1_has_s_plus_p_minus_2_phases():
    """Virtual chain 0 <- 1 <- 2 <- 3 is real 1 <- 2 <- 3 <- 0; three 1-byte segments: 3 + 4 - 2 phases."""
    cs = checked(REDUCE, "pipeline", 4, 3, root=1, segsize=1)
    assert [[(s, t) for s, t, _ in edges(p)] for p in phases(cs)] == [
        [(0, 3)], [(3, 2), (0, 3)], [(2, 1), (3, 2), (0, 3)], [(2, 1), (3, 2)], [(2, 1)]]


def test_binary_reduce_on_5_ranks():
    """build_tree(2, 5): 0 -> 1, 2; 1 -> 3; 2 -> 4. Leaves first, then the root takes 1, then 2."""
    cs = checked(REDUCE, "binary", 5, 6)
    assert [[(s, t) for s, t, _ in edges(p)] for p in phases(cs)] == [[(3, 1), (4, 2)], [(1, 0)], [(2, 0)]]


def test_in_order_binary_reduce_on_4_ranks_goes_through_rank_3():
    """In-order binary tree of 4: 3 -> 2, 1; 1 -> 0. Rank 3 reduces, then sends the result to root 0."""
    cs = checked(REDUCE, "in-order_binary", 4, 5)
    ph = phases(cs)
    assert [sorted((s, t) for s, t, _ in edges(p)) for p in ph] == [[(0, 1), (2, 3)], [(1, 3)], [(3, 0)]]
    assert [c for _, _, _, c in ph[-1]] == [False]  # the result replaces the root's data
    at_3 = checked(REDUCE, "in-order_binary", 4, 5, root=3)
    assert len(phases(at_3)) == 2


def test_generic_tree_reduce_on_the_in_order_binomial_tree_is_the_binomial_reduce():
    from commcost.collectives.reduce import reduce_tree
    from commcost.collectives.recorder import Recorder
    from commcost.collectives.trees import build_in_order_bmtree
    for p, root, n, seg in ((8, 0, 5, 2), (13, 4, 11, 3), (6, 5, 1, 0)):
        case = Case(REDUCE, p, n, root)
        rec = Recorder(case, data=True)
        reduce_tree(rec, case, build_in_order_bmtree(p), seg)
        assert same_schedule(rec.build("tree", {}), checked(REDUCE, "binomial", p, n, root, segsize=seg))


def test_rabenseifner_reduce_on_5_ranks_to_an_excluded_odd_root():
    """P = 5, p' = 4, r = 1, n = 8, root 1 (odd, below 2r: it dropped out in the fold, rank 0 sends it
    its piece and it plays virtual rank 0). Pieces after the halving: v0 [0,2), v1 [4,6), v2 [2,4), v3 [6,8)."""
    cs = checked(REDUCE, "rabenseifner", 5, 8, root=1)
    ph = [edges(p) for p in phases(cs)]
    assert ph[0] == [(0, 1, ((4, 8),)), (1, 0, ((0, 4),))]  # fold: swap halves
    assert ph[1] == [(1, 0, ((4, 8),))]  # the odd rank returns its reduced right half
    assert ph[2] == [(0, 2, ((4, 8),)), (2, 0, ((0, 4),)), (3, 4, ((4, 8),)), (4, 3, ((0, 4),))]
    assert ph[3] == [(0, 3, ((2, 4),)), (2, 4, ((6, 8),)), (3, 0, ((0, 2),)), (4, 2, ((4, 6),))]
    assert ph[4] == [(0, 1, ((0, 2),))]  # rank 0's piece to the root
    assert ph[5] == [(3, 1, ((2, 4),)), (4, 2, ((6, 8),))]  # gather at distance 2
    assert ph[6] == [(2, 1, ((4, 8),))]  # gather at distance 1
    assert [c for p in phases(cs)[4:] for _, _, _, c in p] == [False] * 4


def test_rabenseifner_reduce_falls_back_to_linear_when_n_is_below_p_prime():
    assert same_schedule(checked(REDUCE, "rabenseifner", 8, 7, root=3), checked(REDUCE, "linear", 8, 7, root=3))
    assert not same_schedule(checked(REDUCE, "rabenseifner", 8, 8, root=3),
                             checked(REDUCE, "linear", 8, 8, root=3))


# ----------------------------------------------------------------------------------------------- allreduce


def test_basic_linear_allreduce_on_4_ranks():
    """Linear reduce to 0 (received from rank 3 down), then rank 0 isends the result to 1, 2, 3."""
    cs = checked(ALLREDUCE, "basic_linear", 4, 6)
    assert phases(cs) == [[(3, 0, ((0, 6),), True), (2, 0, ((0, 6),), True), (1, 0, ((0, 6),), True)],
                          [(0, 1, ((0, 6),), False), (0, 2, ((0, 6),), False), (0, 3, ((0, 6),), False)]]


def test_nonoverlapping_allreduce_is_the_chosen_reduce_then_the_chosen_bcast():
    cs = checked(ALLREDUCE, "nonoverlapping", 8, 4)
    reduce = checked(REDUCE, "binomial", 8, 4)
    nred = len(reduce.schedule.src)
    assert np.array_equal(cs.schedule.src[:nred], reduce.schedule.src)
    assert cs.combine[:nred].all() and not cs.combine[nred:].any()
    assert len(cs.schedule.src) == 2 * 7
    linear = checked(ALLREDUCE, "nonoverlapping", 4, 6, reduce=1, bcast=1)
    assert same_schedule(linear, checked(ALLREDUCE, "basic_linear", 4, 6))


def test_rabenseifner_allreduce_falls_back_to_basic_linear_when_n_is_below_p_prime():
    assert same_schedule(checked(ALLREDUCE, "rabenseifner", 5, 3), checked(ALLREDUCE, "basic_linear", 5, 3))


def test_segmented_ring_on_4_ranks_runs_two_rounds_of_pieces():
    """n = 20, segsize 2: segcount 2, P segcount = 8, 20 // 8 = 2 rounds (remainder 4 is not > 4).
    Blocks of 5 bytes are cut into pieces of 3 and 2; then the ring allgather of whole blocks."""
    cs = checked(ALLREDUCE, "segmented_ring", 4, 20, segsize=2)
    ph = phases(cs)
    assert len(ph) == 2 * 3 + 3
    assert edges(ph[0]) == [(r, (r + 1) % 4, ((5 * r, 5 * r + 3),)) for r in range(4)]
    assert edges(ph[1]) == [(r, (r + 1) % 4, ((5 * ((r - 1) % 4), 5 * ((r - 1) % 4) + 3),)) for r in range(4)]
    assert edges(ph[3]) == [(r, (r + 1) % 4, ((5 * r + 3, 5 * r + 5),)) for r in range(4)]
    assert edges(ph[6]) == [(r, (r + 1) % 4, ((5 * ((r + 1) % 4), 5 * ((r + 1) % 4) + 5),)) for r in range(4)]
    assert [c for p in ph for _, _, _, c in p] == [True] * 24 + [False] * 12


def test_segmented_ring_without_segments_is_the_ring():
    for p, n, seg in ((5, 40, 0), (5, 40, 9), (4, 3, 0)):  # no segsize; n < P segcount; n < P
        assert same_schedule(checked(ALLREDUCE, "segmented_ring", p, n, segsize=seg),
                             checked(ALLREDUCE, "ring", p, n))


# ------------------------------------------------------------------------------------------ reduce_scatter


def test_ring_reduce_scatter_on_4_ranks():
    """Step j: rank r sends block r-1-j to r+1; the last step delivers each rank its own block."""
    cs = checked(REDUCE_SCATTER, "ring", 4, 1)
    ph = phases(cs)
    assert len(ph) == 3
    assert edges(ph[0]) == [(0, 1, ((3, 4),)), (1, 2, ((0, 1),)), (2, 3, ((1, 2),)), (3, 0, ((2, 3),))]
    assert edges(ph[2]) == [(0, 1, ((1, 2),)), (1, 2, ((2, 3),)), (2, 3, ((3, 4),)), (3, 0, ((0, 1),))]


def test_recursive_halving_reduce_scatter_on_5_ranks():
    """p' = 4, r = 1: rank 0 folds into 1; new ranks 0..3 are 1, 2, 3, 4 and own tmp blocks
    {0, 1}, {2}, {3}, {4}; masks 2 then 1; rank 1 finally returns block 0 to rank 0."""
    cs = checked(REDUCE_SCATTER, "recursive_halving", 5, 1)
    ph = [edges(p) for p in phases(cs)]
    assert ph[0] == [(0, 1, ((0, 5),))]
    assert ph[1] == [(1, 3, ((3, 5),)), (2, 4, ((3, 5),)), (3, 1, ((0, 3),)), (4, 2, ((0, 3),))]
    assert ph[2] == [(1, 2, ((2, 3),)), (2, 1, ((0, 2),)), (3, 4, ((4, 5),)), (4, 3, ((3, 4),))]
    assert ph[3] == [(1, 0, ((0, 1),))]


def test_butterfly_reduce_scatter_on_5_ranks_ends_with_the_mirror_exchange():
    """Masks 1 then 2; new rank t ends with tmp block mirror(t) (0, 2, 1, 3): rank 1 (t 0) owns blocks
    0 and 1 and sends block 0 to the excluded rank 0; ranks 2 and 3 (t 1, 2) swap blocks 3 and 2."""
    cs = checked(REDUCE_SCATTER, "butterfly", 5, 1)
    ph = [edges(p) for p in phases(cs)]
    assert ph[0] == [(0, 1, ((0, 5),))]
    assert ph[1] == [(1, 2, ((3, 5),)), (2, 1, ((0, 3),)), (3, 4, ((3, 5),)), (4, 3, ((0, 3),))]
    assert ph[2] == [(1, 3, ((2, 3),)), (2, 4, ((4, 5),)), (3, 1, ((0, 2),)), (4, 2, ((3, 4),))]
    assert ph[3] == [(1, 0, ((0, 1),)), (2, 3, ((3, 4),)), (3, 2, ((2, 3),))]


def test_butterfly_on_8_ranks_swaps_bit_reversed_pairs():
    cs = checked(REDUCE_SCATTER, "butterfly", 8, 2)
    last = sorted((s, t) for s, t, _ in edges(phases(cs)[-1]))
    assert last == [(1, 4), (3, 6), (4, 1), (6, 3)]  # 0, 2, 5, 7 are their own mirror


def test_non_overlapping_reduce_scatter_is_a_reduce_then_a_linear_scatter():
    cs = checked(REDUCE_SCATTER, "non-overlapping", 4, 2, reduce=1)
    assert phases(cs) == [[(3, 0, ((0, 8),), True), (2, 0, ((0, 8),), True), (1, 0, ((0, 8),), True)],
                          [(0, 1, ((2, 4),), False), (0, 2, ((4, 6),), False), (0, 3, ((6, 8),), False)]]
