"""A long segmented pipeline priced from its first segments, at any number of segments.

A broadcast of 512 MiB in segments of 32 KiB down a tree of 1,024 ranks is
16,384 segments, 16.7 million transmissions; built and priced one by one
it takes minutes and gigabytes. But its segments are alike: each runs as
the one before it (same senders, receivers, sizes, waits on the segment
before), and only the last, the rest of the message, is shorter
(:class:`commcost.collectives.registry.Segmented` says which algorithms
are made so: Open MPI's tree pipelines and split binary tree, its segmented
reduce trees, coll/han's pipelines, MPICH's pipelined tree).

*The fold.* Let f(m) be the figure asked (the last rank's end, or the mean
over ranks, ...: :meth:`Model.statistic_s`) for the schedule of m full
segments and the message's last one, i.e. the same algorithm on
:meth:`SegmentCut.nbytes` (m) bytes, a transmission of the whole message
grown back to its size. The whole message is m = S - 1. After a fill (the
first segment reaching the leaves) the pipeline runs at the pace of its
slowest step, one segment per period d, so f(m + 1) = f(m) + d and

    f(S - 1) = f(m) + (S - 1 - m) d.

*What is checked, on the data* (:func:`pipeline_statistic_s`): from m = 32
on, doubling m while 4 m < S, d is taken as f(m + 1) - f(m) only where
f(m + 2) - f(m + 1) is the same and f(2 m) = f(m) + m d, each to 1e-9 of
the figure; the fold is used only then, and only for S >=
:data:`FOLD_FROM` (shorter pipelines are priced whole, as are those where
no m passes, and, within :data:`CHEAPER_WHOLE` transmissions, those whose
next m would build more segments than the whole has; past the first m the
tries of one pricing read at most the transmission limit, what one whole
schedule may hold, and past it the size is priced whole or refused; under
tau-Lop, whose channels are shared, those with a whole-message transmission
have no exact fold: in-order binary's send to the root met the drain
differently, 2e-6 off at 12 ranks, and past
:func:`whole_budget` they take the drifting fold below). Open MPI's pipeline,
one chain through all ranks, is first folded along a ray from smaller copies
of itself (:mod:`commcost.selection.chain_fold`): its fill is as long as the
chain; under tau-Lop, where no copy passes, its fold in segments starts at
the first power of two m >= 2 P, before which a chain's steps grow with
the hops at work (4,096 ranks: 2 to 28 s of tries a size, then refused), so
a chain of fewer than 8 P segments is priced whole or refused at once. Why
the checks are what matters: under the path-priced models
(:mod:`commcost.models.dependency_timeline`) a rank's end is mostly
a longest path through the segments' waits, a maximum of terms affine in m
(a path through k alike segments adds k times that segment's step), convex
in m; a receiver's queue taken in order of arrival where messages of two
paces meet is not, and there a single rank's end moves erratically with m
while the last rank's does not (Open MPI's split binary tree, while its
exchange of halves was taken in order of arrival: it met the last segments,
and a fold that passed the checks on 1,024 ranks was 23% off; the library
posts that receive after the rank's own half, and so does the schedule now:
folded, it equals the whole to 1e-13 on 1,000 and 1,024 ranks; coll/han's
reduce, whose leaders' low and up receptions interleave, is not folded).
Under tau-Lop, MPICH's pipelined tree with its sends all posted at once
shares each sender's channel among all its chunks, which no exact fold passes
(priced whole, or past :func:`whole_budget` transmissions folded by its drifting steps: below). A term steeper
than the checks saw would have to overtake after 2 m; this is not proved.
tests/test_long_pipeline.py prices whole schedules beside the fold (every
segmented algorithm, three models, process counts and segment counts) and
finds them equal to 1e-9.

*Drifting steps under tau-Lop* (:func:`_drifting_fold`). tau-Lop prices a
transfer by the concurrency on its channel, which changes from segment to
segment, so a tree pipeline's steps wander around their mean (binomial bcast
on 64 ranks: 300.5 us give or take 0.5) and no exact fold passes; nor do
they repeat (the same in 1 KiB segments: steps of 6.3 to 8.4 us over segments
260..300, and no period of 1 to 64 segments repeats them to 1e-6 of the
figure). Past :func:`whole_budget` transmissions (1,000,000 unless
``commcost --exact-up-to N`` says otherwise; at the transmission limit, every
whole the engine can run is priced exactly), from m = :data:`DRIFT_FROM` on, the step is
the mean over segments 2m..4m where it moved so little from the mean over
m..2m that as large a change again over the remaining segments stays within
:data:`APPROXIMATE_TOLERANCE` of the figure; said in the caller's notes. That
check is a rule of thumb, not a bound: on 64 ranks the mean over ranks of the
split binary tree's fold was 3.4e-3 off the whole where it had said 4.5e-3,
and from m = 32 it would have been 8.7e-3 off where it said 3.1e-3 (why
:data:`DRIFT_FROM` is 64).

*The approximate fold* (:data:`Segmented.approximate_from`, coll/han's
reduce only). Where the steps vary from segment to segment, so that no m
passes the checks, and the schedule is too long to record whole (han's
pipeline past 1,024 segments), the step is taken as the mean over
segments m..2m, m = :data:`APPROXIMATE_SPAN`:

    f(S - 1) ~ f(2 m) + (S - 1 - 2 m) (f(2 m) - f(m)) / m.

Not exact, and said so (a line in the caller's notes): han's reduce on 64
ranks, its steps 26.46 us give or take 130 ns, folded from 256 and 512
segments is 1e-5 to 5e-4 off its whole schedule at 1,024 segments under
Hockney and LogGPH on 24 to 1,024 ranks (tests/test_long_pipeline.py
holds it to :data:`APPROXIMATE_TOLERANCE`); the library's default on
several nodes is then priced at every size instead of left out. Not under
tau-Lop, whose leaders' shared channels drift (1 KiB segments on 256 ranks:
the mean step over doubling spans 27.8 to 49.7 us, so the mean over 256..512
was 11.6% off): there han's reduce takes the drifting fold above, its spans
within the segments recorded (m = 32, 64, 128), and is refused where no span
passes its check; below 1,024 segments, as any pipeline whose steps drift, it
is priced whole within :func:`whole_budget` transmissions and folded past them
(on 1,024 ranks, 4 a node, 3,071 a segment: from 512 segments on). With
Open MPI's 64 KiB segments on 24 to 1,024 ranks the check passes from m =
64 and the fold is 2e-5 to 1.3e-3 off the whole at 1,024 segments (the
indicator |b - a| (S - 1 - 4 m) said 2e-5 to 3.6e-3; 1.28e-3 on 1,024 ranks).
"""

