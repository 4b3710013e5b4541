"""Open MPI's reduce, gather and scatter trees under Hockney on one channel: critical paths worked by hand.

The setting of tests/test_critical_paths.py: every rank on its own node, one
channel, every message costs T = 1 us (beta = 0), a sender's messages leave
one after another in program order, and a receiver takes one message at a
time, each holding it T (Hockney, single port). The expected values were
worked by hand from the trees of ``coll_base_topo.c`` (listed in the
comments); they are not computed by the code under test.

Rules used by hand:

* reduce and gather: a parent takes its children's messages with blocking
  receives in the library's child order; the one it takes is in at
  max(its arrival, the previous one's + 1); a rank sends up (one blocking
  send) once it has taken every child's message, which arrives 1 later (a
  leaf's arrives at 1).
* scatter: the root's blocking sends leave one after another (largest
  subtree first); a rank forwards once its own message has arrived.
* segmented: segment s leaves a rank once segment s arrived from every child
  and its send of segment s - 1 returned.

These are the prices of the ranks' real programs. Before receivers took one
message at a time a root took all its children's messages at once: the
in-order binomial reduce on 3 ranks cost one message time instead of two,
the binary reduce on 16 ranks four instead of seven.
"""

from __future__ import annotations

import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.models import PlacedSchedule

from test_critical_paths import HOCKNEY, T, one_channel

PROCS = (2, 3, 4, 5, 8, 16)


def messages(collective: Collective, name: str, nprocs: int, nbytes: int = 1024, root: int = 0,
             phased: bool = False, **params: int) -> float:
    schedule = build(find(collective, name), Case(collective, nprocs, nbytes, root), params).schedule
    if phased:
        schedule = schedule.without_dependencies()
    platform, mapping = one_channel(nprocs)
    return HOCKNEY.price(PlacedSchedule.of(schedule, platform, mapping)).time_s / T


# in-order binomial (build_in_order_bmtree): the children of v are v + 1, v + 2, v + 4, ... below v's
#   lowest set bit, taken in that order; a child whose subtree has 2^k ranks arrives at k + 1, so the
#   root takes child 2^k at k + 1: P = 3: 1 @1, 2 @2 (2); P = 4: 1 @1, 2 (with 3) @2 (2); P = 5: 1 @1,
#   2 @2, 4 (a leaf, arrived at 1) @3 (3); P = 8: 1, 2, 4 @1, 2, 3 (3); P = 16: 4.
# binary (build_tree(2)): 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6; 3 -> 7, 11; 4 -> 8, 12; 5 -> 9, 13;
#   6 -> 10, 14; 7 -> 15; children taken in that order. P = 3: 1 @1, 2 @2; P = 4: 1 sends 3's at 1,
#   arrives 2, 2 @3; P = 5: 1 and 2 each take one leaf @1, arrive 2: @2, @3; P = 8: 1 takes 3 (with 7,
#   arrives 2) @2, 5 @3, arrives 4; 2 takes 4 @1, 6 @2, arrives 3: root 1 @4, 2 @5; P = 16: 3 takes 7
#   (15's, arrives 2) @2, 11 @3, arrives 4; 4, 5, 6 each take two leaves @1, @2, arrive 3; 1 takes 3 @4,
#   5 @5, arrives 6; 2 takes 4 @3, 6 @4, arrives 5: root 1 @6, 2 @7.
# chain, fanout 4 (build_chain(4)): P <= 5 every rank is a chain head, the root takes P - 1 leaves
#   @1, 2, ...; P = 8: 0 -> 1, 3, 5, 7; 1 -> 2, 3 -> 4, 5 -> 6: heads arrive 2, 2, 2, 1: @2, 3, 4, 5;
#   P = 16: chains of 4, 4, 4, 3, heads arrive 4, 4, 4, 3: @4, 5, 6, 7.
# pipeline: one chain, P - 1 (every rank receives one message).
UP = {
    #                              P = 2  3  4  5  8  16
    (Collective.REDUCE, "binomial"): (1, 2, 2, 3, 3, 4),
    (Collective.REDUCE, "binary"): (1, 2, 3, 3, 5, 7),
    (Collective.REDUCE, "chain"): (1, 2, 3, 4, 5, 7),
    (Collective.REDUCE, "pipeline"): (1, 2, 3, 4, 7, 15),
    (Collective.GATHER, "binomial"): (1, 2, 2, 3, 3, 4),
    # scatter, in-order binomial, the root's sends largest subtree first: P = 3: 0 -> 2 @1, 1 @2;
    # P = 5: 0 -> 4 @1, 2 @2, 1 @3; P = 16: 0 -> 8 @1, 4 @2, 2 @3, 1 @4; 8 -> 12 @2, 10 @3, 9 @4;
    # 12 -> 14 @3, 13 @4; 14 -> 15 @4.
    (Collective.SCATTER, "binomial"): (1, 2, 2, 3, 3, 4),
}


