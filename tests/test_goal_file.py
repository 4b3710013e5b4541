"""GOAL export and import: write -> parse gives back the same DAG; phased schedules keep per-rank waits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from commcost.collectives import Case, Collective, algorithms, build
from commcost.collectives.registry import Unsupported
from commcost.errors import InputError
from commcost.io.goal_file import goal_text, parse_goal, per_rank_waits, read_goal, write_goal
from commcost.schedule import Schedule, ScheduleBuilder, SendMode, SizeUnit


def after_sets(s) -> list[list[int]]:
    return [sorted(s.after(i).tolist()) for i in range(s.ntransmissions)]


def assert_same_dag(got, want) -> None:
    assert got.has_dependencies
    assert got.nprocs == want.nprocs
    assert got.src.tolist() == want.src.tolist()
    assert got.dst.tolist() == want.dst.tolist()
    assert got.nbytes.tolist() == want.nbytes.tolist()
    assert after_sets(got) == through_receive_order(want)


def through_receive_order(s) -> list[list[int]]:
    """Each transmission's waits, with every reception taken before a waited one on its receiver (the
    schedule's receive order) added: a send that waits for a rank's last reception in order waits for the
    earlier ones too, and the GOAL reader names them (it follows a receive's requires; the recorder names
    only the last one between two collectives)."""
    out = []
    for i in range(s.ntransmissions):
        waits = set(s.after(i).tolist())
        for j in list(waits):
            if s.recv_prev is not None and s.dst[j] == s.src[i]:
                k = int(s.recv_prev[j])
                while k >= 0:
                    waits.add(k)
                    k = int(s.recv_prev[k])
        out.append(sorted(waits))
    return out


def forwarding():
    """Root 0 sends to 1 then 2; 1 forwards to 3 what it got, then sends on to 2 after its first send."""
    b = ScheduleBuilder(4, "forward")
    a = b.add(0, 1, 1024)
    c = b.add(0, 2, 1024, after=[a])
    f = b.add(1, 3, 1024, after=[a])
    b.add(1, 2, 512, after=[f, a])
    b.add(2, 3, 8, after=[c])
    return b.build()


def test_transmissions_become_tagged_send_recv_pairs_and_waits_become_requires():
    text = goal_text(forwarding())
    assert "num_ranks 4" in text
    lines = text.splitlines()
    block = lines[lines.index("rank 1 {"):lines.index("rank 2 {")]
    assert block == ["rank 1 {", "r0: recv 1024b from 0 tag 0", "s2: send 1024b to 3 tag 2", "s2 requires r0",
                     "s3: send 512b to 2 tag 3", "s3 requires r0", "s3 requires s2", "}", ""]
    assert "s1 requires s0" in lines  # a wait on the sender's own earlier send
    assert "r3: recv 512b from 1 tag 3" in lines and "r4: recv 8b from 2 tag 4" in lines


def test_hand_built_dependency_schedule_round_trips():
    s = forwarding()
    assert_same_dag(parse_goal(goal_text(s)), s)


def test_file_round_trip(tmp_path):
    s = forwarding()
    write_goal(s, tmp_path / "f.goal")
    back = read_goal(tmp_path / "f.goal")
    assert_same_dag(back, s)
    assert back.name == "f"


@st.composite
def dependency_schedules(draw):
    nprocs = draw(st.integers(2, 7))
    b = ScheduleBuilder(nprocs, "dag")
    sent: list[tuple[int, int]] = []
    for k in range(draw(st.integers(1, 3))):
        b.phase(f"p{k}", draw(st.sampled_from(list(SendMode))))
        for _ in range(draw(st.integers(0, 8))):
            src = draw(st.integers(0, nprocs - 1))
            dst = draw(st.integers(0, nprocs - 2))
            dst = dst if dst < src else dst + 1
            mine = [j for j, (s, d) in enumerate(sent) if s == src or d == src]
            after = draw(st.lists(st.sampled_from(mine), max_size=3)) if mine else []
            b.add(src, dst, draw(st.integers(0, 10**7)), after=after)
            sent.append((src, dst))
    s = b.build()
    if s.has_dependencies:
        return s
    return Schedule(s.nprocs, s.src, s.dst, s.nbytes, s.phase, s.posted, s.phase_names, s.name,
                    after_ptr=np.zeros(s.ntransmissions + 1, np.int64), after_idx=np.zeros(0, np.int64))


@settings(max_examples=60, deadline=None)
@given(dependency_schedules())
def test_any_dependency_schedule_round_trips(schedule):
    assert_same_dag(parse_goal(goal_text(schedule)), schedule)


@pytest.mark.parametrize("algorithm", algorithms(), ids=lambda a: f"{a.collective.value}-{a.key}")
def test_registry_schedules_round_trip(algorithm):
    for nprocs, root in ((2, 0), (7, 3), (8, 0)):
        try:
            s = build(algorithm, Case(algorithm.collective, nprocs, 3000, root)).schedule
        except Unsupported:
            continue
        want = per_rank_waits(s)
        assert want.ntransmissions == s.transmissions_run
        assert_same_dag(parse_goal(goal_text(s)), want)
        if s.has_dependencies:
            assert want is s


def test_segmented_registry_schedule_round_trips():
    for algorithm in algorithms(Collective.BCAST):
        if any(p.name == "segsize" for p in algorithm.params):
            s = build(algorithm, Case(Collective.BCAST, 9, 5000, 1), {"segsize": 1024}).schedule
            assert_same_dag(parse_goal(goal_text(s)), per_rank_waits(s))


def phased():
    b = ScheduleBuilder(4, "phased")
    b.phase("p0", SendMode.SEQUENCE)
    b.send(0, 1, 10)  # 0
    b.send(0, 2, 10)  # 1: after 0 (sequence)
    b.send(3, 1, 5)   # 2
    b.phase("p1", SendMode.POSTED)
    b.send(1, 2, 10)  # 3: after rank 1's receives 0 and 2
    b.send(1, 3, 10)  # 4: the same (posted)
    b.phase("p2", SendMode.SEQUENCE)
    b.send(0, 3, 7)   # 5: after rank 0's last send of p0 (1); rank 0 was idle in p1
    b.send(2, 0, 7)   # 6: after rank 2's receives 1 (p0) and 3 (p1)
    b.phase("ring", SendMode.SEQUENCE, repeat=2)
    b.send(1, 0, 3)   # 7: after rank 1's posted sends of p1 (idle in p2); 8 (second run): after 7
    return b.build()


def test_phased_schedule_keeps_each_ranks_own_waits():
    s = phased()
    dag = per_rank_waits(s)
    assert dag.has_dependencies and dag.ntransmissions == 9
    assert dag.phase_names == ("p0", "p1", "p2", "ring (1/2)", "ring (2/2)")
    assert after_sets(dag) == [[], [0], [], [0, 2], [0, 2], [1], [1, 3], [3, 4], [7]]
    text = goal_text(s)
    assert "phased schedule" in text
    assert_same_dag(parse_goal(text), dag)


def test_combine_transmissions_may_carry_a_calc_that_forwarding_waits_for():
    b = ScheduleBuilder(3, "reduce")
    b.phase("leaves")
    a = b.add(2, 1, 100)
    b.phase("up")
    up = b.add(1, 0, 100, after=[a])
    s = b.build()
    s = Schedule(s.nprocs, s.src, s.dst, s.nbytes, s.phase, s.posted, s.phase_names, s.name, s.unit, None,
                np.array([True, True]), s.after_ptr, s.after_idx)
    plain = goal_text(s)
    assert "calc" not in plain
    text = goal_text(s, reduce_time_per_byte=0.5)
    assert "c0: calc 50" in text and "c0 requires r0" in text and f"s{up} requires c0" in text
    back = parse_goal(text)
    assert_same_dag(back, s)
    assert back.combine.tolist() == [True, True]
    assert parse_goal(plain).combine.tolist() == [False, False]


def test_sizes_in_units_are_written_in_bytes():
    b = ScheduleBuilder(2, "blocks", SizeUnit("block", 8192))
    b.send(0, 1, 3)
    assert "send 24576b to 1 tag 0" in goal_text(b.build())


def test_fractional_bytes_are_an_error():
    b = ScheduleBuilder(2, "half")
    b.send(0, 1, 2.5)
    with pytest.raises(InputError, match="carries 2.5 bytes; GOAL sizes are whole bytes"):
        goal_text(b.build())


HAND = """// a binomial broadcast on 4 ranks, every tag 0, written by hand
num_ranks 4

