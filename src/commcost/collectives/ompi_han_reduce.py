"""Open MPI 5.0's coll/han reduce and allreduce, and libnbc's ireduce they post between nodes, as schedules.

Read from ``ompi/mca/coll/han/coll_han_reduce.c`` and ``coll_han_allreduce.c``
at v5.0.10 (han's levels, leaders and fallbacks: :mod:`.ompi_han`). Both
run only for commutative operations (commcost's reductions are); the
message is cut into segments of ``coll_han_reduce_segsize`` /
``coll_han_allreduce_segsize`` bytes (65536 by default). The low calls are
coll/tuned's fixed decision on (ranks per node, segment bytes); the
nonblocking up calls are libnbc's (the up communicator prefers it), the
blocking ones coll/tuned's fixed decision on (nodes, bytes).

``mca_coll_han_reduce_intra`` (the default), leaders = the ranks whose local
rank is the root's:

* t0: every rank runs the low reduce of segment 0 to its leader;
* then for each segment s: a leader posts libnbc's ireduce of segment s to
  the root's leader, every rank runs the low reduce of segment s + 1, and
  the leader waits for the ireduce. So up(s) overlaps low(s + 1).

``mca_coll_han_allreduce_intra`` (the default), leaders = local rank 0,
the up root = node 0's leader; four stages per segment, lr (low reduce),
ur (libnbc ireduce up), ub (libnbc ibcast down), lb (low bcast):

* t0: lr(0); t1: post ur(0), lr(1), wait;
* t2: post ub(0) and ur(1), lr(2), wait both;
* t3 for s = 0, 1, ...: post ub(s + 1) and ur(s + 2), lr(s + 3), lb(s), wait
  both (each only where the segment exists).

So up to four segments are in flight. ``up`` 1 (``coll_han_reduce_up_module``,
``coll_han_allreduce_up_module``) makes the leaders' ireduce and ibcast
coll/adapt's (:mod:`.ompi_adapt`), ``low`` 1 the nodes' reduce and bcast
coll/sm's (:mod:`.ompi_sm`); both are read from ``han_reduce.c`` and
``han_allreduce.c``, which call ``up_comms[up_module]`` and
``low_comms[low_module]``. The simple versions
(``coll_han_use_simple_reduce`` / ``_allreduce``, or ``@simple`` in han's
rules): the whole vector reduced on each node, then between the leaders
(reduce: tuned's blocking reduce to the root's leader; allreduce: tuned's
allreduce among the local-0 ranks, on han's ``sub_comm`` pair, which the
module parameters do not reach), then (allreduce) the low bcast.

libnbc's ireduce (``nbc_ireduce.c``, ``libnbc_ireduce_algorithm`` 0) picks
by communicator size p and count: Rabenseifner's reduce-scatter + gather
when p > 2 and count >= 2^floor(log2 p), else a binomial tree when p > 4
or the vector is under 65536 bytes, else a chain of 8 KiB fragments (so
only on p = 2). commcost prices them with coll/tuned's schedules of the
same transmissions (:func:`libnbc_ireduce`).

Not modelled: han's allreduce on nodes of unequal size (han runs it; these
schedules describe blocks of ``ppn`` ranks, so tuned's fixed decision
stands in), and non-commutative operations (han hands them to tuned).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.ompi_adapt import ADAPT_REDUCE, adapt_bcast
from commcost.collectives.ompi_han import (MAX_HAN_SEGMENTS, PPN, Call, Part, components, han_segment_bounds,
                                           in_steps, levels, libnbc_ibcast, low_run, module_params, run, tuned_run)
from commcost.collectives.recorder import Recorder
from commcost.collectives.reduce import floor_pof2
from commcost.collectives.registry import SEGMENTS, Algorithm, Segmented, find, register

LIBNBC_CHAIN_FRAGMENT = 16384 // 2  # nbc_ireduce.c: the chain's segsize
LIBNBC_BINOMIAL_BELOW = 65536  # nbc_ireduce.c: binomial when p > 4 or the vector is under this many bytes

REDUCE_SEGSIZE = Param("segsize", 65536, "coll_han_reduce_segsize: bytes per segment (0: none)", 0)
ALLREDUCE_SEGSIZE = Param("segsize", 65536, "coll_han_allreduce_segsize: bytes per segment (0: none)", 0)
REDUCE_MODULES = module_params("reduce")
ALLREDUCE_MODULES = module_params("allreduce")


def libnbc_ireduce(nprocs: int, nbytes: int, root: int) -> tuple[Algorithm, dict[str, int], np.ndarray, int]:
    """What libnbc's ireduce runs on ``nprocs`` ranks for ``nbytes`` (one byte per element, as everywhere in
    commcost), as a coll/tuned schedule of the same transmissions: (algorithm, params, the order of the
    ranks to run it on, the root's index in that order).

    * Rabenseifner (``red_sched_redscat_gather``) is coll/tuned's ``rabenseifner`` (same fold, halving and
      binomial gather);
    * the binomial tree (``red_sched_binomial``: virtual rank = rank with the root and rank 0 swapped; v
      takes v + 1, v + 2, v + 4, ... below its lowest set bit, then sends to v minus it) is coll/tuned's
      in-order binomial reduce (``binomial``, unsegmented) on the ranks in virtual order;
    * the chain (``red_sched_chain``, fragments of 8 KiB, each send waiting for the one before) arises on
      two ranks only, where it is coll/tuned's ``pipeline`` with 8 KiB segments.
    """
    order = np.arange(nprocs, dtype=np.int64)
    if nprocs > 2 and nbytes >= floor_pof2(nprocs):
        return find(Collective.REDUCE, "ompi.rabenseifner"), {}, order, root
    if nprocs > 4 or nbytes < LIBNBC_BINOMIAL_BELOW:
        order[[0, root]] = order[[root, 0]]
        return find(Collective.REDUCE, "ompi.binomial"), {"segsize": 0}, order, 0
    return find(Collective.REDUCE, "ompi.pipeline"), {"segsize": LIBNBC_CHAIN_FRAGMENT}, order, root


def _ireduce(rec: Recorder, leaders: np.ndarray, nbytes: int, root: int, offset: int, label: str,
             adapt: bool = False) -> Part:
    """The leaders' ireduce of ``nbytes`` from ``offset`` among ``leaders`` to ``leaders[root]``: libnbc's, or
    with ``adapt`` coll/adapt's (its blocking reduce is the same and a wait)."""
    if adapt:
        return run(rec, ADAPT_REDUCE, {}, Collective.REDUCE, leaders, nbytes, root, offset, label)
    algorithm, params, order, sub_root = libnbc_ireduce(len(leaders), nbytes, root)
    return run(rec, algorithm, params, Collective.REDUCE, leaders[order], nbytes, sub_root, offset, label)


