"""How a rank receives: the receive order schedules state (``recv_prev``), read from Open MPI's code, and
what every model does with it: a reception ordered after another is taken only once that one is, whatever
arrived first; receptions posted together are taken as they come."""

from __future__ import annotations

import io

import numpy as np
import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.goal_file import parse_goal, write_goal
from commcost.models import MODELS, PlacedSchedule
from commcost.models.hockney import Hockney, HockneyChannel, HockneyParams
from commcost.models.taulop.model import TauLop
from commcost.schedule.schedule import Schedule, ScheduleBuilder, dependency_rows

from test_critical_paths import one_channel
from taulop_fixtures import two_channel_params, two_node_platform
from commcost.platform import Mapping


def chains(schedule: Schedule) -> dict[int, list[tuple[int, ...]]]:
    """Per receiver, its ordered receptions as chains of senders, first to last."""
    prev = schedule.recv_prev
    out: dict[int, list[tuple[int, ...]]] = {}
    if prev is None:
        return out
    nxt = {int(j): i for i, j in enumerate(prev.tolist()) if j >= 0}
    for head in (i for i in range(schedule.ntransmissions) if prev[i] < 0 and i in nxt):
        chain, i = [], head
        while i is not None:
            chain.append(int(schedule.src[i]))
            i = nxt.get(i)
        out.setdefault(int(schedule.dst[head]), []).append(tuple(chain))
    return out


def test_linear_reduce_takes_rank_p_minus_1_first_and_linear_gather_rank_0_first():
    """coll_base_reduce.c's basic linear reduce receives from size-1 down to 0; coll_base_gather.c's basic
    linear gather from 0 up (the root skips itself)."""
    reduce = build(find(Collective.REDUCE, "linear"), Case(Collective.REDUCE, 6, 8, root=2)).schedule
    assert chains(reduce) == {2: [(5, 4, 3, 1, 0)]}
    gather = build(find(Collective.GATHER, "basic_linear"), Case(Collective.GATHER, 6, 8, root=2)).schedule
    assert chains(gather) == {2: [(0, 1, 3, 4, 5)]}


def test_tree_parents_take_their_children_in_the_library_s_order():
    """The in-order binomial gather: a parent takes v + 1, v + 2, v + 4 (smallest subtree first). The
    segmented binomial reduce (reduce_generic): segment by segment, children in that order."""
    gather = build(find(Collective.GATHER, "binomial"), Case(Collective.GATHER, 8, 8)).schedule
    assert chains(gather) == {0: [(1, 2, 4)], 4: [(5, 6)]}  # 2 and 6 have one child each: no order to state
    reduce = build(find(Collective.REDUCE, "binomial"), Case(Collective.REDUCE, 8, 300), {"segsize": 100}).schedule
    assert chains(reduce)[0] == [(1, 2, 4) * 3]
    assert chains(reduce)[4] == [(5, 6) * 3]
    assert chains(reduce)[2] == [(3, 3, 3)]


def test_receptions_posted_together_have_no_order():
    for collective, name in ((Collective.ALLTOALL, "linear"), (Collective.BCAST, "binomial"),
                             (Collective.ALLGATHER, "ring")):
        assert build(find(collective, name), Case(collective, 8, 64)).schedule.recv_prev is None


def _two_into_zero(ordered: bool) -> Schedule:
    """Rank 1 sends to rank 0 after a message from rank 3 reached it (it leaves at T); rank 2 sends to 0 at
    once. Ordered: rank 0 takes rank 1's first (a blocking receive posted before rank 2's)."""
    b = ScheduleBuilder(4)
    first = b.add(3, 1, 100)
    late = b.add(1, 0, 100, after=[first])
    early = b.add(2, 0, 100)
    s = b.build()
    prev = np.full(3, -1, np.int64)
    if ordered:
        prev[early] = late
    return Schedule(s.nprocs, s.src, s.dst, s.nbytes, s.phase, s.posted, s.phase_names, after_ptr=s.after_ptr,
                    after_idx=s.after_idx, recv_prev=prev)


