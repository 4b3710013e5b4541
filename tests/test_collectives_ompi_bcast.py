"""Open MPI 5's MPI_Bcast algorithms (coll/tuned ids 1-9): trees, segments, fallbacks, hand-worked schedules.

The hand-worked trees come from the comments and loops of
``ompi/mca/coll/base/coll_base_topo.c``; the ``_ref_*`` functions below
follow that file's per-rank C loops one rank at a time, so the vectorized
builders of :mod:`commcost.collectives.trees` are checked against them.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, Recorder, algorithms, build, find
from commcost.collectives.dataflow import check
from commcost.collectives.trees import (
    build_bmtree, build_chain, build_in_order_bintree, build_in_order_bmtree, build_kmtree, build_tree,
)
from collective_helpers import hockney_path, waits_of

BCAST = Collective.BCAST


def schedule(name, nprocs, nbytes, root=0, **params):
    return build(find(BCAST, name), Case(BCAST, nprocs, nbytes, root), params or None, data=True)


def phases(cs):
    """[(src, dst, (start, stop)), ...] per phase; a zero-byte transmission shows as (None)."""
    s = cs.schedule
    return [[(int(s.src[i]), int(s.dst[i]), cs.payload[i][0] if cs.payload[i] else None)
             for i in range(sl.start, sl.stop)] for sl in s.phase_slices()]


def children(tree):
    return {v: tree.children(v) for v in range(tree.nprocs) if tree.children(v)}


# ------------------------------------------------------------------------- reference trees (per-rank C)

def _ref_build_tree(fanout, size):
    """ompi_coll_base_topo_build_tree for every rank (root 0): (prev, next[])."""
    def pown(f, n):
        return 0 if n < 0 else f ** n

    def level_of(rank):
        level, num = 0, 0
        while num <= rank:
            num += pown(fanout, level)
            level += 1
        return level - 1

    out = {}
    for r in range(size):
        level = level_of(r)
        delta = pown(fanout, level)
        nxt = []
        for i in range(fanout):
            child = r + delta * (i + 1)
            if child >= size:
                break
            nxt.append(child)
        slimit = level if fanout == 1 else (pown(fanout, level) - 1) // (fanout - 1)
        parent = r
        if parent < fanout:
            parent = 0
        else:
            while parent >= slimit:
                parent -= delta // fanout
        out[r] = (parent if r else -1, nxt)
    return out


def _ref_in_order_bintree(size0):
    out = {}
    for rank in range(size0):
        size, myrank, parent, delta, prev, nxt = size0, rank, size0 - 1, 0, -1, [-1, -1]
        while True:
            rightsize = size >> 1
            lchild = rchild = -1
            if size - 1 > 0:
                lchild = parent - 1
                if lchild > 0:
                    rchild = rightsize - 1
            if myrank == parent:
                if lchild >= 0:
                    nxt[0] = lchild + delta
                if rchild >= 0:
                    nxt[1] = rchild + delta
                break
            if myrank > rchild:
                if myrank == lchild:
                    prev = parent + delta
                size = size - rightsize - 1
                delta += rightsize
                myrank -= rightsize
                parent = size - 1
            else:
                if myrank == rchild:
                    prev = parent + delta
                size = rightsize
                parent = rchild
        out[rank] = (prev, [c for c in nxt if c >= 0])
    return out


def _ref_chain(fanout, size):
    fanout = max(1, min(fanout, 32))
    if size - 1 < fanout:
        fanout = size - 1
    out = {}
    for srank in range(size):
        if fanout == 1:
            out[srank] = (srank - 1 if srank else -1, [srank + 1] if srank + 1 < size else [])
            continue
        if size == 1:
            out[srank] = (-1, [])
            continue
        maxlen = (size - 1) // fanout
        if (size - 1) % fanout:
            maxlen += 1
            mark = (size - 1) % fanout
        else:
            mark = fanout + 1
        if srank:
            if srank - 1 < mark * maxlen:
                column = (srank - 1) // maxlen
                head, length = 1 + column * maxlen, maxlen
            else:
                column = mark + (srank - 1 - mark * maxlen) // (maxlen - 1)
                head, length = mark * maxlen + 1 + (column - mark) * (maxlen - 1), maxlen - 1
            prev = 0 if srank == head else srank - 1
            nxt = [] if srank == head + length - 1 or srank + 1 >= size else [srank + 1]
            out[srank] = (prev, nxt)
        else:
            nxt = [1]
            for i in range(1, fanout):
                nxt.append(nxt[-1] + maxlen - (1 if i > mark else 0))
            out[srank] = (-1, nxt)
    return out


def _next_pow2(v):
    p = 1
    while p <= v:
        p <<= 1
    return p


def _ref_bmtree(size):
    out = {}
    for index in range(size):
        mask = _next_pow2(index)
        prev = -1 if index == 0 else index ^ (mask >> 1)
        nxt = []
        while mask < size:
            if index ^ mask >= size:
                break
            nxt.append(index ^ mask)
            mask <<= 1
        out[index] = (prev, nxt)
    return out


def _ref_in_order_bmtree(size):
    out = {}
    for v in range(size):
        prev, nxt, mask = -1, [], 1
        while mask < size:
            remote = v ^ mask
            if remote < v:
                prev = remote
                break
            if remote < size:
                nxt.append(remote)
            mask <<= 1
        out[v] = (prev, nxt)
    return out


def _ref_kmtree(radix, size):
    out = {}
    for v in range(size):
        prev, mask = -1, 1
        while mask < size:
            if v % (radix * mask):
                prev = v // (radix * mask) * (radix * mask)
                break
            mask *= radix
        mask //= radix
        nxt = []
        while mask > 0:
            nxt += [v + mask * r for r in range(1, radix) if v + mask * r < size]
            mask //= radix
        out[v] = (prev, nxt)
    return out


def _same(tree, ref):
    for v, (prev, nxt) in ref.items():
        assert int(tree.parent[v]) == prev, (v, tree.parent[v], prev)
        assert tree.children(v) == nxt, (v, tree.children(v), nxt)
    # depths agree with the parents
    for v in range(tree.nprocs):
        p = int(tree.parent[v])
        assert tree.depth[v] == (0 if p < 0 else tree.depth[p] + 1)


@pytest.mark.parametrize("nprocs", range(1, 71))
def test_vectorized_trees_follow_open_mpis_loops(nprocs):
    for fanout in (1, 2, 3, 4):
        _same(build_tree(fanout, nprocs), _ref_build_tree(fanout, nprocs))
    for fanout in (1, 2, 3, 4, 7, 40):
        _same(build_chain(fanout, nprocs), _ref_chain(fanout, nprocs))
    for radix in (2, 3, 4, 5):
        _same(build_kmtree(radix, nprocs), _ref_kmtree(radix, nprocs))
    _same(build_bmtree(nprocs), _ref_bmtree(nprocs))
    _same(build_in_order_bmtree(nprocs), _ref_in_order_bmtree(nprocs))
    _same(build_in_order_bintree(nprocs), _ref_in_order_bintree(nprocs))


# ---------------------------------------------------------------------------------- hand-worked trees

def test_binomial_tree_p8():
    tree = build_bmtree(8)
    assert children(tree) == {0: [1, 2, 4], 1: [3, 5], 2: [6], 3: [7]}
    assert tree.parent.tolist() == [-1, 0, 0, 1, 0, 1, 2, 3]
    assert tree.depth.tolist() == [0, 1, 1, 2, 1, 2, 2, 3]


def test_in_order_binomial_tree_p8():
    assert children(build_in_order_bmtree(8)) == {0: [1, 2, 4], 2: [3], 4: [5, 6], 6: [7]}


def test_binary_fan_out_tree_p7():
    assert children(build_tree(2, 7)) == {0: [1, 2], 1: [3, 5], 2: [4, 6]}


def test_in_order_binary_tree_p7_and_p9():
    tree = build_in_order_bintree(7)
    assert tree.root == 6
    assert children(tree) == {6: [5, 2], 5: [4, 3], 2: [1, 0]}
    # the picture in coll_base_topo.c, size == 9
    assert children(build_in_order_bintree(9)) == {8: [7, 3], 7: [6, 5], 5: [4], 3: [2, 1], 1: [0]}


def test_chain_fanout_4_on_10_ranks():
    tree = build_chain(4, 10)
    assert children(tree) == {0: [1, 4, 6, 8], 1: [2], 2: [3], 4: [5], 6: [7], 8: [9]}
    assert tree.depth.tolist() == [0, 1, 2, 3, 1, 2, 1, 2, 1, 2]


def test_knomial_trees_match_the_pictures_in_coll_base_topo():
    assert children(build_kmtree(3, 9)) == {0: [3, 6, 1, 2], 3: [4, 5], 6: [7, 8]}
    assert children(build_kmtree(2, 10)) == {0: [8, 4, 2, 1], 2: [3], 4: [6, 5], 6: [7], 8: [9]}
    assert children(build_kmtree(3, 10)) == {0: [9, 3, 6, 1, 2], 3: [4, 5], 6: [7, 8]}
    assert children(build_kmtree(4, 10)) == {0: [4, 8, 1, 2, 3], 4: [5, 6, 7], 8: [9]}


def test_radix_2_knomial_sends_in_the_opposite_order_to_binomial():
    assert phases(schedule("knomial", 8, 5, radix=2))[0] == [(0, 4, (0, 5)), (0, 2, (0, 5)), (0, 1, (0, 5))]
    assert phases(schedule("binomial", 8, 5))[0] == [(0, 1, (0, 5)), (0, 2, (0, 5)), (0, 4, (0, 5))]


def test_root_shift_binomial_root_3():
    """Virtual rank v is real rank (v + 3) % 8: the binomial tree of P = 8 moved by 3."""
    got = phases(schedule("binomial", 8, 5, root=3))
    assert got == [[(3, 4, (0, 5)), (3, 5, (0, 5)), (3, 7, (0, 5))],
                   [(4, 6, (0, 5)), (4, 0, (0, 5)), (5, 1, (0, 5))],
                   [(6, 2, (0, 5))]]
    assert schedule("binomial", 8, 5, root=3).schedule.posted.all()


# ------------------------------------------------------------------------------------ segmentation

def test_pipelined_chain_takes_p_minus_1_plus_s_minus_1_phases():
    cs = schedule("pipeline", 6, 11, segsize=3)  # S = 4 segments: 3, 3, 3, 2
    s = cs.schedule
    assert s.nphases == (6 - 1) + (4 - 1)
    assert s.ntransmissions == (6 - 1) * 4
    got = phases(cs)
    assert got[0] == [(0, 1, (0, 3))]
    assert got[3] == [(0, 1, (9, 11)), (1, 2, (6, 9)), (2, 3, (3, 6)), (3, 4, (0, 3))]
    assert got[-1] == [(4, 5, (9, 11))]


def test_segment_sizes_when_segsize_does_not_divide_the_message():
    cs = schedule("binomial", 4, 10, segsize=4)
    s = cs.schedule
    for src, dst in ((0, 1), (0, 2), (1, 3)):
        sizes = s.nbytes[(s.src == src) & (s.dst == dst)].tolist()
        assert sizes == [4, 4, 2]
    # depth 0 sends segment t, depth 1 segment t - 1: three segments over a height-2 tree take 4 phases
    assert s.nphases == 4


def test_no_segmentation_when_segsize_is_zero_or_not_below_the_message():
    for segsize in (0, 10, 11):
        cs = schedule("binary_tree", 7, 10, segsize=segsize)
        assert cs.schedule.nphases == 2
        assert set(cs.schedule.nbytes.tolist()) == {10}


def test_chain_fanout_4_pipelines_each_chain():
    got = phases(schedule("chain", 10, 4, segsize=2))
    assert got[0] == [(0, 1, (0, 2)), (0, 4, (0, 2)), (0, 6, (0, 2)), (0, 8, (0, 2))]
    assert len(got) == 3 + 2 - 1  # longest chain: depth 3; two segments


# ------------------------------------------------------------------------------ split binary tree

def test_split_binary_tree_odd_p():
    got = phases(schedule("split_binary_tree", 7, 11))
    # halves [0, 6) and [6, 11): left subtree (odd virtual ranks) gets the first, right (even) the second
    assert got == [[(0, 1, (0, 6)), (0, 2, (6, 11))],
                   [(1, 3, (0, 6)), (2, 4, (6, 11)), (1, 5, (0, 6)), (2, 6, (6, 11))],
                   [(1, 2, (0, 6)), (2, 1, (6, 11)), (3, 4, (0, 6)), (4, 3, (6, 11)), (5, 6, (0, 6)),
                    (6, 5, (6, 11))]]
    assert not schedule("split_binary_tree", 7, 11).schedule.posted.any()  # blocking sends


def test_split_binary_tree_even_p_root_feeds_the_last_rank():
    cs = schedule("split_binary_tree", 6, 11, segsize=3)
    got = phases(cs)
    # the root alternates left and right segment by segment
    assert got[0] == [(0, 1, (0, 3)), (0, 2, (6, 9))]
    assert got[1][:2] == [(0, 1, (3, 6)), (0, 2, (9, 11))]
    assert sorted(got[-1]) == [(0, 5, (6, 11)), (1, 2, (0, 6)), (2, 1, (6, 11)), (3, 4, (0, 6)),
                               (4, 3, (6, 11))]


def test_split_binary_tree_falls_back_to_the_pipeline():
    # segsize larger than the smaller half (5 bytes): chain with fanout 1 and the same segsize
    for nbytes, segsize in ((11, 6), (1, 0), (1, 1), (3, 2)):
        split = schedule("split_binary_tree", 9, nbytes, root=4, segsize=segsize)
        pipe = schedule("pipeline", 9, nbytes, root=4, segsize=segsize)
        assert phases(split) == phases(pipe)
    # segsize equal to the smaller half: no fallback
    assert phases(schedule("split_binary_tree", 3, 11, segsize=5))[-1] == [(1, 2, (0, 6)), (2, 1, (6, 11))]


# ------------------------------------------------------------------------------------ basic linear

def test_basic_linear_posts_to_every_rank_in_rank_order():
    cs = schedule("basic_linear", 6, 100, root=2)
    assert phases(cs) == [[(2, r, (0, 100)) for r in (0, 1, 3, 4, 5)]]
    assert cs.schedule.posted.all()


# ------------------------------------------------------------------------------- scatter-allgather

def test_scatter_allgather_p8_matches_the_diagram_in_coll_base_bcast():
    got = phases(schedule("scatter_allgather", 8, 8))
    assert got[0] == [(0, 4, (4, 8))]
    assert got[1] == [(0, 2, (2, 4)), (4, 6, (6, 8))]
    assert got[2] == [(0, 1, (1, 2)), (2, 3, (3, 4)), (4, 5, (5, 6)), (6, 7, (7, 8))]
    assert got[3] == [(v, v ^ 1, (v, v + 1)) for v in range(8)]
    assert got[4] == [(v, v ^ 2, (v // 2 * 2, v // 2 * 2 + 2)) for v in range(8)]
    assert got[5] == [(v, v ^ 4, (v // 4 * 4, v // 4 * 4 + 4)) for v in range(8)]
    assert len(got) == 6


def test_scatter_allgather_non_power_of_two_halving():
    got = phases(schedule("scatter_allgather", 7, 7))
    names = schedule("scatter_allgather", 7, 7).schedule.phase_names
    assert names[3:] == ("allgather mask 1", "allgather mask 2", "allgather mask 2 halving 1",
                         "allgather mask 4", "allgather mask 4 halving 2")
    assert got[5] == [(4, 5, (6, 7))]  # 5 had no partner (7): 4 passes on block 6
    assert got[7] == [(1, 3, (4, 7))]  # 3 had no partner (7): 1 passes on blocks 4..6


def test_scatter_allgather_sends_zero_byte_messages_like_open_mpi():
    # P = 5, n = 11: blocks of 3 bytes, block 4 is empty; rank 4 still swaps (zero bytes) with rank 0
    got = phases(schedule("scatter_allgather", 5, 11))
    assert got[0] == [(0, 2, (6, 11))]  # the empty block 4 is not scattered
    assert (4, 0, None) in got[4]


@pytest.mark.parametrize("name", ["scatter_allgather", "scatter_allgather_ring"])
def test_scatter_allgather_falls_back_to_linear_below_p_bytes(name):
    assert phases(schedule(name, 9, 8, root=2)) == phases(schedule("basic_linear", 9, 8, root=2))
    assert phases(schedule(name, 9, 9, root=2)) != phases(schedule("basic_linear", 9, 9, root=2))


def test_scatter_allgather_ring_p4():
    cs = schedule("scatter_allgather_ring", 4, 8, root=1)
    got = phases(cs)
    assert len(got) == 2 + 3
    # virtual v = real (v + 1) % 4; ring step 1: each sends its own block to the right
    assert got[2] == [(1, 2, (0, 2)), (2, 3, (2, 4)), (3, 0, (4, 6)), (0, 1, (6, 8))]
    assert got[4] == [(1, 2, (4, 6)), (2, 3, (6, 8)), (3, 0, (0, 2)), (0, 1, (2, 4))]


def _ref_scatter_allgather(size, count):
    """The per-rank C of ompi_coll_base_bcast_intra_scatter_allgather (root 0), in lock-step: the messages."""
    sc = (count + size - 1) // size
    curr = [count if v == 0 else 0 for v in range(size)]
    recv = [0 if v == 0 else count - v * sc for v in range(size)]
    sent = []
    mask = 1
    while mask < size:
        mask <<= 1
    mask >>= 1
    while mask > 0:  # scatter, one level at a time
        for v in range(0, size, 2 * mask):
            if v + mask < size and curr[v] - sc * mask > 0:
                n = curr[v] - sc * mask
                sent.append((v, v + mask, (v + mask) * sc, n))
                curr[v] -= n
                curr[v + mask] = n
        mask >>= 1
    curr = [max(0, min(sc, count - v * sc)) for v in range(size)]
    mask = 1
    while mask < size:
        old = list(curr)
        for v in range(size):
            remote = v ^ mask
            if remote < size:
                sent.append((v, remote, v // mask * mask * sc, old[v]))
                recv[remote] = old[v]
                curr[remote] += old[v]
        for rh_mask in [mask >> k for k in range(1, mask.bit_length())]:
            step = []
            for v in range(size):
                vremote_root = (v ^ mask) // mask * mask
                if vremote_root + mask > size:
                    alldata = size - v // mask * mask - mask
                    remote = v ^ rh_mask
                    tree_root = v // (2 * rh_mask) * (2 * rh_mask)
                    if remote > v and v < tree_root + alldata and remote >= tree_root + alldata:
                        step.append((v, remote, sc * (v // mask * mask + mask), recv[v]))
            for v, remote, off, n in step:
                sent.append((v, remote, off, n))
                recv[remote] = n
                curr[remote] += n
        mask <<= 1
    return sorted(sent)


@pytest.mark.parametrize("nprocs", range(2, 40))
def test_scatter_allgather_sends_what_open_mpi_sends(nprocs):
    for nbytes in (nprocs, nprocs + 1, 2 * nprocs - 1, 3 * nprocs + 5):
        cs = schedule("scatter_allgather", nprocs, nbytes)
        s = cs.schedule
        got = sorted((int(a), int(b), cs.payload[i][0][0] if cs.payload[i] else -1, int(n))
                     for i, (a, b, n) in enumerate(zip(s.src, s.dst, s.nbytes)))
        ref = [(a, b, off if n else -1, n) for a, b, off, n in _ref_scatter_allgather(nprocs, nbytes)]
        assert got == sorted(ref)


# ------------------------------------------------------------------------------- registry, params, size

def test_ids_names_and_defaults():
    names = {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "split_binary_tree", 5: "binary_tree",
             6: "binomial", 7: "knomial", 8: "scatter_allgather", 9: "scatter_allgather_ring"}
    for i, name in names.items():
        algorithm = find(BCAST, str(i))
        assert algorithm.name == name and algorithm.library == "ompi"
    assert find(BCAST, "ompi.chain").resolve_params() == {"segsize": 0, "fanout": 4}
    assert find(BCAST, "ompi.knomial").resolve_params() == {"segsize": 0, "radix": 4}
    assert find(BCAST, "ompi.binomial").resolve_params() == {"segsize": 0}
    assert find(BCAST, "ompi.basic_linear").resolve_params() == {}


def test_chain_fanout_above_the_maximum_acts_as_32():
    a = phases(schedule("chain", 50, 7, fanout=100))
    b = phases(schedule("chain", 50, 7, fanout=32))
    assert a == b and len(a[0]) == 32


def test_zero_bytes_or_one_rank_is_empty():
    for name in ("binomial", "split_binary_tree", "scatter_allgather_ring"):
        assert schedule(name, 8, 0).schedule.ntransmissions == 0
        assert schedule(name, 1, 100).schedule.ntransmissions == 0


@pytest.mark.parametrize("name,nphases", [("binomial", 19), ("knomial", 10)])
def test_a_million_ranks(name, nphases):
    p = 1_000_000
    cs = build(find(BCAST, name), Case(BCAST, p, 65536, 0))
    s = cs.schedule
    assert s.ntransmissions == p - 1
    assert s.nphases == nphases
    assert np.array_equal(np.sort(s.dst), np.arange(1, p))
    assert (s.nbytes == 65536).all()
    # every send but the root's waits for its sender's reception, and for nothing else
    assert s.has_dependencies and len(s.after_idx) == p - 1 - int((s.src == 0).sum())
    assert np.array_equal(s.dst[s.after_idx], s.src[s.waiter_of_edge()])


def test_small_cases_check_with_default_parameters():
    for name in ("chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial"):
        for segsize in (0, 1, 4):
            for p in (2, 3, 10, 17):
                check(schedule(name, p, 9, root=p - 1, segsize=segsize))


# ------------------------------------------------------------------------------------ dependencies

OMPI_BCASTS = [a for a in algorithms(BCAST) if a.library == "ompi"]
SAMPLE_P = (1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33, 64, 65)
EXTRA = {"chain": [{"fanout": f} for f in (1, 2, 4, 7)], "knomial": [{"radix": r} for r in (2, 3, 4)]}


def t(src, dst, start, stop):
    """A transmission as :func:`waits_of` names it: ranks and the one byte range it carries."""
    return (src, dst, ((start, stop),))


@pytest.mark.parametrize("nprocs", SAMPLE_P)
@pytest.mark.parametrize("algorithm", OMPI_BCASTS, ids=lambda a: a.name)
def test_no_bcast_forwards_data_before_it_arrived(algorithm, nprocs):
    """The checker runs every dependency schedule: segmented and not, below and above P bytes, three roots."""
    segmented = any(p.name == "segsize" for p in algorithm.params)
    for extra in EXTRA.get(algorithm.name, [{}]):
        for root in sorted({0, nprocs // 2, nprocs - 1}):
            for nbytes, segsize in ((1, 0), (11, 0), (11, 3), (3 * nprocs + 1, 0), (3 * nprocs + 1, 4)):
                if segsize and not segmented:
                    continue
                params = {"segsize": segsize, **extra} if segmented else {}
                cs = build(algorithm, Case(BCAST, nprocs, nbytes, root), params, data=True)
                assert cs.schedule.has_dependencies == (nprocs > 1)
                check(cs)


@pytest.mark.parametrize("algorithm", OMPI_BCASTS, ids=lambda a: a.name)
def test_every_schedule_has_dependencies_and_payloads_do_not_change_them(algorithm):
    for nprocs, nbytes, segsize in ((2, 1, 0), (13, 300, 0), (13, 300, 32), (23, 5, 0)):
        case = Case(BCAST, nprocs, nbytes, 7 % nprocs)
        params = {"segsize": segsize} if any(p.name == "segsize" for p in algorithm.params) else {}
        bare, kept = build(algorithm, case, params).schedule, build(algorithm, case, params, data=True).schedule
        assert bare.has_dependencies and kept.has_dependencies
        assert np.all(bare.repeat == 1)
        for field in ("src", "dst", "nbytes", "phase", "after_ptr", "after_idx"):
            assert np.array_equal(getattr(bare, field), getattr(kept, field)), field


def test_binomial_p8_sends_wait_for_their_senders_reception():
    got = waits_of(schedule("binomial", 8, 4))
    assert got == {t(0, 1, 0, 4): [], t(0, 2, 0, 4): [], t(0, 4, 0, 4): [],  # the root posts all three
                   t(1, 3, 0, 4): [t(0, 1, 0, 4)], t(1, 5, 0, 4): [t(0, 1, 0, 4)],
                   t(2, 6, 0, 4): [t(0, 2, 0, 4)], t(3, 7, 0, 4): [t(1, 3, 0, 4)]}


def test_chain_of_three_segments_waits_for_the_segment_and_the_previous_waitall():
    got = waits_of(schedule("pipeline", 4, 9, segsize=3))  # 0 -> 1 -> 2 -> 3; segments A, B, C
    seg = {"A": (0, 3), "B": (3, 6), "C": (6, 9)}

    def e(src, k):
        return t(src, src + 1, *seg[k])
    assert got[e(0, "A")] == [] and got[e(0, "B")] == [e(0, "A")] and got[e(0, "C")] == [e(0, "B")]
    for v in (1, 2):
        assert got[e(v, "A")] == [e(v - 1, "A")]
        # an inner rank's segment 1 (B): its reception of B and its send of A
        assert got[e(v, "B")] == [e(v - 1, "B"), e(v, "A")]
        assert got[e(v, "C")] == [e(v - 1, "C"), e(v, "B")]
    assert hockney_path(schedule("pipeline", 4, 9, segsize=3).schedule) == (4 - 1) + (3 - 1)


def test_a_segment_waits_for_all_sends_of_the_previous_one():
    got = waits_of(schedule("chain", 5, 4, fanout=2, segsize=2))  # 0 -> 1 -> 2 and 0 -> 3 -> 4
    assert got[t(0, 1, 2, 4)] == got[t(0, 3, 2, 4)] == [t(0, 1, 0, 2), t(0, 3, 0, 2)]
    assert got[t(1, 2, 2, 4)] == [t(0, 1, 2, 4), t(1, 2, 0, 2)]


def test_split_binary_tree_waits_for_blocking_sends_and_its_half():
    got = waits_of(schedule("split_binary_tree", 6, 11, segsize=3))  # 0 -> 1, 2; 1 -> 3, 5; 2 -> 4
    L0, L1, R0, R1 = (0, 3), (3, 6), (6, 9), (9, 11)
    assert got == {
        # the root alternates left and right, each send after the previous one
        t(0, 1, *L0): [], t(0, 2, *R0): [t(0, 1, *L0)], t(0, 1, *L1): [t(0, 2, *R0)], t(0, 2, *R1): [t(0, 1, *L1)],
        t(1, 3, *L0): [t(0, 1, *L0)], t(1, 5, *L0): [t(0, 1, *L0), t(1, 3, *L0)],
        t(1, 3, *L1): [t(0, 1, *L1), t(1, 5, *L0)], t(1, 5, *L1): [t(0, 1, *L1), t(1, 3, *L1)],
        t(2, 4, *R0): [t(0, 2, *R0)], t(2, 4, *R1): [t(0, 2, *R1), t(2, 4, *R0)],
        # the exchange: after the rank's last send and the last segment of its half
        t(1, 2, 0, 6): [t(0, 1, *L1), t(1, 5, *L1)], t(2, 1, 6, 11): [t(0, 2, *R1), t(2, 4, *R1)],
        t(3, 4, 0, 6): [t(1, 3, *L1)], t(4, 3, 6, 11): [t(2, 4, *R1)],
        t(0, 5, 6, 11): [t(0, 2, *R1)],  # even P: the root feeds the last rank after its own sends
    }


def test_basic_linear_waits_for_nothing():
    cs = schedule("basic_linear", 6, 100, root=2)
    assert cs.schedule.has_dependencies and len(cs.schedule.after_idx) == 0


def test_scatter_allgather_waits_for_the_receptions_it_forwards():
    got = waits_of(schedule("scatter_allgather", 7, 7))
    # scatter: 4 forwards block 6 after its reception of [4, 7)
    assert got[t(4, 6, 6, 7)] == [t(0, 4, 4, 7)]
    # mask 2: 1 swaps [0, 2) with 3 after its mask-1 exchange with 0 (send and reception)
    assert got[t(1, 3, 0, 2)] == [t(0, 1, 0, 1), t(1, 0, 1, 2)]
    # 5 had no partner at mask 2 and got block 6 from 4 by halving; at mask 4 it sends [4, 7) to 1
    assert got[t(4, 5, 6, 7)] == [t(4, 6, 4, 6), t(6, 4, 6, 7)]
    assert got[t(5, 1, 4, 7)] == [t(4, 5, 4, 5), t(4, 5, 6, 7), t(5, 4, 5, 6)]


def test_ring_step_waits_for_the_previous_send_and_reception():
    got = waits_of(schedule("scatter_allgather_ring", 4, 8, root=1))  # virtual v is real (v + 1) % 4
    assert got[t(1, 2, 0, 2)] == [t(1, 2, 2, 4)]  # step 1: the root's last scatter send
    assert got[t(0, 1, 6, 8)] == [t(3, 0, 6, 8)]  # step 1: rank 0's scatter reception
    assert got[t(1, 2, 6, 8)] == [t(0, 1, 6, 8), t(1, 2, 0, 2)]  # step 2: what came in step 1, own step 1
    assert got[t(2, 3, 6, 8)] == [t(1, 2, 6, 8), t(2, 3, 0, 2)]  # step 3: block 3, which came in step 2


def _serial_tree_time(tree) -> int:
    """Unit-time critical path of an unsegmented tree broadcast whose ranks send one message at a time:
    child j (1-based, in send order) of v gets the message at time(v) + j."""
    time = {0: 0}
    for v in np.argsort(tree.depth, kind="stable").tolist():
        for j, c in enumerate(tree.children(v), 1):
            time[c] = time[v] + j
    return max(time.values())


@pytest.mark.parametrize("nprocs", [2, 7, 100, 1024])
def test_hockney_critical_path_follows_the_tree_not_the_phases(nprocs):
    assert hockney_path(schedule("binomial", nprocs, 8).schedule) == (nprocs - 1).bit_length()
    for name, tree in (("binomial", build_bmtree(nprocs)), ("knomial", build_kmtree(4, nprocs)),
                       ("binary_tree", build_tree(2, nprocs)), ("chain", build_chain(4, nprocs))):
        assert hockney_path(schedule(name, nprocs, 8, root=nprocs // 2).schedule) == _serial_tree_time(tree)


def test_a_long_pipeline_is_every_segment_on_every_edge():
    """No repeated phases: S segments over a height-H tree are (P - 1) S transmissions in H + S - 1 steps."""
    s = build(find(BCAST, "binomial"), Case(BCAST, 64, 1 << 19), {"segsize": 1024}).schedule
    assert s.ntransmissions == 63 * 512 and s.nphases == 6 + 512 - 1 and np.all(s.repeat == 1)


def test_a_bcast_after_another_collective_waits_for_its_ranks_earlier_operations():
    """Composites (allreduce nonoverlapping, allgather linear) record a bcast after another collective:
    the bcast keeps its own waits, and each of its sends also waits for its sender's operations before
    (here the root's reception 3 -> 0), and for nothing of other ranks."""
    case = Case(BCAST, 8, 4)
    for name in ("binomial", "split_binary_tree", "scatter_allgather_ring"):
        rec = Recorder(case)
        rec.phase("before").send(3, 0, (0, 4))
        rec.next_collective()
        algorithm = find(BCAST, name)
        algorithm.builder(rec, case, algorithm.resolve_params())
        s = rec.build(name, {}).schedule
        assert s.has_dependencies
        for i in range(1, s.ntransmissions):
            waits_for_it = 0 in s.after(i).tolist()
            assert waits_for_it == (int(s.src[i]) in (0, 3)), (name, i)
        # and without a new collective, the stepped transmission joins the bcast's program the same way
        rec = Recorder(case)
        rec.phase("before").send(3, 0, (0, 4))
        algorithm.builder(rec, case, algorithm.resolve_params())
        s2 = rec.build(name, {}).schedule
        assert all(0 in s2.after(i).tolist() for i in range(1, s2.ntransmissions) if s2.src[i] == 0)