# -------------------------------------------------------------------------------------------- reduce

@register(Collective.REDUCE, "ompi", "han",
          "coll/han (Open MPI 5 default on several nodes): segments reduced on each node by tuned, "
          "then between nodes by libnbc's ireduce, overlapping the next segment's low reduce",
          params=(REDUCE_SEGSIZE, PPN, *REDUCE_MODULES), segmented=Segmented(approximate_from=MAX_HAN_SEGMENTS + 1))
def han_reduce(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_reduce_intra`` (module docstring): low(0); then per segment s, ireduce(s) posted by
    the leaders, low(s + 1), wait (``up`` and ``low``: :func:`_ireduce`, :func:`.ompi_han.low_run`)."""
    adapt, sm = components(params)
    lv = levels(rec, case, params["ppn"])
    if lv is None:
        return
    bounds = han_segment_bounds(rec, case, params["segsize"])
    size = np.diff(bounds)
    nseg = len(size)

    def low(s: int) -> Call | None:
        return None if s >= nseg else lambda: low_run(rec, Collective.REDUCE, lv.nodes, int(size[s]), lv.root_low,
                                                      int(bounds[s]), f"low {s}: ", sm)

    def up(s: int) -> Call:
        return lambda: _ireduce(rec, lv.leaders, int(size[s]), lv.root_node, int(bounds[s]), f"up {s}: ", adapt)

    in_steps(rec, [((), (low(0),))] + [((up(s),), (low(s + 1),)) for s in range(nseg)])


@register(Collective.REDUCE, "ompi", "han_simple",
          "coll/han's simple reduce: the whole vector reduced on each node, then among the leaders, "
          "both by tuned's fixed decision", params=(PPN, *REDUCE_MODULES))
def han_reduce_simple(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_reduce_intra_simple``: the low reduce to each leader, then tuned's blocking reduce
    among the leaders to the root's (coll/adapt's with ``up`` 1; ``low`` 1: coll/sm's on the nodes)."""
    adapt, sm = components(params)
    lv = levels(rec, case, params["ppn"])
    if lv is None:
        return

    def up() -> Part:
        if adapt:
            return _ireduce(rec, lv.leaders, case.nbytes, lv.root_node, 0, "up: ", True)
        return tuned_run(rec, Collective.REDUCE, lv.leaders, case.nbytes, lv.root_node, 0, "up: ")

    in_steps(rec, [((), (lambda: low_run(rec, Collective.REDUCE, lv.nodes, case.nbytes, lv.root_low, 0, "low: ", sm),
                         up))])


# ------------------------------------------------------------------------------------------ allreduce

@register(Collective.ALLREDUCE, "ompi", "han",
          "coll/han (Open MPI 5 default on several nodes): per segment, reduce on each node (tuned), "
          "ireduce and ibcast between nodes (libnbc), bcast on each node (tuned), four segments in flight",
          params=(ALLREDUCE_SEGSIZE, PPN, *ALLREDUCE_MODULES), segmented=SEGMENTS)
def han_allreduce(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_allreduce_intra`` (module docstring): the t0, t1, t2 and t3 tasks (``up`` and ``low``:
    :func:`_ireduce`, :func:`.ompi_adapt.adapt_bcast`, :func:`.ompi_han.low_run`)."""
    adapt, sm = components(params)
    lv = levels(rec, Case(case.collective, case.nprocs, case.nbytes, 0), params["ppn"])
    if lv is None:
        return
    bounds = han_segment_bounds(rec, case, params["segsize"])
    size = np.diff(bounds)
    nseg = len(size)
    nnodes = lv.nodes.shape[0]
    leaders = lv.nodes[:, 0]
    ibcast = adapt_bcast() if adapt else (libnbc_ibcast(nnodes), {})

    def stage(s: int, name: str) -> Call | None:
        if s >= nseg:
            return None
        nbytes, offset, label = int(size[s]), int(bounds[s]), f"{name} {s}: "
        if name == "lr":
            return lambda: low_run(rec, Collective.REDUCE, lv.nodes, nbytes, 0, offset, label, sm)
        if name == "ur":
            return lambda: _ireduce(rec, leaders, nbytes, 0, offset, label, adapt)
        if name == "ub":
            return lambda: run(rec, *ibcast, Collective.BCAST, leaders, nbytes, 0, offset, label)
        return lambda: low_run(rec, Collective.BCAST, lv.nodes, nbytes, 0, offset, label, sm)

    steps = [((), (stage(0, "lr"),)), ((stage(0, "ur"),), (stage(1, "lr"),)),
             ((stage(0, "ub"), stage(1, "ur")), (stage(2, "lr"),))]
    steps += [((stage(s + 1, "ub"), stage(s + 2, "ur")), (stage(s + 3, "lr"), stage(s, "lb"))) for s in range(nseg)]
    in_steps(rec, steps)


@register(Collective.ALLREDUCE, "ompi", "han_simple",
          "coll/han's simple allreduce: reduce on each node, allreduce among the nodes' rank 0, bcast on "
          "each node, all by tuned's fixed decision", params=(PPN,))
def han_allreduce_simple(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_allreduce_intra_simple``: low reduce to local rank 0, tuned's allreduce among those,
    low bcast from them. It runs on han's ``sub_comm`` pair, not on the module-selected communicators, so
    ``coll_han_allreduce_up_module``/``_low_module`` do not reach it."""
    lv = levels(rec, Case(case.collective, case.nprocs, case.nbytes, 0), params["ppn"])
    if lv is None:
        return
    in_steps(rec, [((), (
        lambda: tuned_run(rec, Collective.REDUCE, lv.nodes, case.nbytes, 0, 0, "low reduce: "),
        lambda: tuned_run(rec, Collective.ALLREDUCE, lv.nodes[:, 0], case.nbytes, 0, 0, "up: "),
        lambda: tuned_run(rec, Collective.BCAST, lv.nodes, case.nbytes, 0, 0, "low bcast: ")))])
