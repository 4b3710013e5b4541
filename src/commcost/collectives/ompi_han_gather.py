"""Open MPI 5.0's coll/han gather, scatter and allgather, as schedules.

Read from ``ompi/mca/coll/han/coll_han_gather.c``, ``coll_han_scatter.c``
and ``coll_han_allgather.c`` at v5.0.10 (levels, leaders and fallbacks:
:mod:`.ompi_han`). None of them cuts the message into segments, and each
han algorithm and its ``simple`` twin move the same bytes between the same
ranks in the same order (they differ in how han builds its
sub-communicators and tasks, not in their transmissions), so both names
share one schedule. Every level is coll/tuned's fixed decision: the
blocking calls on the up communicator go to coll/tuned (libnbc, which that
communicator prefers, has no blocking ones). ``n`` is one rank's block.

* gather (han's default is ``simple``, ``coll_han_use_simple_gather``):
  each node gathers its ranks' blocks to the rank whose local rank is the
  root's (tuned, ppn ranks, blocks of n), then those leaders gather the
  nodes' ppn-block pieces to the root (tuned, nodes, blocks of ppn n);
* scatter: the leaders' up scatter of ppn-block pieces from the root, then
  each node's low scatter of n-byte blocks from its leader;
* allgather: each node gathers to its local rank 0, those ranks allgather
  the nodes' pieces (tuned, nodes, blocks of ppn n), and each node's rank 0
  bcasts all P n bytes to its node (tuned, ppn ranks).

With ranks placed in blocks of ``ppn`` (commcost's assumption, Open MPI's
``--map-by core``), node k's ranks hold the blocks ``k ppn .. k ppn + ppn -
1`` in order, so han's reordering copies are local and cost nothing here.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from commcost.collectives.case import Case, Collective
from commcost.collectives.ompi_han import PPN, default_name, in_steps, levels, tuned_run
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import register


def _offsets(nodes: np.ndarray, nbytes: int) -> np.ndarray:
    """The byte offset of each node's piece (its first rank's block) in a P-block buffer."""
    return nodes[:, 0] * nbytes


def _levels_in_order(rec: Recorder, case: Case, params: Mapping[str, int], up_first: bool) -> None:
    """The rooted one-way collectives: each node's low call between its ranks and their leader (blocks of
    n), the leaders' up call with the root's leader (pieces of ppn n); the up call first (scatter) or last
    (gather). Both are coll/tuned's fixed decision on their sizes."""
    lv = levels(rec, case, params["ppn"])
    if lv is None:
        return
    ppn = lv.nodes.shape[1]
    n, collective = case.nbytes, case.collective
    low = lambda: tuned_run(rec, collective, lv.nodes, n, lv.root_low, _offsets(lv.nodes, n), "low: ")  # noqa: E731
    up = lambda: tuned_run(rec, collective, lv.leaders, ppn * n, lv.root_node, 0, "up: ")  # noqa: E731
    in_steps(rec, [((), (up, low) if up_first else (low, up))])


def han_gather(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_gather_intra`` and ``_intra_simple``: low gather to the leaders, then up gather."""
    _levels_in_order(rec, case, params, up_first=False)


def han_scatter(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_scatter_intra`` and ``_intra_simple``: up scatter among the leaders, then low scatter."""
    _levels_in_order(rec, case, params, up_first=True)


def han_allgather(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_allgather_intra`` and ``_intra_simple``: low gather to local rank 0, up allgather among
    those, low bcast of everything."""
    lv = levels(rec, Case(case.collective, case.nprocs, case.nbytes, 0), params["ppn"])
    if lv is None:
        return
    ppn, n = lv.nodes.shape[1], case.nbytes
    in_steps(rec, [((), (
        lambda: tuned_run(rec, Collective.GATHER, lv.nodes, n, 0, _offsets(lv.nodes, n), "low gather: "),
        lambda: tuned_run(rec, Collective.ALLGATHER, lv.nodes[:, 0], ppn * n, 0, 0, "up: "),
        lambda: tuned_run(rec, Collective.BCAST, lv.nodes, case.nprocs * n, 0, 0, "low bcast: ")))])


for _collective, _build, _what in (
        (Collective.GATHER, han_gather, "gather on each node to the leader, then among the leaders"),
        (Collective.SCATTER, han_scatter, "scatter among the leaders, then on each node"),
        (Collective.ALLGATHER, han_allgather, "gather on each node, allgather among the nodes' rank 0, "
                                              "bcast on each node")):
    for _name, _which in (("han", "intra"), ("han_simple", "simple")):
        _default = " (Open MPI 5's default on several nodes)" if default_name(_collective) == _name else ""
        register(_collective, "ompi", _name, f"coll/han's {_which} {_collective.value}{_default}: {_what}, "
                 "by tuned's fixed decision", params=(PPN,))(_build)
