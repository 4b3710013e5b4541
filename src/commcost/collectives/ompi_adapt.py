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

Synchronous sends (``coll_adapt_bcast_synchronous_send``,
``_reduce_synchronous_send``, both true): adapt posts its first sends as
synchronous sends (the root's first ``coll_adapt_bcast_max_send_requests``
(2) segments to each child; a leaf's first two segments of the reduce),
which complete only once the receiver has matched them. A message under the
network's eager limit is then answered by an acknowledgement the sender
waits for; above it the rendezvous handshake, which any send of that size
makes and the calibration prices, already does. So for every such send of
at most ``eager`` bytes (``btl_tcp_eager_limit``, 65536, by default: adapt
runs between the nodes' leaders) the schedules carry an ``ack``: a 0-byte
transmission back to the sender once the data has arrived, which whatever
waits for that send's completion waits for (the rest of han's step). pml
monitoring does not see it: ob1 sends it as a control fragment.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.reduce import reduce_tree
from commcost.collectives.registry import Algorithm, build, find
from commcost.collectives.segments import segment_bounds
from commcost.collectives.trees import build_bmtree

ADAPT_REDUCE_SEGSIZE = 163740  # coll_adapt_reduce_segment_size default
ADAPT_REDUCE_MAX_SENDS = 2  # coll_adapt_reduce_max_send_requests default
ADAPT_SYNC_SENDS = 2  # the first sends adapt posts synchronous (max_send_requests of bcast and reduce)
EAGER_LIMIT = 65536  # btl_tcp_eager_limit default: the network between han's leaders
ACK = "ack"  # the phase name of the acknowledgements (what pml monitoring does not count)

EAGER = Param("eager", EAGER_LIMIT, "eager limit (bytes) of the network between the leaders, btl_tcp_eager_limit: "
                                    "a synchronous send up to it waits for an acknowledgement; 0: none does", 0)


def acknowledge(rec: Recorder, ids: np.ndarray, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                eager: int) -> np.ndarray:
    """The acknowledgements of the synchronous sends ``ids`` (``src`` -> ``dst``, ``nbytes`` each) that are
    eager (at most ``eager`` bytes): a 0-byte transmission ``dst`` -> ``src`` once the data has arrived.
    Returns, per send, its acknowledgement's id (-1 for a send without one: a rendezvous already waits)."""
    ids, src, dst = (np.asarray(a, np.int64) for a in (ids, src, dst))
    acked = np.asarray(nbytes) <= eager
    out = np.full(len(ids), -1, np.int64)
    if acked.any():
        rec.phase(ACK)
        out[acked] = rec.sends(dst[acked], src[acked], 0, 0)
        rec.wait(out[acked], ids[acked])
    return out


def _adapt_bcast(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_adapt_ibcast_generic`` with one segment: coll/tuned's binomial bcast of one segment (a
    rank forwards once it has the data), then the acknowledgements of the root's synchronous sends."""
    if case.nprocs < 2:
        return
    cs = build(find(Collective.BCAST, "binomial"), case, {"segsize": 0}, data=rec.data)
    ids = rec.embed(cs, np.arange(case.nprocs, dtype=np.int64)).ravel()
    s = cs.schedule
    mine = np.asarray(s.src) == case.root
    acknowledge(rec, ids[mine], s.src[mine], s.dst[mine], s.nbytes[mine], params["eager"])


def _adapt_reduce(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``ompi_coll_adapt_ireduce_generic`` on ``build_bmtree`` (module docstring), with the
    acknowledgements of the leaves' first two segments. A leaf's segment two sends later waits for its
    send, not for the acknowledgement (a schedule's waits point back in phase order): that only differs
    where segments are eager, under adapt's default 163,740-byte segments a whole vector of one segment."""
    if case.nprocs < 2:
        return
    tree = build_bmtree(case.nprocs)
    ids = reduce_tree(rec, case, tree, params["segsize"], window=params["max_sends"])
    nseg = len(ids) // len(tree.dst)
    leaves = np.flatnonzero(np.bincount(tree.src, minlength=case.nprocs)[tree.dst] == 0)  # edges from leaves
    first = min(ADAPT_SYNC_SENDS, nseg)
    sync = (leaves[:, None] * nseg + np.arange(first)).ravel()
    src = np.repeat((tree.dst[leaves] + case.root) % case.nprocs, first)
    dst = np.repeat((tree.src[leaves] + case.root) % case.nprocs, first)
    size = np.diff(segment_bounds(case.nbytes, params["segsize"]))[:first]
    acknowledge(rec, ids[sync], src, dst, np.tile(size, len(leaves)), params["eager"])


def adapt_bcast() -> tuple[Algorithm, dict[str, int]]:
    """What coll/adapt's bcast and ibcast run with their defaults (module docstring)."""
    return ADAPT_BCAST, ADAPT_BCAST.resolve_params()


# not in the registry: coll/adapt runs only where han hands it the leaders' communicator
ADAPT_BCAST = Algorithm(Collective.BCAST, "ompi", "adapt_bcast", _adapt_bcast,
                        "coll/adapt (han's up module 1): one segment down the binomial tree, the root's sends "
                        "synchronous", params=(EAGER,))


ADAPT_REDUCE = Algorithm(Collective.REDUCE, "ompi", "adapt_reduce", _adapt_reduce,
                         "coll/adapt (han's up module 1): segments up the binomial tree, two sends in flight",
                         params=(Param("segsize", ADAPT_REDUCE_SEGSIZE, "coll_adapt_reduce_segment_size", 1),
                                 Param("max_sends", ADAPT_REDUCE_MAX_SENDS,
                                       "coll_adapt_reduce_max_send_requests", 1), EAGER))