from __future__ import annotations

import math
import os
import re

import numpy as np

from commcost.collectives import Algorithm, Case, build
from commcost.collectives.recorder import ScheduleTooLarge, read_whole_number, transmission_limit
from commcost.models import Model, PlacedSchedule
from commcost.models.taulop.model import TauLop
from commcost.platform import Mapping, Platform
from commcost.selection.chain_fold import ray_statistic_s

APPROXIMATE_NOTE = "priced approximately: "  # how a note of the approximate fold begins (a caller's notes)
FOLD_FROM = 256  # segments: a pipeline with fewer is priced whole
FIRST = 32  # segments of the first fold tried
RTOL = 1e-9  # of the figure: two figures (or steps) are equal
APPROXIMATE_SPAN = 256  # segments: the approximate fold's step is the mean over segments m..2m
APPROXIMATE_TOLERANCE = 0.01  # of the figure: what the tests hold the approximate fold to
DRIFT_FROM = 64  # segments: the first span the tau-Lop fold of drifting steps reads
WHOLE_BUDGET = 1_000_000  # transmissions: under tau-Lop a longer pipeline that no exact fold passes is folded
# by its drifting steps (about a second of pricing each at this size), a shorter one priced whole; the default of
# whole_budget(), which $COMMCOST_EXACT_UP_TO (commcost --exact-up-to N) sets
EXACT_VARIABLE = "COMMCOST_EXACT_UP_TO"
CHEAPER_WHOLE: int | None = None  # transmissions: a whole of at most this many (None: whole_budget()) is priced
# whole at once where the next fold tried would build more segments than it holds (the tests set 0: every fold)


