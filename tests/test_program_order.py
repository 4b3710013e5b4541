"""Waits derived from each rank's program of steps (commcost.collectives.waits.program_order).

Hand-worked edges on small programs, and, for every stepped algorithm that posts several transmissions
per step, the same prices under every model whether a step names all the posted transmissions it waits
for or, per peer, only the last and the largest."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build
from commcost.schedule.program_order import program_order
from commcost.io.params_file import load_params
from commcost.models import MODELS, PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.platform import Mapping
from commcost.schedule.schedule import Schedule, dependency_rows

from test_schedule_repeat import EX, cluster
from taulop_fixtures import two_channel_params

PARAMS = load_params(EX / "params" / "illustrative.toml")


def edges(phase, posted, src, dst, explicit_from=None, **kw) -> set[tuple[int, int]]:
    w, d = program_order(np.array(phase), np.array(posted), np.array(src), np.array(dst),
                         len(src) if explicit_from is None else explicit_from, **kw)
    return set(zip(w.tolist(), d.tolist()))


def test_a_sendrecv_step_waits_for_the_previous_send_and_reception():
    # ring of 3, two steps of sendrecv: #3 (0 -> 1, step 2) waits for #0 (its send) and #2 (2 -> 0)
    got = edges([0, 0, 0, 1, 1, 1], [False, False], [0, 1, 2, 0, 1, 2], [1, 2, 0, 1, 2, 0])
    assert got == {(3, 0), (3, 2), (4, 1), (4, 0), (5, 2), (5, 1)}


def test_posted_sends_wait_for_all_of_the_previous_step_and_a_sequence_chains():
    # step 0: rank 0 posts #0 -> 1 and #1 -> 2; rank 3 sends #2 -> 0. step 1 (a sequence): rank 0 sends
    # #3 -> 1, then #4 -> 2: #3 waits for both posted sends and the reception #2; #4 for #3 only.
    got = edges([0, 0, 0, 1, 1], [True, False], [0, 0, 3, 0, 0], [1, 2, 0, 1, 2])
    assert got == {(3, 0), (3, 1), (3, 2), (4, 3)}


def test_a_reception_is_waited_for_by_the_receiver_s_next_step_only():
    # rank 1 receives #0 in step 0, sends #1 in step 0 (not waiting), #2 in step 2 (waits for #0 and #1)
    got = edges([0, 0, 2], [True, True, True], [0, 1, 1], [1, 2, 0])
    assert got == {(2, 0), (2, 1)}


def test_explicit_transmissions_wait_for_their_sender_s_stepped_program():
    # #0: 2 -> 0 in step 0; #1 0 -> 1 and #2 1 -> 2 state their own waits (explicit_from = 1)
    got = edges([0, 1, 1], [False, False], [2, 0, 1], [0, 1, 2], explicit_from=1)
    assert got == {(1, 0)}


def test_of_many_posted_blocks_to_one_peer_the_last_and_the_largest_are_named():
    # step 0: rank 0 posts #0 (10 B), #1 (30 B), #2 (20 B) to rank 1; step 1: rank 0 sends #3 -> 2
    # and rank 1 sends #4 -> 2: #3 waits for #1 (largest) and #2 (last); #4 for the same receptions
    kw = dict(nbytes=np.array([10.0, 30.0, 20.0, 5.0, 5.0]))
    got = edges([0, 0, 0, 1, 1], [True, True], [0, 0, 0, 0, 1], [1, 1, 1, 2, 2], **kw)
    assert got == {(3, 1), (3, 2), (4, 1), (4, 2)}
    full = edges([0, 0, 0, 1, 1], [True, True], [0, 0, 0, 0, 1], [1, 1, 1, 2, 2], compress=False, **kw)
    assert full == got | {(3, 0), (4, 0)}
    # reduced receptions are all named
    combine = np.array([True, True, True, False, False])
    assert edges([0, 0, 0, 1, 1], [True, True], [0, 0, 0, 0, 1], [1, 1, 1, 2, 2], combine=combine,
                 **kw) >= {(4, 0), (4, 1), (4, 2)}


def _uncompressed(s: Schedule, posted_by_phase: np.ndarray) -> Schedule:
    w, d = program_order(s.phase, posted_by_phase, s.src, s.dst, s.ntransmissions, s.nbytes, s.combine,
                         compress=False)
    ptr, idx = dependency_rows(s.ntransmissions, w, d)
    return Schedule(s.nprocs, s.src, s.dst, s.nbytes, s.phase, s.posted, s.phase_names, s.name, s.unit,
                    s.repeat, s.combine, ptr, idx, s.recv_prev)


def _stepped_with_posted_groups():
    for collective in Collective:
        for algorithm in algorithms(collective):
            if algorithm.key in ("ompi.sparbit", "ompi.neighbor", "ompi.linear", "generic.bruck-k-fanout",
                                 "ompi.modified_bruck", "ompi.butterfly", "ompi.recursive_halving") \
                    and (collective, algorithm.key) != (Collective.ALLGATHER, "ompi.linear"):  # a composite
                yield collective, algorithm


@pytest.mark.parametrize("collective,algorithm", list(_stepped_with_posted_groups()),
                         ids=lambda x: getattr(x, "key", getattr(x, "value", x)))
@pytest.mark.parametrize("nprocs", [5, 8, 12])
def test_naming_the_last_and_the_largest_prices_like_naming_all(collective, algorithm, nprocs):
    s = build(algorithm, Case(collective, nprocs, 24 * nprocs + 3 if collective is not Collective.ALLGATHER
                              else 24)).schedule
    posted_by_phase = np.zeros(s.nphases, bool)
    posted_by_phase[s.phase] = s.posted
    full = _uncompressed(s, posted_by_phase)
    platform = cluster(3, 4)
    mapping = Mapping.sequential(platform, nprocs, 4)
    for name in MODELS:
        model = MODELS[name](PARAMS.for_model(name)) if name != "taulop" else TauLop(two_channel_params())
        a = model.end_times(PlacedSchedule.of(s, platform, mapping))
        b = model.end_times(PlacedSchedule.of(full, platform, mapping))
        assert np.allclose(a, b, rtol=1e-12, atol=0), (name, algorithm.key)
