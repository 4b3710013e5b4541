"""A chain pipeline priced from smaller copies of itself: its ranks and its segments scaled down together.

Open MPI's pipeline broadcast sends S segments down one chain of P - 1
hops, and its pipeline reduce up the same chain
(:data:`commcost.collectives.registry.CHAINED`). Their fill is as long as
the chain. The fold in segments alone
(:mod:`commcost.selection.long_pipeline`) needs first segments past a few
times P before its steps settle to 1e-9 (1,024 ranks under tau-Lop, whose
transfers are priced by what shares their channel: 2,048 to 4,096 segments,
2 to 4 million transmissions a figure, 6 to 19 s per segment size).

*The fold along a ray.* A chain twice as long carrying twice as many
segments is the same pipeline, each node's part repeated, where the ranks
are placed alike on alike nodes (rank p on node p div q, every node used of
one type and in the same groups, every rank of one kind and core count:
:func:`alike_nodes`). Let f(P, m) be the figure asked (the last rank's end,
the mean over ranks, ...: :meth:`Model.statistic_s`) for the algorithm on
the first P ranks of the placement with m full segments and the message's
last one. Along a ray through the origin the fill's hops and the segments'
steps both grow with t, and the ends (the root's node, the last node) do
not, so

    f(t P1, t m1) = A + t B.

(Not so for Open MPI's chains of ``fanout`` > 1, P - 1 ranks in chains
of ceil and floor of (P - 1) / fanout: their ray's differences grow by 1.9997
to 2.0006 per doubling under tau-Lop and Hockney; the fold in segments
prices them in a second.)

With P = k P1 (k = 2^j) and S - 1 = k m1 + r (0 <= r < k):

    f(P, S - 1) = f(8 P1, 8 m1) + (k - 8) (f(8 P1, 8 m1) - f(4 P1, 4 m1)) / 4 + r d,

d = f(8 P1, 8 m1 + 1) - f(8 P1, 8 m1), the step per segment, which is the
same at every t where f is affine along the ray.

*What is checked, on the data* (:func:`ray_statistic_s`): the figures at
t = 1, 2, 4, 8 on one line and the step at 8 P1 the same twice, each to
``rtol`` of the figure; otherwise the next copy (P1 doubled) is tried while
its largest stays within :data:`RAY_BUDGET` transmissions, and then None
(the caller folds in segments, or prices the schedule whole). The copies
start at two nodes. The ray to M and 2 M segments reads about 8
:data:`RAY_BUDGET` transmissions, so it is not tried for a whole schedule
smaller than that. Like the fold in segments, a term that the checks did
not see overtaking later is not ruled out by proof; tests/test_chain_fold.py
prices whole schedules beside the fold. Measured with Open MPI's pipeline
broadcast of 8 KiB segments under tau-Lop, 4 ranks per node: 2e-12 and 1e-11
off the whole schedule on 128 and 256 ranks (8,192 and 16,384 segments; the
fold in segments: 4e-13 on 256), and on 1,024 ranks (65,536 segments) in
0.6 s where the fold in segments took 19.4 s.

*Not on one line* (``loose``). Under tau-Lop a chain carrying about as
many segments as it has ranks (fill and drain overlapping) has no copies on
one line to 1e-9, and the fold in segments does not settle before a quarter
of its segments: priced whole, 2 to 5 s a size on 1,024 ranks. Where no copy
passes, the first whose slopes along the ray, b1 = (f(4) - f(2)) / 2 and
b2 = (f(8) - f(4)) / 4, give |b2 - b1| (k - 8) within ``loose`` of the
figure is taken, and said (a rule of thumb like the drifting fold's, not a
bound): with a hundredth of the 1% tolerance, 1,024 ranks in 32 KiB segments
were 7.6e-5 (2,048 segments) and 7.8e-4 (1,024) off the whole, 256 ranks
6e-5 and 5.9e-4; 512 segments on 1,024 ranks pass no copy and are priced
whole. The caller asks it only of a whole past a million transmissions
(:mod:`commcost.selection.long_pipeline`): a smaller one is priced whole.
"""

from __future__ import annotations

import numpy as np

from commcost.collectives import Algorithm, Case, build
from commcost.collectives.recorder import ScheduleTooLarge
from commcost.collectives.registry import SegmentCut
from commcost.models import Model, PlacedSchedule
from commcost.models.symmetry import node_period
from commcost.platform import Mapping, Platform

RAY = (1, 2, 4, 8)  # the copies read along the ray: t P1 ranks, t m1 segments
RAY_BUDGET = 125_000  # transmissions: the largest copy read (about a tenth of a second of pricing under tau-Lop)
SMALLEST_SAVING = 16  # k: a ray whose largest copy is more than a sixteenth of the ranks is not worth reading