def read_exact_up_to(text: str, where: str) -> int:
    """``--exact-up-to`` or ``$COMMCOST_EXACT_UP_TO`` as given (``where`` names it): a whole number of
    transmissions >= 0."""
    return read_whole_number(text, where, 0, "a whole number of transmissions >= 0")


def whole_budget() -> int:
    """The most transmissions a pipeline that no exact fold passes (tau-Lop's drifting steps) is priced whole
    with, exactly; past it, folded from its mean step and said (:func:`_drifting_fold`): ``$COMMCOST_EXACT_UP_TO``
    when set, else :data:`WHOLE_BUDGET`, and never more than the transmission limit, past which no whole is
    priced. Set to the limit or more, every pipeline the engine can run is priced exactly: at 512 MiB on 1,024
    ranks (4 a node), ``select bcast`` then takes 8.0 s and 1.12 GB where the default takes 3.2 s and 0.39 GB."""
    text = os.environ.get(EXACT_VARIABLE, "").strip()
    budget = read_exact_up_to(text, EXACT_VARIABLE) if text else WHOLE_BUDGET
    return min(budget, transmission_limit())


def pipeline_statistic_s(algorithm: Algorithm, values: dict[str, int], nprocs: int, nbytes: int,
                         platform: Platform, mapping: Mapping, model: Model, root: int = 0,
                         statistic: str = "max", memo: dict | None = None,
                         notes: list[str] | None = None, bound: float | None = None) -> float | None:
    """``statistic`` over ranks (:meth:`Model.statistic_s`: the last rank's end, the mean, the least or rank
    0's) for ``algorithm`` on ``nprocs`` ranks and ``nbytes``, folded from its first segments (module
    docstring); None where the algorithm is not alike segments repeated, has fewer than :data:`FOLD_FROM`
    of them, or the checks do not hold before the fold reaches a quarter of them (price it whole then).
    ``memo``: figures of first segments kept between calls for the same algorithm, values, ranks, placement,
    model and statistic (one caller's sweep over sizes): sizes cut alike (segments of one size, the same
    last one: every power of two past the segment) share their first segments, so a sweep to 1 TiB builds
    them once, not once per size. An algorithm folded only approximately (:data:`Segmented.approximate_from`):
    None below that many segments (priced whole; under tau-Lop only within :func:`whole_budget` transmissions,
    past them its drifting fold), else the approximate fold, and a line saying so appended to ``notes``.
    ``bound`` (the last rank's end only; seconds): ``inf`` where a lower bound of the price already reaches it
    (:func:`_load_floor_s`), as branch and bound asks."""
    cut = algorithm.segment_cut(values, nbytes)
    approximate = algorithm.segmented.approximate_from if cut is not None else 0  # type: ignore[union-attr]
    drifting_only = bool(approximate) and isinstance(model, TauLop)  # han's reduce under tau-Lop: no exact fold
    least = FOLD_FROM if drifting_only else max(FOLD_FROM, approximate, 4 * APPROXIMATE_SPAN if approximate else 0)
    if cut is None or cut.count < least:
        return None
    # under tau-Lop's shared channels a whole-message transmission meets the drain (2e-6 off at 12 ranks): no
    # exact fold, only the drifting one (past whole_budget() transmissions)
    exact = not (algorithm.segmented.part_phases and isinstance(model, TauLop))  # type: ignore[union-attr]
    nseg = cut.count
    shared = not algorithm.segmented.part_phases  # type: ignore[union-attr]  # else the figures depend on nseg
    seen: dict[int, float] = memo.setdefault((cut.size, cut.last), {}) if memo is not None and shared else {}

    # with part phases the figures depend on nseg, but the first segments' placed schedules do not: kept for
    # the sizes cut alike, each priced with its whole-message transmissions grown for its own nseg
    units: dict[int, PlacedSchedule] = memo.setdefault(("placed", cut.size, cut.last), {}) \
        if memo is not None and not shared else {}

    counts: dict[int, int] = memo.setdefault(("counts", cut.size, cut.last), {}) if memo is not None else {}

    def first(m: int) -> PlacedSchedule:  # the schedule of m full segments, then the last one, placed
        schedule = build(algorithm, Case(algorithm.collective, nprocs, cut.nbytes(m), root), values).schedule
        return PlacedSchedule.of(schedule, platform, mapping)

    def say(how: str) -> None:
        if notes is not None:
            notes.append(f"{APPROXIMATE_NOTE}{algorithm.key} on {nprocs:,} ranks at {nbytes:,} B{how}")

    whole = algorithm.segmented.part_phases  # type: ignore[union-attr]
    fresh: dict[int, PlacedSchedule] = {}  # built for the floor below, then priced by figure

    def placed_at(m: int) -> PlacedSchedule:  # m full segments, then the last one
        if not whole:
            return fresh.pop(m) if m in fresh else first(m)
        if m not in units:
            units[m] = first(m)
        unit = units[m]
        # whole-message transmissions: as large as in the whole message
        names = [i for i, name in enumerate(unit.schedule.phase_names) if name in whole]
        grown = unit.schedule.nbytes + np.isin(unit.schedule.phase, names) * float((nseg - 1 - m) * cut.size)
        return unit.with_sizes(grown)

    built = [0]  # segments built by this call's figures

    def figure(m: int) -> float:
        if m not in seen:
            built[0] += m + 1
            placed = placed_at(m)
            counts[m] = placed.schedule.ntransmissions
            seen[m] = model.statistic_s(placed, statistic)
            if whole:
                units[m].keep_structure(placed)
        return seen[m]

    if bound is not None and statistic == "max" and hasattr(model, "loads_s"):
        try:
            if _load_floor_s(model, placed_at, fresh, None if whole else memo, cut, nseg) >= bound:
                return math.inf
        except ScheduleTooLarge:
            return None
    if drifting_only:  # its shared channels drift: the drifting fold, its spans within the segments it records;
        # below them (its whole recordable) only past whole_budget() transmissions, as any drifting pipeline
        recordable = nseg < approximate
        m = FIRST
        try:
            if recordable and counts.get(FIRST, 0) == 0:
                figure(FIRST)
            if recordable and counts[FIRST] / (FIRST + 1) * nseg <= whole_budget():
                return None
            while 4 * m + 1 < min(approximate, nseg):
                drifting = _drifting_fold(figure, counts, m, nseg, _drift_tolerance(m),
                                          budget=None if recordable else 0)
                if drifting is not None:
                    say(_drifted(nseg, m, recordable))
                    return drifting
                m *= 2
        except ScheduleTooLarge:
            return None
        return None
    if approximate:
        m = APPROXIMATE_SPAN
        try:
            step = (figure(2 * m) - figure(m)) / m
        except ScheduleTooLarge:
            return None
        say(f": {nseg:,} segments, more than commcost records whole; its steps vary, so its step is the mean over "
            f"segments {m}..{2 * m} (within {100 * APPROXIMATE_TOLERANCE:g}% of the whole where tested)")
        return figure(2 * m) + (nseg - 1 - 2 * m) * step
    m = FIRST
    try:
        figure(FIRST)
        per_segment = counts[FIRST] / (FIRST + 1)  # transmissions a segment adds, about
        # a whole within whole_budget() transmissions takes no drifting fold: priced whole where no exact one passes
        budget = whole_budget()
        cheap = per_segment * nseg <= (budget if CHEAPER_WHOLE is None else min(CHEAPER_WHOLE, budget))
        while 4 * m <= nseg - 1:
            # past the first, the tries of one pricing read at most what one whole schedule may hold (the
            # transmission limit): past it, priced whole or refused at once (1,024 ranks of 32 per node: 12 s of
            # tries at 2,048 segments a size, then refused)
            reads = {m, m + 1, m + 2, 2 * m, *((4 * m,) if isinstance(model, TauLop) else ())}
            if m > FIRST and (built[0] + sum(k + 1 for k in reads if k not in seen)) * per_segment \
                    > transmission_limit():
                return None
            # a cheap whole that this try would cost more than, in segments no figure holds yet: priced whole
            figure(m)
            if cheap and sum(k + 1 for k in {m + 1, m + 2, 2 * m} if k not in seen) > nseg - built[0]:
                return None
            step = figure(m + 1) - figure(m) if exact else 0.0
            if exact and abs(figure(m + 2) - figure(m + 1) - step) <= RTOL * figure(m + 2) \
                    and abs(figure(2 * m) - (figure(m) + m * step)) <= RTOL * figure(2 * m):
                return figure(m) + (nseg - 1 - m) * step
            if m == FIRST and algorithm.segmented.chained:  # type: ignore[union-attr]
                # its fill as long as its chain: from smaller copies of itself (under Hockney the first m
                # passes: 0.1 s; under tau-Lop the steps settle past 2 P segments)
                # (under tau-Lop, where no copy is on one line to 1e-9, the first within a hundredth of the
                # tolerance: S about 2 P, whose whole costs seconds and fails the fold in segments; a whole
                # within CHEAPER_WHOLE transmissions is priced whole instead)
                loose: list[str] = []
                along_ray = ray_statistic_s(algorithm, values, nprocs, cut, platform, mapping, model, root,
                                            statistic, RTOL, memo, 0.0 if cheap else _drift_tolerance(FIRST),
                                            loose)
                if along_ray is not None:
                    if loose:
                        say(f": {nseg:,} segments folded along a ray, its {loose[0]} (within "
                            f"{100 * APPROXIMATE_TOLERANCE:g}% of the whole where tested)")
                    return along_ray
                if isinstance(model, TauLop):  # its steps grow with the hops at work until past 2 P segments:
                    # no m before passes (on 4,096 ranks 2 to 28 s of tries a size, then refused)
                    m = max(m, 1 << (2 * nprocs - 1).bit_length())
                    continue
            if isinstance(model, TauLop):  # before DRIFT_FROM, only steps that settle to 1e-4 of the figure
                drifting = _drifting_fold(figure, counts, m, nseg, _drift_tolerance(m))
                if drifting is not None:
                    say(_drifted(nseg, m))
                    return drifting
            m *= 2
    except ScheduleTooLarge:  # even its first segments pass the limit: the caller prices it whole (or refuses)
        return None
    return None


