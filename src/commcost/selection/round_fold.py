"""A schedule of many alike rounds priced from its first rounds, at any number of rounds.

Open MPI's segmented ring allreduce of 1 TiB on 1,024 ranks, in 128 KiB
segments, reduce-scatters in R = 8,192 rounds, each a ring of P - 1 steps:
8.6 billion transmissions, or 33.5 million folded by one node's ranks,
where the recorder stops at 8 million. But its rounds are alike: every rank
sends one piece of every block around the ring, round after round, and only
the allgather after them carries whole blocks of R pieces
(:class:`commcost.collectives.registry.RoundCut` says which algorithms are
made so, and how to record m of their rounds).

*The fold.* Let g(m) be the figure asked (the last rank's end, the mean over
ranks, ...: :meth:`Model.statistic_s`) for the schedule of m rounds with its
tail (the allgather) grown back to the R pieces it carries in the whole. The
whole is g(R). Once the rounds run at a steady pace, one round per period d,
g(m + 1) = g(m) + d and

    g(R) = g(m) + (R - m) d.

*What is checked, on the data* (:func:`rounds_statistic_s`): from m =
:data:`FIRST`, doubling m while 4 m <= R, d is taken as g(m + 1) - g(m) only
where g(m + 2) - g(m + 1) is the same and g(2 m) = g(m) + m d, each to
:data:`RTOL` of the figure (as :mod:`commcost.selection.long_pipeline` checks
a pipeline's segments). A schedule of fewer than :data:`FOLD_FROM` rounds is
priced whole, as is one where no m passes. On 1,024 ranks of 4 per node
(examples/cluster) with 128 KiB pieces and R = 256 the steps are alike from
the first round under tau-Lop, Hockney and LogGPH: 50.332280254 s folded
from m = 4 against 50.332280254 s whole under tau-Lop (tests/test_round_fold.py
holds every model to 1e-9 of the whole on smaller cases).
"""

from __future__ import annotations

import numpy as np

from commcost.collectives import Algorithm, Case
from commcost.collectives.recorder import ScheduleTooLarge, transmission_limit
from commcost.models import Model, PlacedSchedule
from commcost.platform import Mapping, Platform
from commcost.selection.folded_place import placed

FOLD_FROM = 16  # rounds: a schedule with fewer is priced whole
FIRST = 4  # rounds of the first fold tried
RTOL = 1e-9  # of the figure: two figures (or steps) are equal
PERIODS = (1, 2, 4)  # rounds: the steps tried, each where the one before did not pass (LogGP's gaps: 4 on 8 ranks)


def rounds_statistic_s(algorithm: Algorithm, values: dict[str, int], nprocs: int, nbytes: int,
                       platform: Platform, mapping: Mapping, model: Model, root: int = 0,
                       statistic: str = "max", memo: dict | None = None) -> float | None:
    """``statistic`` over ranks for ``algorithm`` on ``nprocs`` ranks and ``nbytes``, folded from its first
    rounds (module docstring); None where it is not alike rounds repeated, has fewer than :data:`FOLD_FROM`
    of them, or the checks do not hold before m reaches a quarter of them (price it whole then). ``memo``:
    the first rounds' placed schedules kept between calls for the same algorithm, values, ranks, placement
    and model (one caller's sweep over sizes): sizes cut in pieces of one size share them, each priced with
    its tail grown for its own R."""
    cut = algorithm.round_cut(values, nprocs, nbytes)
    if cut is None or cut.count < FOLD_FROM:
        return None
    given = {**values, **dict(cut.params)}
    units: dict[int, PlacedSchedule] = memo.setdefault(("rounds", cut.per_round, cut.params), {}) \
        if memo is not None else {}

    def placed_at(m: int) -> PlacedSchedule:  # m rounds, the tail carrying R pieces
        if m not in units:
            units[m] = placed(algorithm, Case(algorithm.collective, nprocs, cut.nbytes(m), root), given,
                              platform, mapping, model)
        unit = units[m]
        tail = [i for i, name in enumerate(unit.schedule.phase_names) if name.startswith(cut.tail)]
        grown = unit.schedule.nbytes + np.isin(unit.schedule.phase, tail) * float((cut.count - m) * cut.piece)
        return unit.with_sizes(grown)

    seen: dict[int, float] = {}
    read = [0]  # transmissions this call has priced

    def figure(m: int) -> float:
        if m not in seen:
            one = placed_at(m)
            read[0] += one.schedule.ntransmissions
            seen[m] = model.statistic_s(one, statistic)
            units[m].keep_structure(one)
        return seen[m]

    def same(a: float, b: float, at: int) -> bool:  # to RTOL of the figure at ``at`` rounds
        return abs(a - b) <= RTOL * figure(at)

    m, count = FIRST, cut.count
    try:
        while 4 * m <= count and read[0] <= transmission_limit():
            for k in PERIODS:  # a step over k rounds; from a, whose distance to R is k steps
                a = m + (count - m) % k
                step = figure(a + k) - figure(a)
                span = m - m % k
                if same(figure(a + 2 * k) - figure(a + k), step, a + 2 * k) \
                        and same(figure(a + span), figure(a) + span // k * step, a + span):
                    return figure(a) + (count - a) // k * step
            m *= 2
    except ScheduleTooLarge:  # even its first rounds pass the limit: the caller prices it whole (or refuses)
        return None
    return None
