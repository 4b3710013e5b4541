"""Open MPI's broadcast trees under Hockney on one channel: critical paths worked by hand.

Every rank on its own node, one channel, alpha = 1 us and beta = 0: every
message (a whole message or a segment) costs T = 1 us, a sender's messages
leave one after another in program order, and a rank forwards a segment as
soon as it has received it and finished its sends of the previous segment
(``ompi_coll_base_bcast_intra_generic``: isend to every child, Waitall).

Rule used by hand, unsegmented: a parent that received at time t sends to
its j-th child (Open MPI's ``tree_next`` order) at t + j - 1, which receives
at t + j. The expected values below were worked with that rule from the
trees of ``coll_base_topo.c`` (children listed in each comment); they are
not computed by the code under test.
"""

from __future__ import annotations

import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.models import PlacedSchedule
from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
from commcost.platform import Channel, ContentionScope, Mapping, Node, NodeType, Platform

T = 1e-6


def one_channel(nprocs: int) -> tuple[Platform, Mapping]:
    kind = NodeType("solo", 1)
    platform = Platform("flat", (kind,), tuple(Node(f"n{i}", kind) for i in range(nprocs)),
                        (Channel("net", 0, "world", ("net",), ContentionScope.CHANNEL),))
    return platform, Mapping.sequential(platform, nprocs, 1)


HOCKNEY = Hockney(HockneyParams({"net": HockneyChannel(T, 0.0)}))


def messages(library_name: str, nprocs: int, nbytes: int = 1024, root: int = 0, **params: int) -> float:
    """The broadcast's predicted time in single-message times."""
    collective = Collective.BCAST
    schedule = build(find(collective, library_name), Case(collective, nprocs, nbytes, root), params).schedule
    platform, mapping = one_channel(nprocs)
    return HOCKNEY.price(PlacedSchedule.of(schedule, platform, mapping)).time_s / T


# binomial (build_bmtree, children v + 2^k above v's highest bit, increasing): a rank v receives at
# (position of its highest set bit) + 1, so the last one at ceil(log2 P).
# binary (build_tree(2)): 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6; 3 -> 7, 11; 4 -> 8, 12; 5 -> 9, 13; 6 -> 10, 14;
#   7 -> 15: receptions 1@1 2@2 3@2 5@3 4@3 6@4 7@3 11@4 8@4 12@5 9@4 13@5 10@5 14@6 15@4.
# chain, fanout 4 (build_chain(4)): P = 8: 0 -> 1, 3, 5, 7; 1 -> 2; 3 -> 4; 5 -> 6: 7@4, 6@4.
#   P = 16: chains [1..4] [5..8] [9..12] [13..15] headed at 1, 2, 3, 4: ends 4, 5, 6, 6.
# pipeline: P - 1.
# knomial radix 2 (build_kmtree(2), children by decreasing weight): ceil(log2 P).
# knomial radix 3: P = 4: 0 -> 3, 1, 2 (3); P = 5: 0 -> 3, 1, 2; 3 -> 4 (3);
#   P = 8: 0 -> 3, 6, 1, 2; 3 -> 4, 5; 6 -> 7 (2@4);
#   P = 16: 0 -> 9, 3, 6, 1, 2 (2@5); 6 -> 7, 8 (8@5); 9 -> 12, 15, 10, 11; 12 -> 13, 14; 3 -> 4, 5.
# knomial radix 4: P = 5: 0 -> 4, 1, 2, 3 (3@4); P = 8: 0 -> 4, 1, 2, 3; 4 -> 5, 6, 7 (4);
#   P = 16: 0 -> 4, 8, 12, 1, 2, 3 (3@6); 12 -> 13, 14, 15 (15@6).
UNSEGMENTED = {
    #                      P = 2  3  4  5  8  16
    ("binomial", ()):          (1, 2, 2, 3, 3, 4),
    ("binary_tree", ()):       (1, 2, 2, 3, 4, 6),
    ("chain", ()):             (1, 2, 3, 4, 4, 6),
    ("pipeline", ()):          (1, 2, 3, 4, 7, 15),
    ("knomial", (("radix", 2),)): (1, 2, 2, 3, 3, 4),
    ("knomial", (("radix", 3),)): (1, 2, 3, 3, 4, 5),
    ("knomial", (("radix", 4),)): (1, 2, 3, 4, 4, 6),
}


@pytest.mark.parametrize("name,params", list(UNSEGMENTED))
def test_unsegmented_trees(name, params):
    for nprocs, want in zip((2, 3, 4, 5, 8, 16), UNSEGMENTED[(name, params)]):
        assert messages(f"ompi.{name}", nprocs, **dict(params)) == pytest.approx(want), (name, nprocs)


def test_the_root_does_not_change_a_tree_s_critical_path():
    for nprocs in (5, 8, 16):
        assert messages("ompi.binomial", nprocs, root=nprocs - 1) == messages("ompi.binomial", nprocs)
        assert messages("ompi.knomial", nprocs, root=nprocs // 2) == messages("ompi.knomial", nprocs)


# Segmented, S segments of 1 KiB (T each). A rank sends segment s to all its children, then segment s + 1.
# pipeline: rank k receives segment s at s + k: P + S - 2.
# binomial, P = 2^k or any P with k = ceil(log2 P) children at the root: the root sends segment s in
#   [k s, k s + k]; a rank with highest bit h receives it at k s + h + 1 and has k - h - 1 children, so it
#   is done by k s + k too: S k. (P = 5: root children 1, 2, 4; 1 -> 3: 3 S.)
# binary, P = 8: the root's two children get segment s at 2s + 1 and 2s + 2; 2 -> 4, 6 sends it at
#   [2s + 2, 2s + 4]: 6 receives the last segment at 2 (S - 1) + 4 = 2 S + 2.
# chain (fanout 4), P = 8: the root's 4 heads get segment s at 4s + 1 .. 4s + 4; the chains behind the
#   first three are one rank long: 4 S.
SEGMENTED = {
    #              S = 1  2   3   8
    ("pipeline", 2):   (1, 2, 3, 8),
    ("pipeline", 5):   (4, 5, 6, 11),
    ("pipeline", 8):   (7, 8, 9, 14),
    ("binomial", 2):   (1, 2, 3, 8),
    ("binomial", 5):   (3, 6, 9, 24),
    ("binomial", 8):   (3, 6, 9, 24),
    ("binomial", 16):  (4, 8, 12, 32),
    ("binary_tree", 8): (4, 6, 8, 18),
    ("chain", 8):      (4, 8, 12, 32),
}


@pytest.mark.parametrize("name,nprocs", list(SEGMENTED))
def test_segmented_pipelines(name, nprocs):
    for nseg, want in zip((1, 2, 3, 8), SEGMENTED[(name, nprocs)]):
        got = messages(f"ompi.{name}", nprocs, nbytes=nseg * 1024, segsize=1024)
        assert got == pytest.approx(want), (name, nprocs, nseg)


def test_binomial_on_1024_ranks_is_ten_messages_not_fifty_five():
    """Issue 11: the per-level barrier made it 10 + 9 + ... + 1 = 55; the real tree needs 10."""
    assert messages("ompi.binomial", 1024) == pytest.approx(10)
    # MPICH's binomial sends to its children in decreasing subtree size: also 10 hops of one message
    assert messages("mpich.binomial", 1024) == pytest.approx(10)
    assert messages("ompi.knomial", 1024, radix=2) == pytest.approx(10)