def alike_nodes(platform: Platform, mapping: Mapping) -> int | None:
    """q where rank p sits on node p0 + p div q, the ranks fill whole nodes, every node used is of one type
    and in the same groups, and every rank of one kind and core count: a placement whose first t q ranks
    are the same for every t, so that a chain through them is a smaller copy of the chain through all. None
    otherwise."""
    node = mapping.node_of_rank
    nprocs = len(node)
    if nprocs < 2:
        return None
    q = node_period(node)
    if nprocs % q or not np.array_equal(node - node[0], np.arange(nprocs) // q):
        return None
    if np.any(mapping.kind != mapping.kind[0]) or np.any(mapping.cores != mapping.cores[0]):
        return None
    used = platform.nodes[int(node[0]):int(node[0]) + nprocs // q]
    return q if len({(n.type, n.groups) for n in used}) == 1 else None


def ray_statistic_s(algorithm: Algorithm, values: dict[str, int], nprocs: int, cut: SegmentCut,
                    platform: Platform, mapping: Mapping, model: Model, root: int, statistic: str,
                    rtol: float, memo: dict | None = None, loose: float = 0.0,
                    approximated: list[str] | None = None) -> float | None:
    """``statistic`` over ranks for ``algorithm`` on ``nprocs`` ranks and the message ``cut`` describes,
    folded along a ray from copies of two nodes and up (module docstring; past what the copies can carry
    within :data:`RAY_BUDGET`, the ray to M and 2 M segments, then the step), or None where the placement
    is not alike nodes, the root is not rank 0, no copy passes the checks, or the copies would not be a
    sixteenth of the whole. ``memo``: figures kept between calls for the same algorithm, values, ranks,
    placement, model and statistic (sizes cut alike share their copies). ``loose`` (> 0): where no copy
    passes the checks, the first whose slopes along the ray, b1 = (f(4) - f(2)) / 2 and b2 = (f(8) - f(4)) / 4
    per unit of t, differ so little that the difference over the rest of the ray, |b2 - b1| (k - 8), is within
    ``loose`` of the figure (module docstring, "Not on one line"); said in ``approximated``."""
    q = alike_nodes(platform, mapping)
    if q is None or root != 0 or cut.parts != 1:
        return None
    seen: dict[tuple[int, int], tuple[float, int]] = memo.setdefault(("ray", cut.size, cut.last), {}) \
        if memo is not None else {}

    def figure(ranks: int, full: int) -> float:
        return copy(ranks, full)[0]

    def copy(ranks: int, full: int) -> tuple[float, int]:  # the figure and the transmissions of a copy
        if (ranks, full) not in seen:
            schedule = build(algorithm, Case(algorithm.collective, ranks, cut.nbytes(full), root), values).schedule
            part = Mapping(mapping.node_of_rank[:ranks], mapping.kind[:ranks], mapping.cores[:ranks],
                           mapping.description)
            seen[ranks, full] = (model.statistic_s(PlacedSchedule.of(schedule, platform, part), statistic),
                                 schedule.ntransmissions)
        return seen[ranks, full]

    def along(small: int, k: int, full: int, keep: bool = False) -> tuple[float, float] | None:
        """f(k small, full) and its step per segment, from the copies of small, 2 small, 4 small and 8 small
        ranks, or None where they are not on one line or the step is not the same twice (with ``keep``, the
        first within ``loose`` kept in ``within``: ``full`` is the whole's)."""
        m1, rest = divmod(full, k)
        f = [figure(t * small, t * m1) for t in RAY[:3]]
        straight = abs((f[2] - f[1]) - 2 * (f[1] - f[0])) <= rtol * f[2]
        if not straight and not (loose and keep):
            return None
        f.append(figure(8 * small, 8 * m1))
        one, two = figure(8 * small, 8 * m1 + 1), figure(8 * small, 8 * m1 + 2)
        step = one - f[3]
        estimate = f[3] + (k - 8) * (f[3] - f[2]) / 4 + rest * step
        if not straight or abs((f[3] - f[2]) - 2 * (f[2] - f[1])) > rtol * f[3] or abs(two - one - step) > rtol * two:
            drift = abs((f[3] - f[2]) / 4 - (f[2] - f[1]) / 2) * (k - 8) / estimate
            if keep and drift <= loose and not within:
                within.append((estimate, f"copies of {small:,} to {8 * small:,} ranks off one line by {drift:.1e} "
                                       f"of the figure over the rest of the ray"))
            return None
        return estimate, step

    within: list[tuple[float, str]] = []  # the first figure within loose, and how it was found

    total = cut.count - 1  # full segments before the last
    small = 2 * q
    try:
        while small * SMALLEST_SAVING <= nprocs:
            k = nprocs // small
            if nprocs % small or k & (k - 1):  # nprocs is not small times a power of two
                small *= 2
                continue
            per = copy(small, 1)[1] / (2 * (small - 1))  # transmissions per rank but one and segment
            carried = int((RAY_BUDGET / (per * (8 * small - 1)) - 3) // 8)  # the most m1 its largest copy carries
            if total // k > carried:  # the ray to M and 2 M segments, then the step at the whole's ranks
                if per * (nprocs - 1) * (total + 1) < 8 * RAY_BUDGET:  # it reads about 8 RAY_BUDGET: not for less
                    small *= 2
                    continue
                half = carried // 2
                if half < 1:
                    break
                near, far = along(small, k, k * half), along(small, k, 2 * k * half)
                if near is not None and far is not None and abs(far[1] - near[1]) <= rtol * far[0] \
                        and abs(far[0] - near[0] - k * half * far[1]) <= rtol * far[0]:
                    return far[0] + (total - 2 * k * half) * far[1]
            elif total // k >= 1:
                got = along(small, k, total, keep=True)
                if got is not None:
                    return got[0]
            small *= 2
    except ScheduleTooLarge:
        pass
    if within and approximated is not None:
        approximated.append(within[0][1])
    return within[0][0] if within else None