def _drift_tolerance(m: int) -> float:
    """What :func:`_drifting_fold` asks of the spans from m: :data:`APPROXIMATE_TOLERANCE` from m =
    :data:`DRIFT_FROM`, a hundredth of it before, where only steps that do not drift pass."""
    return APPROXIMATE_TOLERANCE if m >= DRIFT_FROM else APPROXIMATE_TOLERANCE / 100


def _drifted(nseg: int, m: int, recordable: bool = True) -> str:
    """The end of the note saying a pipeline of ``nseg`` segments took the drifting fold from span ``m``, and
    where it is ``recordable`` whole, how to have it priced whole."""
    how = "; one that can be recorded whole is priced so, exactly, up to --exact-up-to transmissions" \
        if recordable else ""
    return (f" under tau-Lop: {nseg:,} segments whose steps drift, folded from segments {2 * m}..{4 * m} "
            f"(within {100 * APPROXIMATE_TOLERANCE:g}% by the drift from segments {m}..{2 * m}{how})")


def _drifting_fold(figure, counts: dict[int, int], m: int, nseg: int,
                   tolerance: float = APPROXIMATE_TOLERANCE, budget: int | None = None) -> float | None:
    """Under tau-Lop a pipeline's steps drift (its channels' concurrency changes from segment to segment, so
    no exact fold passes), but settle: the fold of :func:`pipeline_statistic_s` from the mean step over
    segments 2m..4m, b = (f(4m) - f(2m)) / 2m,

        f(S - 1) ~ f(4m) + (S - 1 - 4m) b,

    used where the whole pipeline is longer than ``budget`` transmissions (None: :func:`whole_budget`; 0 where
    the whole cannot be recorded: coll/han's reduce past its segments) and the step moved little
    from the span before, a = (f(2m) - f(m)) / m: |b - a| (S - 1 - 4m) within ``tolerance`` of the estimate
    (an error as large as the last drift again; measured 1e-14 to 3.4e-3 off the whole on 24 and 64 ranks,
    tests/test_long_pipeline.py). The caller asks :data:`APPROXIMATE_TOLERANCE` from m = :data:`DRIFT_FROM`
    and a hundredth of it at m = :data:`FIRST`, where only steps that do not drift pass: coll/han's allreduce
    on 1,024 ranks, whose steps alternate so that no exact fold passes while their means over segments
    32..64 and 64..128 agree to 1e-14. None otherwise (the caller doubles m, or prices it whole)."""
    before = (figure(2 * m) - figure(m)) / m
    if (counts.get(2 * m, 0) - counts.get(m, 0)) / m * nseg <= (whole_budget() if budget is None else budget):
        return None
    step = (figure(4 * m) - figure(2 * m)) / (2 * m)
    estimate = figure(4 * m) + (nseg - 1 - 4 * m) * step
    return estimate if abs(step - before) * (nseg - 1 - 4 * m) <= tolerance * estimate else None


