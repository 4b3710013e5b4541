"""MPICH's MPI_Bcast algorithms: hand-worked schedules, MPICH's chunking of small messages, its trees."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build, find
from commcost.collectives.dataflow import check
from commcost.collectives.mpich_bcast import pipeline_chunks, tree_edges
from commcost.errors import InputError
from collective_helpers import hockney_path, phases, run, waits_of


def bcast(name: str, nprocs: int, nbytes: int, root: int = 0, **params: int):
    return run(Collective.BCAST, f"mpich.{name}", nprocs, nbytes, root, **params)


def edges(cs) -> list[list[tuple[int, int]]]:
    return [[(a, b) for a, b, _ in ph] for ph in phases(cs)]


# ------------------------------------------------------------------------------------------------ binomial


def test_binomial_on_8_ranks_halves_the_distance_each_phase():
    cs = bcast("binomial", 8, 10)
    assert edges(cs) == [[(0, 4)], [(0, 2), (4, 6)], [(0, 1), (2, 3), (4, 5), (6, 7)]]
    assert all(p == ((0, 10),) for p in cs.payload)
    assert not cs.schedule.posted.any()  # MPIC_Send, one after another


def test_binomial_works_on_relative_ranks():
    cs = bcast("binomial", 6, 4, root=3)
    # relative ranks: 0->4; 0->2; 0->1, 2->3, 4->5 shifted by 3 (mod 6)
    assert edges(cs) == [[(3, 1)], [(3, 5)], [(3, 4), (5, 0), (1, 2)]]


def test_zero_bytes_and_one_rank_send_nothing():
    for name in ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather", "tree",
                 "pipelined_tree"):
        assert bcast(name, 7, 0).schedule.ntransmissions == 0
        assert bcast(name, 1, 100).schedule.ntransmissions == 0


# ------------------------------------------------------------------------------------- scatter + allgather


def scatter_part(cs) -> list[list[tuple[int, int, tuple]]]:
    return [ph for ph, name in zip(phases(cs), cs.schedule.phase_names) if name.startswith("scatter")]


def test_mpich_scatter_cuts_ceil_n_over_p_chunks_and_skips_empty_ones():
    # n = 5 < P = 8: chunks of 1 byte; relative ranks 5..7 get nothing and are sent nothing.
    cs = bcast("scatter_ring_allgather", 8, 5)
    assert scatter_part(cs) == [
        [(0, 4, ((4, 5),))],  # root keeps [0, 4), v4's subtree gets what lies past 4 chunks
        [(0, 2, ((2, 4),))],  # v4 holds 1 byte < 2 chunks: nothing for v6
        [(0, 1, ((1, 2),)), (2, 3, ((3, 4),))],  # v4 -> v5 and v6 -> v7 have nothing to send
    ]


def test_mpich_scatter_example_of_its_comment_97_bytes_on_16_ranks():
    # bcast_utils.c: "if bufsize = 97 and nprocs = 16, ranks 15 and 16 will get 0 data" (1-based)
    cs = bcast("scatter_ring_allgather", 16, 97)
    got = np.zeros(16, dtype=np.int64)
    for ph in scatter_part(cs):
        for src, dst, payload in ph:
            assert len(payload) == 1
            got[dst] += payload[0][1] - payload[0][0]
    own = np.clip(97 - 7 * np.arange(16), 0, 7)  # chunks of ceil(97/16) = 7 bytes
    assert list(own[-3:]) == [6, 0, 0]
    # what a subtree root receives is its whole subtree's chunks
    for v in range(1, 16):
        low = v & -v
        assert got[v] == own[v:min(v + low, 16)].sum()


def test_ring_allgather_passes_chunks_around_including_empty_ones():
    cs = bcast("scatter_ring_allgather", 5, 13, root=2)  # chunks of 3 bytes, the last one 1 byte
    ring = [ph for ph, name in zip(phases(cs), cs.schedule.phase_names) if name.startswith("ring")]
    assert len(ring) == 4 and all(len(ph) == 5 for ph in ring)
    assert all(cs.schedule.posted[cs.schedule.phase >= cs.schedule.nphases - 4])
    # step 1: every rank passes its own chunk (relative rank r - 2) to r + 1
    first = {src: (dst, payload) for src, dst, payload in ring[0]}
    assert first[2] == (3, ((0, 3),))
    assert first[1] == (2, ((12, 13),))  # relative rank 4: the short last chunk


def test_ring_allgather_keeps_zero_byte_exchanges_when_n_is_below_p():
    cs = bcast("scatter_ring_allgather", 6, 2)
    ring = cs.schedule.phase_names.index("ring step 1")
    part = slice(cs.schedule.phase_slices()[ring].start, None)
    assert len(cs.schedule.nbytes[part]) == 5 * 6
    assert (cs.schedule.nbytes[part] == 0).sum() == 5 * 4


def test_recursive_doubling_allgather_on_power_of_two_doubles_the_chunks():
    m = 8
    cs = bcast("scatter_recursive_doubling_allgather", 8, 8 * m)
    names = cs.schedule.phase_names
    assert names == ("scatter mask 4", "scatter mask 2", "scatter mask 1",
                     "allgather exchange 1", "allgather exchange 2", "allgather exchange 4")
    s = cs.schedule
    for k, sl in enumerate(s.phase_slices()[3:]):
        assert len(s.nbytes[sl]) == 8
        assert np.all(s.nbytes[sl] == m * 2 ** k)
        assert np.array_equal(s.dst[sl], s.src[sl] ^ 2 ** k)
        assert s.posted[sl].all()


def test_recursive_doubling_allgather_on_non_power_of_two_adds_halving_steps():
    cs = bcast("scatter_recursive_doubling_allgather", 6, 60, root=1)
    names = cs.schedule.phase_names
    assert "allgather halving 4/2" in names
    # relative ranks 2, 3 have no partner at mask 4; 0 and 1 got chunks 4, 5 and hand them on
    k = names.index("allgather halving 4/2")
    sl = cs.schedule.phase_slices()[k]
    assert list(zip(cs.schedule.src[sl], cs.schedule.dst[sl])) == [(1, 3), (2, 4)]
    assert [cs.payload[i] for i in range(sl.start, sl.stop)] == [((40, 60),), ((40, 60),)]


@pytest.mark.parametrize("nbytes", [1, 2, 3, 7, 64, 65, 1000])
def test_scatter_allgathers_hold_for_small_and_uneven_messages(nbytes):
    for name in ("scatter_recursive_doubling_allgather", "scatter_ring_allgather"):
        for p in range(1, 34):
            for root in {0, p // 3, p - 1}:
                bcast(name, p, nbytes, root)


# --------------------------------------------------------------------------------------------------- trees


def mpich_knomial_1(rank: int, nranks: int, k: int, root: int) -> tuple[int, list[int]]:
    """A line-by-line port of MPII_Treeutil_tree_knomial_1_init, as the reference."""
    lrank = (rank + nranks - root) % nranks
    maxstep, tmp = 0, nranks - 1
    while tmp:
        maxstep += 1
        tmp //= k
    parent, current, running, step = -1, 0, 1, 0
    while True:
        if lrank == current:
            break
        for _ in range(1, k):
            if running <= lrank < running + k ** (maxstep - step - 1):
                parent, current, running = current, running, running + 1
                break
            running += k ** (maxstep - step - 1)
        step += 1
    children, crank = [], lrank + 1
    for i in range(step, maxstep):
        for _ in range(1, k):
            if crank < nranks:
                children.append((crank + root) % nranks)
            crank += k ** (maxstep - i - 1)
    return (-1 if parent == -1 else (parent + root) % nranks), children


def mpich_knomial_2(rank: int, nranks: int, k: int, root: int) -> tuple[int, list[int]]:
    """A line-by-line port of MPII_Treeutil_tree_knomial_2_init, as the reference."""
    def digit(x: int, j: int) -> int:
        return (x // k ** j) % k

    def set_digit(x: int, j: int, d: int) -> int:
        return x - digit(x, j) * k ** j + d * k ** j

    def ilog(number: int) -> int:
        i, p = 1, k - 1
        while p - 1 < number:
            p *= k
            i += 1
        return i

    lrank = (rank + nranks - root) % nranks
    parent = -1
    depth = ilog(nranks - 1)
    if lrank > 0:
        for i in range(depth):
            if digit(lrank, i):
                parent = (set_digit(lrank, i, 0) + root) % nranks
                break
    flip = []
    for j in range(depth):
        if digit(lrank, j):
            break
        flip.append(j)
    children = []
    for j in range(depth - 1, -1, -1):
        if j in flip:
            for i in range(k - 1, 0, -1):
                child = set_digit(lrank, j, i)
                if child < nranks:
                    children.append((child + root) % nranks)
    return parent, children


@pytest.mark.parametrize("tree_type, reference", [(1, mpich_knomial_1), (2, mpich_knomial_2)])
def test_knomial_trees_match_mpich(tree_type, reference):
    for k in (2, 3, 4):
        for p in range(1, 50):
            parent, child, order = tree_edges(p, tree_type, k)
            for rank in range(p):
                want_parent, want_children = reference(rank, p, k, 0)
                mine = child[parent == rank]
                assert list(mine[np.argsort(order[parent == rank])]) == want_children, (k, p, rank)
                got_parent = parent[child == rank]
                assert (list(got_parent) or [-1]) == [want_parent], (k, p, rank)


def test_kary_tree_default_posts_to_two_children_per_level():
    cs = bcast("tree", 7, 5)
    assert edges(cs) == [[(0, 1), (0, 2)], [(1, 3), (1, 4), (2, 5), (2, 6)]]
    assert cs.schedule.posted.all()  # MPIR_CVAR_BCAST_IS_NON_BLOCKING defaults to true
    alg = find(Collective.BCAST, "mpich.tree")
    assert alg.resolve_params() == {"tree_type": 0, "tree_kval": 2, "is_non_blocking": 1}


def test_knomial_2_tree_on_8_ranks_is_mpichs_picture():
    cs = bcast("tree", 8, 3, tree_type=2, is_non_blocking=0)
    assert edges(cs) == [[(0, 4), (0, 2), (0, 1)], [(2, 3), (4, 6), (4, 5)], [(6, 7)]]
    assert not cs.schedule.posted.any()


def test_knomial_1_tree_on_8_ranks_is_mpichs_picture():
    cs = bcast("tree", 8, 3, tree_type=1, root=2)
    # relative: 0 -> 1, 5, 7; 1 -> 2, 4; 5 -> 6; 2 -> 3 (shifted by 2)
    assert edges(cs) == [[(2, 3), (2, 7), (2, 1)], [(3, 4), (3, 6), (7, 0)], [(4, 5)]]


@pytest.mark.parametrize("tree_type", [0, 1, 2])
def test_trees_hold_for_every_fan_out_and_mode(tree_type):
    for k in ((1, 2, 3, 5) if tree_type == 0 else (2, 3, 5)):
        for nb in (0, 1):
            for p in range(1, 30):
                for root in {0, p - 1}:
                    bcast("tree", p, 7, root, tree_type=tree_type, tree_kval=k, is_non_blocking=nb)
                    bcast("pipelined_tree", p, 7, root, tree_type=tree_type, tree_kval=k,
                          is_non_blocking=nb, segsize=2)


def test_bad_tree_parameters_are_input_errors():
    with pytest.raises(InputError):
        bcast("tree", 5, 4, tree_type=3)
    with pytest.raises(InputError):
        bcast("tree", 5, 4, tree_type=1, tree_kval=1)
    with pytest.raises(InputError):
        bcast("tree", 5, 4, is_non_blocking=2)


def test_pipeline_chunks_put_the_remainder_first_as_mpich_does():
    assert list(pipeline_chunks(20000, 8192)) == [0, 3616, 11808, 20000]
    assert list(pipeline_chunks(16384, 8192)) == [0, 8192, 16384]
    assert list(pipeline_chunks(8192, 8192)) == [0, 8192]
    assert list(pipeline_chunks(100, 0)) == [0, 100]


def test_pipelined_tree_sends_chunk_c_across_level_l_in_phase_c_plus_l():
    cs = bcast("pipelined_tree", 7, 20000)  # kary k=2: levels 0 and 1; chunks 3616, 8192, 8192
    s = cs.schedule
    assert s.nphases == 3 + 2 - 1
    assert [len(range(sl.start, sl.stop)) for sl in s.phase_slices()] == [2, 6, 6, 4]
    root_sends = [(int(s.phase[i]), cs.payload[i]) for i in range(s.ntransmissions) if s.src[i] == 0]
    assert root_sends == [(0, ((0, 3616),)), (0, ((0, 3616),)), (1, ((3616, 11808),)), (1, ((3616, 11808),)),
                          (2, ((11808, 20000),)), (2, ((11808, 20000),))]
    assert s.posted.all()


def test_tree_schedules_scale_to_a_million_ranks():
    case = Case(Collective.BCAST, 1 << 20, 1 << 16, 12345)
    for name, params in (("binomial", {}), ("tree", {}), ("tree", {"tree_type": 1}),
                         ("tree", {"tree_type": 2, "tree_kval": 4})):
        cs = build(find(Collective.BCAST, f"mpich.{name}"), case, params)
        assert cs.schedule.ntransmissions == case.nprocs - 1
        assert cs.schedule.nbytes.sum() == (case.nprocs - 1) * case.nbytes
        assert cs.schedule.has_dependencies


# ------------------------------------------------------------------------------------------- dependencies

MPICH_BCASTS = [a for a in algorithms(Collective.BCAST) if a.library == "mpich"]
SAMPLE_P = (1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33, 64, 65)
TREES = [{"tree_type": tt, "tree_kval": k, "is_non_blocking": nb}
         for tt, k in ((0, 2), (0, 3), (1, 2), (1, 3), (2, 2), (2, 4)) for nb in (0, 1)]


def t(src, dst, start, stop):
    return (src, dst, ((start, stop),))


@pytest.mark.parametrize("nprocs", SAMPLE_P)
@pytest.mark.parametrize("algorithm", MPICH_BCASTS, ids=lambda a: a.name)
def test_no_bcast_forwards_data_before_it_arrived(algorithm, nprocs):
    """The checker runs every dependency schedule: chunked and not, below and above P bytes, three roots."""
    trees = TREES if algorithm.name in ("tree", "pipelined_tree") else [{}]
    chunked = algorithm.name == "pipelined_tree"
    for tree in trees:
        for root in sorted({0, nprocs // 2, nprocs - 1}):
            for nbytes, segsize in ((1, 0), (11, 0), (11, 3), (3 * nprocs + 1, 0), (3 * nprocs + 1, 4)):
                if segsize and not chunked:
                    continue
                params = {**tree, "segsize": segsize} if chunked else dict(tree)
                cs = build(algorithm, Case(Collective.BCAST, nprocs, nbytes, root), params, data=True)
                assert cs.schedule.has_dependencies == (nprocs > 1)
                check(cs)


@pytest.mark.parametrize("algorithm", MPICH_BCASTS, ids=lambda a: a.name)
def test_payloads_do_not_change_the_dependencies(algorithm):
    for nprocs, nbytes in ((2, 1), (13, 300), (12, 96), (23, 20000)):
        case = Case(Collective.BCAST, nprocs, nbytes, 7 % nprocs)
        bare, kept = build(algorithm, case).schedule, build(algorithm, case, data=True).schedule
        assert bare.has_dependencies and np.all(bare.repeat == 1)
        for field in ("src", "dst", "nbytes", "phase", "after_ptr", "after_idx"):
            assert np.array_equal(getattr(bare, field), getattr(kept, field)), field


def test_binomial_sends_wait_for_the_reception_then_the_previous_send():
    got = waits_of(bcast("binomial", 8, 4, root=3))  # relative v is rank (v + 3) % 8
    assert got == {t(3, 7, 0, 4): [], t(3, 5, 0, 4): [t(3, 7, 0, 4)], t(3, 4, 0, 4): [t(3, 5, 0, 4)],
                   t(7, 1, 0, 4): [t(3, 7, 0, 4)], t(7, 0, 0, 4): [t(7, 1, 0, 4)],
                   t(5, 6, 0, 4): [t(3, 5, 0, 4)], t(1, 2, 0, 4): [t(7, 1, 0, 4)]}
    assert hockney_path(bcast("binomial", 1024, 4).schedule) == 10


def test_pipelined_tree_waits_for_the_chunk_and_blocking_sends_for_the_previous_send():
    chunks = [(0, 3), (3, 6), (6, 9)]  # kary k = 2 on 4 ranks: 0 -> 1, 2; 1 -> 3
    posted = waits_of(bcast("pipelined_tree", 4, 9, segsize=3))
    for a, b in chunks:  # isends, one Waitall at the end: the root waits for nothing
        assert posted[t(0, 1, a, b)] == posted[t(0, 2, a, b)] == []
        assert posted[t(1, 3, a, b)] == [t(0, 1, a, b)]
    blocking = waits_of(bcast("pipelined_tree", 4, 9, segsize=3, is_non_blocking=0))
    assert blocking[t(0, 1, 0, 3)] == [] and blocking[t(0, 2, 0, 3)] == [t(0, 1, 0, 3)]
    assert blocking[t(0, 1, 3, 6)] == [t(0, 2, 0, 3)]
    assert blocking[t(1, 3, 3, 6)] == [t(0, 1, 3, 6), t(1, 3, 0, 3)]


def test_recursive_doubling_waits_for_the_last_exchange_and_the_halving():
    got = waits_of(bcast("scatter_recursive_doubling_allgather", 6, 60, root=1))  # chunks of 10 bytes
    # relative 2 (rank 3) had no partner at mask 4; relative 0 (rank 1) sent it chunks 4, 5 by halving
    assert got[t(1, 3, 40, 60)] == [t(1, 5, 0, 40), t(5, 1, 40, 60)]
    # relative 1 (rank 2) swaps [0, 20) with relative 3 (rank 4) after its mask-1 exchange with relative 0
    assert got[t(2, 4, 0, 20)] == [t(1, 2, 0, 10), t(2, 1, 10, 20)]


def test_ring_step_waits_for_the_previous_send_and_reception():
    got = waits_of(bcast("scatter_ring_allgather", 4, 8, root=1))
    assert got[t(0, 1, 6, 8)] == [t(3, 0, 6, 8)]  # step 1: rank 0 (relative 3) got its chunk in the scatter
    assert got[t(0, 1, 4, 6)] == [t(0, 1, 6, 8), t(3, 0, 4, 6)]  # step 2: its step-1 send and reception
