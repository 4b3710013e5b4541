"""Open MPI 5.0's coll/sm broadcast and reduce (han's low module 1) as dependency schedules.

coll/sm is never picked on a user's communicator by default (its priority
is 0, ``coll_sm_component.c``); coll/han runs it inside each node when
``coll_han_bcast_low_module`` is 1 (han's ``low_comms[1]`` is split with
the preference ``sm,^han``, ``coll_han_subcomms.c``). Read from
``ompi/mca/coll/sm/`` at v5.0.10 (``coll_sm_bcast.c``, ``coll_sm_module.c``):

* the ranks form a fan-out tree of degree ``coll_sm_tree_degree`` (4) on
  virtual ranks ``(rank - root) mod P``, laid out as a heap: v's children
  are ``v d + 1 .. v d + d`` (:func:`.trees.build_heap_tree`);
* the message moves in fragments of ``coll_sm_fragment_size`` bytes (8192);
  the root copies fragment k into its shared segment and raises a flag in
  each child's control block; a child with children copies the fragment
  from its parent's segment into its own and raises its children's flags,
  then copies it out; a leaf copies straight from its parent's segment.

As transmissions: one per tree edge and fragment, parent to child, each
waiting for the parent's own copy of that fragment (its reception), and
for nothing else: a parent raises all its children's flags at once and
never waits for their copies, so its fragment k + 1 follows its fragment k
as soon as it has it (:func:`.waits.pipeline_waits` ``"none"``). The copies
are priced as transmissions on the shared-memory channel.

What is left out: the in-use flags (``coll_sm_comm_num_in_use_flags`` 2,
``coll_sm_comm_num_segments`` 8) let the root run at most two sets of four
fragments ahead of the slowest rank; that window binds only where a rank
lags eight fragments behind its parent, and it is a wait of the root on
other ranks' copies, which a schedule (a rank waits for its own operations)
does not express. Not a registry entry: coll/sm runs only on the node
communicators han hands it (:data:`SM_BCAST`). No pml message is sent: Open MPI's pml monitoring sees
none of this traffic.

coll/sm's reduce (``coll_sm_reduce.c``, ``reduce_inorder``; :data:`SM_REDUCE`)
has no tree: per fragment of ``coll_sm_fragment_size`` bytes, every
non-root rank copies its contribution into its slot of the shared segment
and raises a flag, and the root takes the fragments of ranks ``P - 1`` down
to 0 and reduces them into its buffer. As transmissions: one per non-root
rank and fragment, to the root (``combine``), each waiting for the same
rank's copy of the fragment before (:func:`.trees.build_flat_tree` run by
:func:`.reduce.reduce_tree`); the root waits for nothing to receive. Left
out, as for the bcast: the in-use flags, which hold a rank back where it
runs eight fragments ahead of the root.
"""

from __future__ import annotations

from typing import Mapping

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.ompi_bcast import tree_pipeline
from commcost.collectives.recorder import Recorder
from commcost.collectives.reduce import reduce_tree
from commcost.collectives.registry import Algorithm
from commcost.collectives.segments import reserved_segment_bounds
from commcost.collectives.trees import build_flat_tree, build_heap_tree

SM_TREE_DEGREE = 4  # coll_sm_tree_degree default
SM_FRAGMENT_SIZE = 8192  # coll_sm_fragment_size default (a multiple of coll_sm_control_size, 4096)

DEGREE = Param("degree", SM_TREE_DEGREE, "coll_sm_tree_degree: children per rank of the fan-out tree", 1)
FRAGMENT = Param("fragment", SM_FRAGMENT_SIZE, "coll_sm_fragment_size: bytes per fragment", 1)


def _sm_bcast(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_sm_bcast_intra`` (module docstring): the heap tree of ``degree``, ``fragment``-byte
    fragments, each forwarded once received, a parent's children served at once."""
    tree = build_heap_tree(params["degree"], case.nprocs)
    bounds = reserved_segment_bounds(rec, case.nbytes, params["fragment"], case.nprocs - 1)
    tree_pipeline(rec, case, tree, [bounds], label="fragment", sends="none")


# not in the registry: coll/sm runs only where han hands it a node's communicator, never as a rule's pick
SM_BCAST = Algorithm(Collective.BCAST, "ompi", "sm_bcast", _sm_bcast,
                     "coll/sm (han's low module 1): fragments down a heap fan-out tree through shared memory",
                     params=(DEGREE, FRAGMENT))


def _sm_reduce(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_sm_reduce_intra`` (``reduce_inorder``, module docstring): ``fragment``-byte fragments
    from every rank straight to the root, each rank's in order."""
    if case.nprocs > 1:
        reduce_tree(rec, case, build_flat_tree(case.nprocs, case.root), params["fragment"], shifted=False)


SM_REDUCE = Algorithm(Collective.REDUCE, "ompi", "sm_reduce", _sm_reduce,
                      "coll/sm (han's low module 1): every rank's fragments to the root through shared memory",
                      params=(FRAGMENT,))
