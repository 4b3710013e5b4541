"""tau-Lop price of a segmented tree pipeline *with phase barriers*, from its tree alone.

Open MPI's broadcasts are dependency schedules now (no barrier between
steps), priced by the event engine; this closed form prices the old phased
pipeline (:meth:`Schedule.without_dependencies`), the baseline that
``price_grid(phase_barriers=True)`` and ``bench/bench_collectives.py`` set
beside the prediction. It is not a prediction of what Open MPI runs.

Open MPI's generic tree broadcasts (chain, pipeline, binary, binomial,
k-nomial: ``ompi_coll_base_bcast_intra_generic``) are, as schedules, a
pipeline of S segments over the tree's depths: in phase t every edge whose
sender is at depth d with ``0 <= t - d < S`` posts segment ``t - d`` (see
:func:`commcost.collectives.ompi_bcast.tree_pipeline`). The unsegmented
schedule (one segment) holds each edge once, in the phase of its sender's
depth, so it carries everything the pipeline needs: each edge's depth,
channel and contention domain.

Under tau-Lop every edge's send is its own job (posted), all of a phase's
jobs start together, and domains do not interfere (A3). In phase t a
domain D has ``a`` active edges, ``b`` of them (those at depth t - S + 1)
carrying the last segment of ``r`` bytes and the others a full segment of
``s`` bytes. Its staircase (paper 000 eq. 5-7) is

    a||T(r) + (a - b)||T(s - r)      (b > 0; the second term only if a > b and s > r)
    a||T(s)                          (b = 0)

and the phase lasts as long as its slowest domain. So the whole pipeline
costs ``sum_t max_D g_D(t)``, with ``a_D(t)`` a window sum over the
per-depth counts of D's edges: O(domains x phases) integer work, against
O(edges x segments) transmissions for the schedule. Phases in the steady
run (every depth busy, no last segment) are equal and priced once. Equal
to pricing the built schedule (tests/test_pipeline_price.py).
"""

from __future__ import annotations

import numpy as np

from commcost.models import PlacedSchedule
from commcost.models.taulop.model import TauLop


def pipeline_time_s(model: TauLop, unit: PlacedSchedule, nseg: int, seg: float, last: float) -> float:
    """Seconds for the S = ``nseg``-segment pipeline over the tree of ``unit`` (its one-segment schedule,
    placed): segments of ``seg`` bytes, the last one of ``last`` bytes (``0 < last <= seg``)."""
    s = unit.schedule
    if s.ntransmissions == 0:
        return 0.0
    if s.has_dependencies or not np.all(s.posted) or np.any(s.repeat != 1):
        raise ValueError("expected the phased (barrier), posted, one-segment schedule of a tree pipeline")
    depth = s.phase
    height = s.nphases
    dom_keys, dom = np.unique(unit.domain, return_inverse=True)
    chan_of_dom = np.zeros(len(dom_keys), np.int64)
    chan_of_dom[dom] = unit.channel
    counts = np.zeros((len(dom_keys), height + 1), np.int64)
    np.add.at(counts, (dom, depth + 1), 1)
    prefix = np.cumsum(counts, axis=1)  # prefix[:, d] = edges at depths < d
    nphases = height + nseg - 1
    first_steady, last_steady = height - 1, nseg - 2  # every depth busy, nobody on its last segment
    if last_steady >= first_steady:
        t = np.r_[np.arange(first_steady + 1), np.arange(last_steady + 1, nphases)]
        weight = np.ones(len(t))
        weight[first_steady] = last_steady - first_steady + 1
    else:
        t, weight = np.arange(nphases), np.ones(nphases)
    hi = np.minimum(t, height - 1) + 1
    lo = np.maximum(t - nseg + 1, 0)
    active = prefix[:, hi] - prefix[:, lo]  # a, domains x phases
    last_depth = t - nseg + 1
    has_last = (last_depth >= 0) & (last_depth <= height - 1)
    on_last = np.where(has_last[None, :], counts[:, np.clip(last_depth, 0, height - 1) + 1], 0)  # b
    if last >= seg:
        on_last = np.zeros_like(on_last)
    laws = model.laws_for(unit)
    cost = np.zeros(active.shape)
    for c in np.unique(chan_of_dom).tolist():
        rows = chan_of_dom == c
        a, b = active[rows], on_last[rows]
        width = int(b.max()) + 1
        code = a * width + b
        if (int(a.max()) + 1) * width <= 1 << 16:  # few (a, b) values: price them all, look them up
            pairs = np.arange((int(a.max()) + 1) * width)
            inverse = code
        else:
            pairs, inverse = np.unique(code, return_inverse=True)
        pa, pb = pairs // width, pairs % width
        value = np.zeros(len(pairs))
        busy = pa > 0
        some_last = busy & (pb > 0)
        full = busy & (pb == 0)
        law = laws[c]
        if np.any(full):
            value[full] = law.times(np.full(int(full.sum()), float(seg)), pa[full])
        if np.any(some_last):
            value[some_last] = law.times(np.full(int(some_last.sum()), float(last)), pa[some_last])
            rest = some_last & (pa > pb)
            if np.any(rest) and seg > last:
                value[rest] += law.times(np.full(int(rest.sum()), float(seg - last)), pa[rest] - pb[rest])
        cost[rows] = value[inverse.reshape(a.shape)]
    return float(cost.max(axis=0) @ weight)