@pytest.mark.parametrize("collective,name", list(UP), ids=lambda x: getattr(x, "value", x))
def test_rooted_trees(collective, name):
    got = tuple(round(messages(collective, name, p), 9) for p in PROCS)
    assert got == UP[(collective, name)]


@pytest.mark.parametrize("collective,name", list(UP), ids=lambda x: getattr(x, "value", x))
def test_the_root_does_not_change_a_rooted_tree_s_critical_path(collective, name):
    for p in (5, 8, 16):
        assert messages(collective, name, p, root=p // 2 + 1) == pytest.approx(UP[(collective, name)][PROCS.index(p)])


def test_in_order_binary_reduce_adds_one_message_to_another_root():
    """The in-order binary tree is rooted at P - 1 (P = 8: 7 -> 6, 3; 6 -> 5, 4; 3 -> 2, 1; 1 -> 0, the
    higher subtree first): 6 takes 5 @1, 4 @2, arrives 3; 1 takes 0 @1, arrives 2; 3 takes 2 @1, 1 @2,
    arrives 3; 7 takes 6 @3, 3 @4; then it sends the result to the root: 4 + 1 when the root is another
    rank, 4 when it is P - 1."""
    assert messages(Collective.REDUCE, "in-order_binary", 8, root=7) == pytest.approx(4)
    assert messages(Collective.REDUCE, "in-order_binary", 8, root=0) == pytest.approx(5)


@pytest.mark.parametrize("nprocs", [2, 3, 5, 8])
@pytest.mark.parametrize("nseg", [1, 2, 7])
def test_a_segmented_reduce_pipeline_costs_its_depth_plus_its_segments(nprocs, nseg):
    """Along the chain P - 1 -> ... -> 0, segment s leaves rank d (depth d) at (P - 1 - d) + s: the
    root has the last segment at (P - 1) + (S - 1)."""
    got = messages(Collective.REDUCE, "pipeline", nprocs, nbytes=nseg * 100, segsize=100)
    assert got == pytest.approx(nprocs - 1 + nseg - 1)


def test_binomial_reduce_on_1024_ranks_is_ten_messages_and_its_phases_are_exact():
    """The root takes child 2^k at k + 1 (the comments of UP): 10 on 1,024 ranks. The reduces' phases give
    each parent one child per phase in the order it takes them (reduce_slots), so with a receiver taking one
    message at a time a barrier after every phase costs no more here: binary on 7 ranks, 1 takes 3 @1, 5 @2,
    arrives 3 (so does 2's), the root takes them @3, @4, in four phases of one message."""
    assert messages(Collective.REDUCE, "binomial", 1024) == pytest.approx(10)
    assert messages(Collective.REDUCE, "binomial", 3, phased=True) == pytest.approx(2)
    assert messages(Collective.REDUCE, "binary", 7) == pytest.approx(4)
    assert messages(Collective.REDUCE, "binary", 7, phased=True) == pytest.approx(4)