def _load_floor_s(model, placed_at, fresh: dict, memo: dict | None, cut, nseg: int) -> float:
    """A lower bound of the whole pipeline's last end under a model whose contention domains carry at most so
    many bytes a second and whose receivers take one message at a time (tau-Lop: :meth:`TauLop.loads_s`):
    each domain's and receiver's least seconds for m = :data:`FIRST` and m + 1 full segments, a and b, grow
    by b - a per segment (alike segments add the same transmissions), so the whole takes at least max over
    them of a + (S - 1 - m) (b - a). The two
    schedules are kept in ``fresh`` for the fold to price; the loads in ``memo`` for sizes cut alike."""
    key = ("loads", cut.size, cut.last)
    loads = memo.get(key) if memo is not None else None
    if loads is None:
        loads = []
        for m in (FIRST, FIRST + 1):
            placed = placed_at(m)
            fresh[m] = placed
            loads.append(model.loads_s(placed))
        if memo is not None:
            memo[key] = loads
    (keys, a), (more, b) = loads
    if not np.array_equal(keys, more):
        return 0.0
    return float(np.max(a + (nseg - 1 - FIRST) * (b - a)))


def summarize_notes(lines: list[str]) -> list[str]:
    """The notes of approximate folds (:data:`APPROXIMATE_NOTE` lines), one per algorithm and process count:
    a sweep to 1 TiB folds one algorithm approximately at dozens of sizes, said once with how many, from
    which to which, and how at the largest. Other lines are kept as they are, in order."""
    pattern = re.compile(re.escape(APPROXIMATE_NOTE) + r"(\S+) on ([\d,]+) ranks at ([\d,]+) B(.*)$")
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    out: list[str | tuple[str, str]] = []
    for line in dict.fromkeys(lines):
        found = pattern.match(line)
        if found is None:
            out.append(line)
            continue
        key = (found.group(1), found.group(2))
        if key not in groups:
            groups[key] = []
            out.append(key)
        groups[key].append((int(found.group(3).replace(",", "")), found.group(4)))
    said = []
    for item in out:
        if isinstance(item, str):
            said.append(item)
            continue
        sizes = sorted(groups[item])
        (low, _), (high, how) = sizes[0], sizes[-1]
        count = len({n for n, _ in sizes})  # (a size once, whatever the segment sizes tried at it)
        where = f"{high:,} B" if count == 1 else f"{count} sizes, {low:,} to {high:,} B; at {high:,} B"
        said.append(f"{APPROXIMATE_NOTE}{item[0]} on {item[1]} ranks at {where}{how}")
    return said