rank 0 {
l1: send 64b to 1 tag 0
l2: send 64b to 2
/* the second send waits
   for the first */
l2 requires l1
}

rank 1 {
l1: recv 64b from 0 tag 0 cpu 0
l2: send 64b to 3 tag 0 nic 0
l2 requires l1
}

rank 2 {
recv 64b from 0
}

rank 3 {
l1: recv 64b from 1 tag 0
}
"""


def test_a_hand_written_goal_file_reads():
    s = parse_goal(HAND)
    assert s.src.tolist() == [0, 0, 1] and s.dst.tolist() == [1, 2, 3]
    assert after_sets(s) == [[], [0], [0]]


def test_waits_through_a_receive_are_kept():
    text = """num_ranks 3
rank 0 {
a: send 4b to 1 tag 1
}
rank 1 {
a: send 4b to 2 tag 2
b: recv 4b from 0 tag 1
b requires a
c: send 4b to 2 tag 3
c requires b
}
rank 2 {
recv 4b from 1 tag 2
recv 4b from 1 tag 3
}
"""
    s = parse_goal(text)
    assert s.src.tolist() == [0, 1, 1] and after_sets(s) == [[], [], [0, 1]]


BASE = "num_ranks 3\nrank 0 {\na: send 4b to 1 tag 0\n}\nrank 1 {\nb: recv 4b from 0 tag 0\n}\n"


def test_an_operation_may_require_one_written_after_it_once_both_are_defined():
    s = parse_goal(BASE.replace("}\n", "c: calc 5\na requires c\n}\n", 1))
    assert s.ntransmissions == 1 and after_sets(s) == [[]]


def test_equal_tags_pair_in_the_order_written():
    text = "num_ranks 2\nrank 0 {\nsend 4b to 1\nx: send 8b to 1\n}\nrank 1 {\nrecv 4b from 0\nrecv 8b from 0\n}\n"
    assert parse_goal(text).nbytes.tolist() == [4, 8]


@pytest.mark.parametrize("text, message", [
    ("rank 0 {\n}\n", "line 1: a rank block before num_ranks"),
    ("num_ranks 2\nrank 2 {\n}\n", "line 2: rank 2 is not below num_ranks 2"),
    ("num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n", "line 4: rank 0 has a second block"),
    ("num_ranks 2\nrank 0 {\na: send 4b to 1\n", "rank 0's block is not closed"),
    ("num_ranks 2\nrank 0 {\na: send 4 to 1\n}\n", "line 3: expected 'label: send SIZEb to R tag T'"),
    ("num_ranks 2\nrank 0 {\na: send 4b from 1\n}\n", "line 3: expected 'send SIZEb to RANK'"),
    ("num_ranks 2\nrank 0 {\na: send 4b to 5\n}\n", "line 3: expected a peer rank in 0..1 other than 0, got 5"),
    ("num_ranks 2\nrank 1 {\na: recv 4b from -1\n}\n", "line 3: a wildcard (-1) source or tag"),
    (BASE.replace("b: recv 4b", "b: recv 8b"), "line 6: this receive of 8b matches the send of 4b on line 3"),
    (BASE.replace("tag 0\n}\nrank 1", "tag 7\n}\nrank 1"), "line 3: rank 0's send to 1 tag 7 has no matching receive"),
    (BASE.replace("}\n", "b: send 4b to 2\nb requires c\n}\n", 1), "line 5: label 'c' is not defined in rank 0"),
    (BASE.replace("}\n", "c: calc 5\nc irequires a\n}\n", 1), "line 5: irequires (start when B started)"),
    (BASE.replace("}\n", "c: calc 5\nc requires a\na requires c\n}\n", 1), "requires of rank 0 form a cycle"),
    (BASE.replace("}\n", "a: calc 5\n}\n", 1), "line 4: label 'a' is defined twice in rank 0"),
    ("num_ranks 2\nrank 0 {\nsend: send 4b to 1\n}\n", "line 3: 'send' is a GOAL keyword"),
    ("num_ranks 3\nrank 0 {\na: send 4b to 1 tag 0\nb: recv 4b from 1 tag 1\na requires b\n}\n"
     "rank 1 {\nc: recv 4b from 0 tag 0\nd: send 4b to 0 tag 1\nd requires c\n}\n",
     "line 3: this send waits, through other ranks' messages, for itself"),
    ("", "expected 'num_ranks N'"),
])
def test_bad_goal_is_one_error_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.goal"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_goal(path)
    assert str(info.value).startswith(f"{path}:")
    assert message in str(info.value)
    assert "\n" not in str(info.value)
