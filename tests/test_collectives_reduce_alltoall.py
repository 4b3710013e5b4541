"""Reduce, allreduce and alltoall schedules: small cases worked by hand, and the checker's teeth."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, Recorder, build, find
from commcost.collectives.dataflow import DataflowError, check

REDUCE, ALLREDUCE, ALLTOALL = Collective.REDUCE, Collective.ALLREDUCE, Collective.ALLTOALL


def schedule_of(collective, name, nprocs, nbytes, root=0, params=None):
    """The checked schedule of ``name`` for one case."""
    cs = build(find(collective, name), Case(collective, nprocs, nbytes, root), params, data=True)
    check(cs)
    return cs


def phase_sends(cs, k):
    """Phase k as (src, dst, payload, combine) tuples."""
    s = cs.schedule
    part = s.phase_slices()[k]
    return [(int(s.src[i]), int(s.dst[i]), cs.payload[i], bool(cs.combine[i])) for i in range(part.start, part.stop)]


def pairs(cs, k):
    """The (src, dst) pairs of phase k, sorted."""
    return sorted((a, b) for a, b, _, _ in phase_sends(cs, k))


def test_registered_names_and_open_mpi_ids():
    expected = {
        (REDUCE, "linear"): 1, (REDUCE, "binomial"): 5,
        (ALLREDUCE, "recursive_doubling"): 3, (ALLREDUCE, "ring"): 4, (ALLREDUCE, "rabenseifner"): 6,
        (ALLTOALL, "linear"): 1, (ALLTOALL, "pairwise"): 2, (ALLTOALL, "modified_bruck"): 3,
    }
    for (collective, name), ident in expected.items():
        algorithm = find(collective, name)
        assert (algorithm.library, algorithm.id) == ("ompi", ident)
        assert find(collective, str(ident)) is algorithm
    assert find(REDUCE, "binomial").resolve_params() == {"segsize": 0}


# ---------------------------------------------------------------- reduce

def test_linear_reduce_is_one_phase_received_from_the_last_rank_down():
    cs = schedule_of(REDUCE, "linear", 5, 7, root=2)
    assert cs.schedule.nphases == 1
    assert [(a, b) for a, b, _, _ in phase_sends(cs, 0)] == [(4, 2), (3, 2), (1, 2), (0, 2)]
    assert all(c and p == ((0, 7),) for _, _, p, c in phase_sends(cs, 0))


def test_binomial_reduce_follows_the_in_order_binomial_tree():
    # P=6, root 2: virtual rank v is real rank (v + 2) % 6; v's parent clears its lowest bit
    cs = schedule_of(REDUCE, "binomial", 6, 7, root=2)
    assert cs.schedule.nphases == 3  # ceil(log2 6) rounds, one segment
    assert pairs(cs, 0) == [(1, 0), (3, 2), (5, 4)]  # v = 5, 1, 3 -> v - 1
    assert pairs(cs, 1) == [(4, 2)]  # v = 2 -> 0
    assert pairs(cs, 2) == [(0, 2)]  # v = 4 -> 0


def test_segmented_binomial_reduce_pipelines_segments_one_child_per_phase():
    cs = schedule_of(REDUCE, "binomial", 6, 7, root=2, params={"segsize": 3})
    s = cs.schedule
    assert s.nphases == 3 * 3  # 3 segments ([0,3), [3,6), [6,7)) x 3 rounds
    assert phase_sends(cs, 3)[0][2] == ((3, 6),)
    assert phase_sends(cs, 8) == [(0, 2, ((6, 7),), True)]
    for part in s.phase_slices():  # a parent takes one segment from one child per phase
        assert len(set(s.dst[part].tolist())) == part.stop - part.start


# ---------------------------------------------------------------- allreduce

def test_recursive_doubling_on_six_ranks_folds_ranks_0_and_2():
    cs = schedule_of(ALLREDUCE, "recursive_doubling", 6, 4)
    assert cs.schedule.nphases == 4  # fold, distances 1 and 2, unfold
    assert phase_sends(cs, 0) == [(0, 1, ((0, 4),), True), (2, 3, ((0, 4),), True)]
    # survivors 1, 3, 4, 5 are new ranks 0..3
    assert pairs(cs, 1) == [(1, 3), (3, 1), (4, 5), (5, 4)]
    assert pairs(cs, 2) == [(1, 4), (3, 5), (4, 1), (5, 3)]
    assert phase_sends(cs, 3) == [(1, 0, ((0, 4),), False), (3, 2, ((0, 4),), False)]


def test_recursive_doubling_on_a_power_of_two_has_no_folding():
    cs = schedule_of(ALLREDUCE, "recursive_doubling", 8, 5)
    assert cs.schedule.nphases == 3
    assert cs.schedule.ntransmissions == 8 * 3


def test_ring_allreduce_on_four_ranks_has_2_p_minus_1_phases():
    cs = schedule_of(ALLREDUCE, "ring", 4, 10)  # blocks of 3, 3, 2, 2 bytes
    s = cs.schedule
    assert s.nphases == 2 * (4 - 1)
    blocks = [(0, 3), (3, 6), (6, 8), (8, 10)]
    for k in range(s.nphases):
        sends = phase_sends(cs, k)
        assert [(a, b) for a, b, _, _ in sends] == [(r, (r + 1) % 4) for r in range(4)]
        reducing = k < 3
        step = k if reducing else k - 3
        for r, _, payload, combine in sends:
            block = (r - step) % 4 if reducing else (r + 1 - step) % 4
            assert payload == (blocks[block],) and combine is reducing


def test_ring_allreduce_with_fewer_bytes_than_ranks_runs_recursive_doubling():
    ring = schedule_of(ALLREDUCE, "ring", 6, 5).schedule
    rd = schedule_of(ALLREDUCE, "recursive_doubling", 6, 5).schedule
    for field in ("src", "dst", "nbytes", "phase"):
        assert np.array_equal(getattr(ring, field), getattr(rd, field))


def test_rabenseifner_on_six_ranks_folds_by_halves():
    cs = schedule_of(ALLREDUCE, "rabenseifner", 6, 11)
    assert cs.schedule.nphases == 2 + 2 * 2 + 1
    assert sorted(phase_sends(cs, 0)) == [(0, 1, ((5, 11),), True), (1, 0, ((0, 5),), True),
                                          (2, 3, ((5, 11),), True), (3, 2, ((0, 5),), True)]
    assert phase_sends(cs, 1) == [(1, 0, ((5, 11),), False), (3, 2, ((5, 11),), False)]
    # survivors 0, 2, 4, 5 = virtual 0..3; the lower partner keeps the left (smaller) half
    assert sorted(phase_sends(cs, 2)) == [(0, 2, ((5, 11),), True), (2, 0, ((0, 5),), True),
                                          (4, 5, ((5, 11),), True), (5, 4, ((0, 5),), True)]
    assert sorted(phase_sends(cs, 3)) == [(0, 4, ((2, 5),), True), (2, 5, ((8, 11),), True),
                                          (4, 0, ((0, 2),), True), (5, 2, ((5, 8),), True)]
    assert phase_sends(cs, 6) == [(0, 1, ((0, 11),), False), (2, 3, ((0, 11),), False)]


def test_rabenseifner_on_a_power_of_two_moves_2_n_p_minus_1_over_p_per_rank():
    cs = schedule_of(ALLREDUCE, "rabenseifner", 8, 64)
    s = cs.schedule
    assert s.nphases == 6
    sent = np.bincount(s.src, weights=s.nbytes, minlength=8)
    assert np.all(sent == 2 * 64 * 7 / 8)


# ---------------------------------------------------------------- alltoall

def test_pairwise_alltoall_on_five_ranks_sends_to_rank_plus_k_at_step_k():
    cs = schedule_of(ALLTOALL, "pairwise", 5, 2)
    assert cs.schedule.nphases == 4
    for k in range(1, 5):
        sends = phase_sends(cs, k - 1)
        assert [(a, b) for a, b, _, _ in sends] == [(r, (r + k) % 5) for r in range(5)]
        for r, d, payload, _ in sends:  # block (r, r+k)
            assert payload == (((r * 5 + d) * 2, (r * 5 + d + 1) * 2),)


def test_linear_alltoall_posts_every_send_in_one_phase_in_reverse_order():
    cs = schedule_of(ALLTOALL, "linear", 4, 1)
    s = cs.schedule
    assert s.nphases == 1 and bool(np.all(s.posted))
    assert [int(d) for d in s.dst[s.src == 1]] == [0, 3, 2]


def test_bruck_alltoall_on_five_ranks_sends_blocks_by_bits_of_the_rotated_index():
    cs = schedule_of(ALLTOALL, "modified_bruck", 5, 1)  # n = 1: block (i, j) is byte 5 i + j
    assert cs.schedule.nphases == 3  # distances 1, 2, 4
    assert [len(phase_sends(cs, k)[0][2]) for k in range(3)] == [2, 2, 1]  # positions {1,3}, {2,3}, {4}

    def blocks(k, rank):
        (src, dst, payload, _), = [t for t in phase_sends(cs, k) if t[0] == rank]
        return dst, [divmod(a, 5) for a, _ in payload]

    assert blocks(0, 0) == (1, [(0, 1), (0, 3)])
    assert blocks(1, 0) == (2, [(0, 2), (4, 2)])  # position 3 came from rank 4 at distance 1
    assert blocks(2, 0) == (4, [(0, 4)])
    assert blocks(1, 3) == (0, [(3, 0), (2, 0)])


# ---------------------------------------------------------------- the checker catches errors

def test_the_checker_rejects_a_contribution_counted_twice():
    case = Case(ALLREDUCE, 3, 4)
    rec = Recorder(case, data=True)
    rec.phase("gather")
    rec.send(1, 0, (0, 4), combine=True)
    rec.send(2, 0, (0, 4), combine=True)
    rec.phase("again")
    rec.send(1, 0, (0, 4), combine=True)  # rank 1's contribution a second time
    with pytest.raises(DataflowError, match="twice"):
        check(rec.build("wrong", {}))


def test_the_checker_rejects_forwarding_what_arrives_in_the_same_phase():
    case = Case(REDUCE, 3, 4, root=0)
    rec = Recorder(case, data=True)
    rec.phase("chain")
    rec.send(2, 1, (0, 4), combine=True)
    rec.send(1, 0, (0, 4), combine=True)
    with pytest.raises(DataflowError, match="missing rank 2"):
        check(rec.build("wrong", {}))


def test_the_checker_rejects_an_allreduce_that_stops_at_the_root():
    cs = build(find(REDUCE, "binomial"), Case(REDUCE, 5, 3), data=True)
    wrong = Case(ALLREDUCE, 5, 3)
    rec = Recorder(wrong, data=True)
    s = cs.schedule
    for k, part in enumerate(s.phase_slices()):
        rec.phase(s.phase_names[k])
        for i in range(part.start, part.stop):
            rec.send(int(s.src[i]), int(s.dst[i]), cs.payload[i], combine=True)
    with pytest.raises(DataflowError, match="rank 1's byte 0"):
        check(rec.build("reduce only", {}))
