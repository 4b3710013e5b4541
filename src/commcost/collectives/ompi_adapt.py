"""Open MPI 5.0's coll/adapt (han's up module 1): its bcast and reduce as schedules.

coll/adapt is never picked on a user's communicator by default; coll/han
runs it between the nodes' leaders when ``coll_han_<coll>_up_module`` is 1
(han's ``up_comms[1]`` is split with the preference ``adapt,^han``,
``coll_han_subcomms.c``). Read from ``ompi/mca/coll/adapt/`` at v5.0.10.

* bcast and ibcast (``coll_adapt_ibcast.c``): ``coll_adapt_bcast_algorithm``
  1 (binomial, ``build_bmtree``), ``coll_adapt_bcast_segment_size`` 0 (one
  segment): a rank forwards to its children in tree order once it has the
  data, as coll/tuned's binomial of one segment (:func:`adapt_bcast`; the
  blocking bcast is the ibcast and a wait, ``coll_adapt_bcast.c``).
* reduce and ireduce (``coll_adapt_ireduce.c``, :data:`ADAPT_REDUCE`):
  ``coll_adapt_reduce_algorithm`` 1, the same binomial tree
  (``coll_adapt_topocache.c``), segments of ``coll_adapt_reduce_segment_size``
  bytes (163740); a rank sends segment s to its parent once it has reduced
  s from every child (3 receives posted ahead per child), with at most
  ``coll_adapt_reduce_max_send_requests`` (2) sends in flight: segment s
  waits for the rank's send of s - 2 (:func:`.reduce.reduce_tree`, window 2).

Not priced: adapt posts its first sends (the first two segments of a leaf
of the reduce, every send of a one-segment bcast) as synchronous sends
(``coll_adapt_bcast_synchronous_send``, ``_reduce_synchronous_send``, true),
which complete only once the receiver has matched them; under an eager
protocol that is a return message the schedules do not carry, and why
``tune`` offers han's components only with ``--han-modules all``.
"""

from __future__ import annotations

from typing import Mapping

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.reduce import reduce_tree
from commcost.collectives.registry import Algorithm, find
from commcost.collectives.trees import build_bmtree

ADAPT_REDUCE_SEGSIZE = 163740  # coll_adapt_reduce_segment_size default
ADAPT_REDUCE_MAX_SENDS = 2  # coll_adapt_reduce_max_send_requests default


def adapt_bcast() -> tuple[Algorithm, dict[str, int]]:
    """What coll/adapt's bcast and ibcast run with their defaults (module docstring): coll/tuned's binomial
    bcast of one segment."""
    return find(Collective.BCAST, "binomial"), {"segsize": 0}


def _adapt_reduce(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_adapt_ireduce_generic`` on ``build_bmtree`` (module docstring)."""
    if case.nprocs > 1:
        reduce_tree(rec, case, build_bmtree(case.nprocs), params["segsize"], window=params["max_sends"])


# not in the registry: coll/adapt runs only where han hands it the leaders' communicator
ADAPT_REDUCE = Algorithm(Collective.REDUCE, "ompi", "adapt_reduce", _adapt_reduce,
                         "coll/adapt (han's up module 1): segments up the binomial tree, two sends in flight",
                         params=(Param("segsize", ADAPT_REDUCE_SEGSIZE, "coll_adapt_reduce_segment_size", 1),
                                 Param("max_sends", ADAPT_REDUCE_MAX_SENDS,
                                       "coll_adapt_reduce_max_send_requests", 1)))