@pytest.mark.parametrize("ordered", [False, True])
def test_an_ordered_reception_waits_for_the_one_before_it(ordered):
    """Hockney, every message T: rank 2's message is in at T, rank 1's at 2T. In order of arrival rank 0
    takes 2's at T and 1's at 2T; ordered 1 first, 2's waits: 1's at 2T, 2's at 3T."""
    t = 1e-6
    platform, mapping = one_channel(4)
    model = Hockney(HockneyParams({"net": HockneyChannel(t, 0.0)}))
    end = model.end_times(PlacedSchedule.of(_two_into_zero(ordered), platform, mapping))
    assert end.tolist() == pytest.approx([t, 2 * t, 3 * t] if ordered else [t, 2 * t, t])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_honours_the_order(name):
    """The ordered reception ends after the one it follows, under every model; without the order the early
    one ends first."""
    from test_receive_floors import PARAMS, PLATFORM

    mapping = Mapping.sequential(PLATFORM, 4, 1)
    model = MODELS[name](PARAMS.for_model(name))
    free = model.end_times(PlacedSchedule.of(_two_into_zero(False), PLATFORM, mapping))
    held = model.end_times(PlacedSchedule.of(_two_into_zero(True), PLATFORM, mapping))
    assert free[2] < free[1] and held[2] > held[1]
    assert held[1] == pytest.approx(free[1], rel=1e-12)


def test_taulop_takes_an_ordered_reception_after_the_one_before():
    platform = two_node_platform()
    placed = PlacedSchedule.of(_two_into_zero(True), platform, Mapping.sequential(platform, 4, 4))
    model = TauLop(two_channel_params())
    end = model.end_times(placed)
    hold = model.receive_occupancy_s(placed)
    assert end[2] == pytest.approx(end[1] + hold[2], rel=1e-12)


def test_a_receive_order_must_point_back_to_the_same_receiver():
    s = _two_into_zero(False)
    base = dict(after_ptr=s.after_ptr, after_idx=s.after_idx)
    for prev, words in (([-1, 2, -1], "earlier transmission to the same receiver"),
                        ([-1, -1, 0], "earlier transmission to the same receiver")):
        with pytest.raises(InputError, match=words):
            Schedule(s.nprocs, s.src, s.dst, s.nbytes, s.phase, s.posted, s.phase_names, recv_prev=prev, **base)
    b = ScheduleBuilder(3)
    b.add(1, 0, 1)
    b.add(2, 0, 1)
    b.add(2, 0, 1)
    three = b.build()
    with pytest.raises(InputError, match="at most one other"):
        Schedule(3, three.src, three.dst, three.nbytes, three.phase, three.posted, three.phase_names,
                 after_ptr=np.zeros(4, np.int64), after_idx=np.zeros(0, np.int64), recv_prev=[-1, 0, 0])
    with pytest.raises(InputError, match="need a dependency schedule"):
        Schedule(3, three.src, three.dst, three.nbytes, three.phase, three.posted, three.phase_names,
                 recv_prev=[-1, 0, 1])


def test_the_receive_order_goes_through_goal_files():
    """A GOAL file states the order as the receive requiring the one before (or its reduction)."""
    schedule = build(find(Collective.REDUCE, "linear"), Case(Collective.REDUCE, 5, 16)).schedule
    text = io.StringIO()
    write_goal(schedule, text, reduce_time_per_byte=0.5)
    assert "r1 requires c0" in text.getvalue()
    back = parse_goal(text.getvalue())
    assert np.array_equal(back.recv_prev, schedule.recv_prev)


def test_a_forward_before_the_reduction_it_carries_is_caught():
    """The data-flow checker: a partial result may leave only once the receptions it carries were taken;
    with the order stated a wait for the last one covers those before it."""
    from commcost.collectives.case import CollectiveSchedule
    from commcost.collectives.dataflow import DataflowError, check

    case = Case(Collective.REDUCE, 4, 2, root=0)
    # ranks 2 and 3 send to 1, which forwards the sum to 0 after waiting for 3's (ordered after 2's)
    src, dst = np.array([2, 3, 1]), np.array([1, 1, 0])
    ptr, idx = dependency_rows(3, np.array([2]), np.array([1]))

    def schedule(prev):
        s = Schedule(4, src, dst, np.full(3, 2.0), np.zeros(3, np.int64), np.ones(3, bool), ("p",),
                     combine=np.ones(3, bool), after_ptr=ptr, after_idx=idx, recv_prev=prev)
        return CollectiveSchedule(s, case, "test", {}, [((0, 2),)] * 3, np.ones(3, bool))

    check(schedule([-1, 0, -1]))  # 3's taken after 2's: waiting for 3's covers both
    with pytest.raises(DataflowError):
        check(schedule(None))  # in order of arrival 2's may still be under way: 1 lacks rank 2's part
