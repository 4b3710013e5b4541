"""Open MPI 5.0's coll/han: hierarchical collectives over node sub-communicators, as schedules.

On a communicator that spans several nodes Open MPI 5.0.x runs coll/han,
not coll/tuned: han's priority is 35, tuned's 30 (``coll_han_priority``,
``coll_han_component.c``), and han's selector
(``coll_han_<coll>_dynamic_global_communicator_module``, default 6 = han)
keeps the call. han splits the communicator into a *low* one per node
(``MPI_COMM_TYPE_SHARED``) and *up* ones joining the ranks of equal local
rank across nodes (``coll_han_subcomms.c``), and runs other components'
collectives on them. Read from ``ompi/mca/coll/han/`` at v5.0.10 (the
v5.0.x branch differs only in reference counting).

Broadcast, ``mca_coll_han_bcast_intra`` (the default: ``coll_han_use_simple_bcast``
false), for a message cut into segments of ``coll_han_bcast_segsize`` bytes
(default 65536, ``COLL_BASE_COMPUTED_SEGCOUNT``):

* the *leaders* are the ranks whose local rank is the root's (one per node);
* t0: the leaders run a blocking bcast of segment 0 from the root's node on
  their up communicator; that call is coll/tuned's (the up communicator
  prefers libnbc, which has no blocking bcast), its fixed decision on
  (nodes, segment bytes);
* then for each segment i: a leader posts libnbc's ibcast of segment i + 1
  (linear on up to 4 nodes, else libnbc's binomial tree), every rank runs
  the blocking low bcast of segment i from the leader (tuned's fixed
  decision on (ranks per node, segment bytes)), and the leader waits for the
  ibcast. So up(i + 1) overlaps low(i).

``mca_coll_han_bcast_intra_simple`` (``coll_han_use_simple_bcast`` or
algorithm ``simple``): a blocking up bcast of the whole message, then the
low bcast, both tuned's fixed decision.

han steps aside, and tuned's fixed decision runs on the whole
communicator, when all ranks share one node, when no node holds two ranks
(``coll_han_subcomms.c``: the module becomes pass-through), and, for bcast
and reduce, when nodes hold different numbers of ranks
(``are_ppn_imbalanced``).

What commcost assumes: ranks are placed on nodes in blocks of ``ppn``
(Open MPI's default ``--map-by core``/``slot``: han's sub-communicators are
the same for any placement, but these schedules name node k's ranks
``k ppn .. k ppn + ppn - 1``); the libraries' tunables keep their defaults;
libnbc's nonblocking calls progress while the rank is inside the blocking
low call (they do: its progress engine runs there). The schedules are
dependency schedules: a rank's part in a sub-collective starts once its
operations in the calls its program completes before have completed.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping, Sequence

import numpy as np

from commcost.collectives.case import Case, Collective, Param
from commcost.collectives.ompi_fixed import decide, registered
from commcost.collectives.ompi_adapt import ACK, adapt_bcast
from commcost.collectives.ompi_sm import SM_BCAST, SM_REDUCE
from commcost.collectives.recorder import Recorder, ScheduleTooLarge
from commcost.collectives.registry import SEGMENTS, Algorithm, build, find, register
from commcost.collectives.segments import reserved_segment_bounds
from commcost.errors import InputError
from commcost.schedule.program_order import after_own
from commcost.schedule.schedule import SendMode

HAN_SEGSIZE = 65536  # coll_han_bcast_segsize, coll_han_reduce_segsize, coll_han_allreduce_segsize defaults
# han's own algorithms in commcost's registry -> their names in han's rules files (coll_han_algorithms.c)
HAN_ALGORITHMS = {"han": "intra", "han_simple": "simple"}
# coll_han_component.c: use_simple_algorithm is true for gather only, so han's default there is "simple"
SIMPLE_BY_DEFAULT = (Collective.GATHER,)
LIBNBC_LINEAR_UP_TO = 4  # nbc_ibcast.c: p <= 4 linear, else binomial (coll_libnbc_ibcast_algorithm 0)

PPN = Param("ppn", 0, "ranks per node, nodes filled in blocks (0: one node); han needs 2 or more nodes", 0)
SEGSIZE = Param("segsize", HAN_SEGSIZE, "coll_han_bcast_segsize: bytes per segment (0: none)", 0)


def module_params(collective: str) -> tuple[Param, Param]:
    """han's ``coll_han_<collective>_up_module`` and ``_low_module`` as the parameters ``up`` and ``low``."""
    return (Param("up", 0, f"coll_han_{collective}_up_module: the leaders' component, 0 libnbc (blocking calls: "
                           "tuned), 1 adapt", 0),
            Param("low", 0, f"coll_han_{collective}_low_module: the nodes' component, 0 tuned, 1 sm", 0))


UP_MODULE, LOW_MODULE = module_params("bcast")
# han's modules per level (coll_han_subcomms.c: up_comms[0] prefers libnbc, [1] adapt; low_comms[0] tuned, [1] sm)
UP_MODULES = ("libnbc", "adapt")
LOW_MODULES = ("tuned", "sm")


@dataclass(frozen=True)
class Part:
    """A sub-collective recorded inside a han collective: the ids of its transmissions and their ranks, and
    which of them are their sender's own operations (``own``; None: all). An acknowledgement of a
    synchronous send (:data:`.ompi_adapt.ACK`) is not: the PML sends it, the rank's program never waits for
    it, while the rank it goes to does."""

    ids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    own: np.ndarray | None = None
    later: np.ndarray | None = None  # own sends that wait, in the sub-collective, for an own send of their sender

    def sends(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, senders) of the transmissions that are their sender's own operations."""
        return (self.ids, self.src) if self.own is None else (self.ids[self.own], self.src[self.own])

    def entry_sends(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, senders) of the own sends that wait for no own send of their sender in this sub-collective:
        the ones that must wait for what the rank did before the call. Every other own send waits, through
        a chain of its sender's own sends, for one of these, so it starts later anyway; a wait for a
        reception would not do (the peer's send does not wait for this rank)."""
        keep = np.ones(len(self.ids), bool) if self.own is None else self.own.copy()
        if self.later is not None:
            keep &= ~self.later
        return self.ids[keep], self.src[keep]


def nodes_of(nprocs: int, ppn: int) -> int | None:
    """The number of nodes han works over, or None where it steps aside (one node, one rank per node, or
    nodes of unequal size)."""
    if ppn < 2 or nprocs <= ppn or nprocs % ppn:
        return None
    return nprocs // ppn


def placement_ppn(node_of_rank: np.ndarray) -> int | None:
    """The ``ppn`` parameter of han's schedules for a placement: the size of the first node's block when
    nodes hold consecutive ranks (0 when one node holds them all), None for any other placement (han runs
    there too, but these schedules name nodes by blocks)."""
    node = np.asarray(node_of_rank, np.int64)
    if len(node) == 0 or np.all(node == node[0]):
        return 0
    change = np.flatnonzero(node[1:] != node[:-1]) + 1
    if len(np.unique(node[np.r_[0, change]])) != len(change) + 1:  # a node's ranks are not consecutive
        return None
    return int(change[0])


def default_name(collective: Collective) -> str:
    """The registry name of the algorithm han runs for ``collective`` with its defaults (no rules file, no
    ``coll_han_use_<coll>_algorithm``): ``han_simple`` for gather, ``han`` (han's "intra") otherwise."""
    return "han_simple" if collective in SIMPLE_BY_DEFAULT else "han"


def is_han(algorithm: Algorithm) -> bool:
    """Whether ``algorithm`` is one of coll/han's (named in han's rules file, not in coll/tuned's)."""
    return algorithm.library == "ompi" and algorithm.name in HAN_ALGORITHMS


def on_placement(algorithm: Algorithm, params: Mapping[str, int], node_of_rank: np.ndarray) -> dict[str, int] | None:
    """``params`` with han's ``ppn`` taken from the placement (:func:`placement_ppn`; unchanged for an
    algorithm without one); None where han's schedules do not describe the placement."""
    if not any(p.name == "ppn" for p in algorithm.params):
        return dict(params)
    ppn = placement_ppn(node_of_rank)
    return None if ppn is None else {**params, "ppn": ppn}


# what coll/tuned runs for a call on han's sub-communicators (and where han steps aside), when not its fixed
# decision: a deployed rules file reaches those calls too (set by :func:`tuned_rules_inside`)
_TUNED_PICK: ContextVar[Callable[[Collective, int, int], "tuple[Algorithm, dict[str, int]] | None"] | None] = \
    ContextVar("tuned_pick", default=None)


@contextmanager
def tuned_rules_inside(pick: Callable[[Collective, int, int], "tuple[Algorithm, dict[str, int]] | None"]):
    """Build han's schedules with coll/tuned taking ``pick(collective, ranks, nbytes)`` (None: its fixed
    decision) for every call han hands it: what a tuned rules file deployed beside han's makes Open MPI run."""
    token = _TUNED_PICK.set(pick)
    try:
        yield
    finally:
        _TUNED_PICK.reset(token)


def tuned_fixed(collective: Collective, nprocs: int, nbytes: int) -> tuple[Algorithm, dict[str, int]]:
    """The coll/tuned algorithm (and its arguments) Open MPI's fixed decision runs for this call (inside
    :func:`tuned_rules_inside`: what the rules pick, where they pick)."""
    pick = _TUNED_PICK.get()
    picked = pick(collective, nprocs, nbytes) if pick is not None else None
    if picked is not None:
        return picked
    decision = decide(collective, nprocs, nbytes)
    algorithm = registered(decision)
    if algorithm is None:
        raise InputError(f"Open MPI's fixed decision for {collective.value} on {nprocs} ranks, {nbytes} bytes is "
                         f"{decision.name} (id {decision.id}), which commcost does not model")
    known = {p.name for p in algorithm.params}
    return algorithm, {k: v for k, v in decision.params.items() if k in known}


@lru_cache(maxsize=512)
def _sub_build(algorithm: Algorithm, case: Case, params: tuple[tuple[str, int], ...], data: bool):
    """One sub-collective's schedule, built once for every segment and call that repeats it (a han pipeline
    runs the same calls on equal segments; schedules are not changed by embedding them)."""
    return build(algorithm, case, dict(params), data=data)


def run(rec: Recorder, algorithm: Algorithm, params: Mapping[str, int], collective: Collective,
        ranks: np.ndarray, nbytes: int, root: int = 0, offset: int | np.ndarray = 0, label: str = "") -> Part:
    """``algorithm`` on the sub-communicator(s) ``ranks`` (one per row), ``nbytes`` from ``offset`` of the
    buffer, rooted at sub-rank ``root``; recorded in ``rec``."""
    ranks = np.atleast_2d(np.asarray(ranks, np.int64))
    schedule = _sub_build(algorithm, Case(collective, ranks.shape[1], int(nbytes), int(root)),
                          tuple(sorted(params.items())), rec.data)
    ids = rec.embed(schedule, ranks, offset, label)
    s = schedule.schedule
    acks = np.asarray([name == ACK for name in s.phase_names], bool)[np.asarray(s.phase, np.int64)]
    later = np.zeros(s.ntransmissions, bool)
    if s.after_ptr is not None and s.ntransmissions:
        waiter = np.repeat(np.arange(s.ntransmissions), np.diff(s.after_ptr))
        waited = np.asarray(s.after_idx, np.int64)
        later[waiter[(s.src[waited] == s.src[waiter]) & ~acks[waited]]] = True
    return Part(ids.ravel(), ranks[:, s.src].ravel(), ranks[:, s.dst].ravel(),
                np.tile(~acks, len(ranks)) if acks.any() else None, np.tile(later, len(ranks)))


def tuned_run(rec: Recorder, collective: Collective, ranks: np.ndarray, nbytes: int, root: int = 0,
              offset: int | np.ndarray = 0, label: str = "") -> Part:
    """:func:`run` of what coll/tuned runs for ``collective`` on sub-communicators of ``ranks`` (one per row):
    its fixed decision on their size (:func:`tuned_fixed`, or a deployed rules file's pick inside
    :func:`tuned_rules_inside`)."""
    size = np.atleast_2d(np.asarray(ranks)).shape[1]
    return run(rec, *tuned_fixed(collective, size, nbytes), collective, ranks, nbytes, root, offset, label)


Call = Callable[[], Part]  # records one sub-collective when called


def in_steps(rec: Recorder, steps: Sequence[tuple[Sequence[Call | None], Sequence[Call | None]]]) -> None:
    """Record a han task pipeline given as steps of (posted, blocking) calls, in program order, with its
    waits: a rank posts the step's nonblocking calls, then runs its blocking calls one after another, then
    waits for what it posted. So a rank's sends in a call wait for its operations in the steps before (and,
    in a blocking call, in the blocking calls before it in its step). None: a call the step skips.

    Operations a rank completed in earlier steps stay waited for until the rank sends again (its sends
    then carry them): a leader that only receives in one call must still have completed its earlier
    calls before it forwards anything."""
    empty = np.zeros(0, np.int64)
    pending = (empty, empty)  # (operation id, rank) rows: what the rank's later sends must still wait for

    def rows(parts: Sequence[Part]) -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate([empty] + [np.concatenate([q.sends()[0], q.ids]) for q in parts]),
                np.concatenate([empty] + [np.concatenate([q.sends()[1], q.dst]) for q in parts]))

    sender = np.zeros(rec.case.nprocs, bool)  # scratch: which ranks send in a call (no sort of what is held)

    def of_senders(ranks: np.ndarray, senders: np.ndarray) -> np.ndarray:
        sender[senders] = True
        out = sender[ranks]
        sender[senders] = False
        return out

    def wait(part: Part, before: tuple[np.ndarray, np.ndarray]) -> None:
        ids, src = part.entry_sends()  # the others wait for these (Part.entry_sends)
        if len(ids) and len(before[0]):
            mine = of_senders(before[1], src)  # only the senders' rows give waits: sort those alone
            if mine.any():
                rec.wait(*after_own(ids, src, before[0][mine], before[1][mine], np.full(int(mine.sum()), -1)))

    def drop(held: tuple[np.ndarray, ...], senders: np.ndarray, among: np.ndarray) -> tuple[np.ndarray, ...]:
        keep = ~(of_senders(held[1], senders) & among)  # a rank's sends carry what they waited for
        return tuple(a[keep] for a in held)

    for posted, blocking in steps:
        now = [call() for call in posted if call is not None]
        for part in now:
            wait(part, pending)
        held = (*pending, np.ones(len(pending[0]), bool))  # third: held since the step began
        for call in blocking:
            if call is not None:
                part = call()
                wait(part, held[:2])
                held = drop(held, part.sends()[1], np.ones(len(held[0]), bool))
                new = rows([part])
                held = tuple(np.concatenate(pair) for pair in zip(held, (*new, np.zeros(len(new[0]), bool))))
        held = drop(held, np.concatenate([empty] + [q.sends()[1] for q in now]), held[2])
        new = rows(now)
        pending = (np.concatenate([held[0], new[0]]), np.concatenate([held[1], new[1]]))


# ------------------------------------------------------------------------------------------- libnbc

def _libnbc_binomial(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """libnbc's binomial ibcast (``bcast_sched_binomial``, nbc_ibcast.c): virtual rank v > 0 receives from
    v minus its highest bit and then posts its sends to v + 2^r for every 2^r above v's highest bit, in
    increasing r; the root posts to 1, 2, 4, ... at once. A send waits for its sender's reception."""
    p = case.nprocs
    v = np.arange(1, p, dtype=np.int64)
    parent = v - (1 << (np.floor(np.log2(v)).astype(np.int64)))
    real = (np.arange(p, dtype=np.int64) + case.root) % p
    rec.dependencies()
    rec.phase("libnbc binomial", SendMode.POSTED)
    order = np.lexsort((v, parent))  # each sender's sends together, in increasing distance
    ids = np.empty(len(v), np.int64)
    ids[order] = rec.sends(real[parent[order]], real[v[order]], 0, case.nbytes)
    recv_of = np.full(p, -1, np.int64)
    recv_of[v] = ids
    rec.wait(ids, recv_of[parent])


LIBNBC_BINOMIAL = Algorithm(Collective.BCAST, "ompi", "libnbc_binomial", _libnbc_binomial,
                            "libnbc's binomial ibcast (han's up level)")


def libnbc_ibcast(nnodes: int) -> Algorithm:
    """The algorithm libnbc's ibcast runs on ``nnodes`` ranks with its defaults (nbc_ibcast.c: linear up to
    4 ranks, else binomial; its linear is the root's isends to every rank in order, as tuned's basic_linear)."""
    return find(Collective.BCAST, "basic_linear") if nnodes <= LIBNBC_LINEAR_UP_TO else LIBNBC_BINOMIAL


# -------------------------------------------------------------------------------------------- bcast

@dataclass(frozen=True)
class Levels:
    """han's view of a communicator: ``nodes`` (one row of ranks per node), the ``leaders`` (the ranks whose
    local rank is the root's), the root's node and its local rank."""

    nodes: np.ndarray
    leaders: np.ndarray
    root_node: int
    root_low: int


MAX_HAN_SEGMENTS = 1024  # han's pipeline is recorded one segment (one step of calls) at a time


def han_segment_bounds(rec: Recorder, case: Case, segsize: int) -> np.ndarray:
    """The segments of a han pipeline (:func:`.segments.reserved_segment_bounds`: refused up front past the
    recorder's limit, every segment reaching every rank), and at most :data:`MAX_HAN_SEGMENTS` of them, which
    commcost records one at a time."""
    bounds = reserved_segment_bounds(rec, case.nbytes, segsize, case.nprocs - 1)
    if len(bounds) - 1 > MAX_HAN_SEGMENTS:
        raise ScheduleTooLarge(f"coll/han's {case.collective.value} of {case.nbytes:,} bytes in {len(bounds) - 1:,} "
                               f"segments of {segsize} bytes: commcost records han's pipeline one segment at a time, "
                               f"up to {MAX_HAN_SEGMENTS:,} segments; expected a larger segsize")
    return bounds


def levels(rec: Recorder, case: Case, ppn: int) -> Levels | None:
    """The levels han splits ``case``'s communicator into; None, with tuned's fixed decision on the whole
    communicator recorded, where han steps aside (:func:`nodes_of`)."""
    nnodes = nodes_of(case.nprocs, ppn)
    if nnodes is None:
        tuned_run(rec, case.collective, np.arange(case.nprocs), case.nbytes, case.root)
        return None
    nodes = np.arange(case.nprocs, dtype=np.int64).reshape(nnodes, ppn)
    root_node, root_low = divmod(case.root, ppn)
    return Levels(nodes, nodes[:, root_low], root_node, root_low)


def module_index(params: Mapping[str, int], name: str, modules: Sequence[str]) -> int:
    """han's ``<coll>_up_module``/``_low_module`` value ``params[name]``, checked against the modules it
    selects (an InputError naming them otherwise)."""
    value = int(params.get(name, 0))
    if not 0 <= value < len(modules):
        choices = ", ".join(f"{i} {m}" for i, m in enumerate(modules))
        raise InputError(f"han's {name} module must be one of {choices}; got {value}", where=name)
    return value


def components(params: Mapping[str, int]) -> tuple[bool, bool]:
    """(coll/adapt between the leaders, coll/sm inside the nodes), as ``params``' ``up`` and ``low`` say."""
    return module_index(params, "up", UP_MODULES) == 1, module_index(params, "low", LOW_MODULES) == 1


def low_run(rec: Recorder, collective: Collective, nodes: np.ndarray, nbytes: int, root: int, offset: int | np.ndarray,
            label: str, sm: bool) -> Part:
    """The nodes' blocking bcast or reduce (one node per row of ``nodes``): coll/tuned's fixed decision, or
    with ``sm`` coll/sm's (:data:`.ompi_sm.SM_BCAST`, :data:`.ompi_sm.SM_REDUCE`, with their defaults)."""
    if sm:
        return run(rec, SM_REDUCE if collective is Collective.REDUCE else SM_BCAST, {}, collective, nodes, nbytes,
                   root, offset, label)
    return tuned_run(rec, collective, nodes, nbytes, root, offset, label)


@register(Collective.BCAST, "ompi", "han",
          "coll/han (Open MPI 5 default on several nodes): segments up by tuned then libnbc, down by tuned",
          params=(SEGSIZE, PPN, UP_MODULE, LOW_MODULE), segmented=SEGMENTS)
def han_bcast(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_bcast_intra`` (module docstring): up bcast of segment 0 (tuned, blocking); then per
    segment i the ibcast of i + 1 (libnbc) overlapping the low bcast of i (tuned). With ``up`` 1 both up
    calls are coll/adapt's (:func:`.ompi_adapt.adapt_bcast`), with ``low`` 1 the low bcasts coll/sm's
    (:data:`.ompi_sm.SM_BCAST`)."""
    up_adapt, sm = components(params)
    adapt = adapt_bcast() if up_adapt else None
    lv = levels(rec, case, params["ppn"])
    if lv is None:
        return
    nnodes = lv.nodes.shape[0]
    bounds = han_segment_bounds(rec, case, params["segsize"])
    nseg = len(bounds) - 1
    size = np.diff(bounds)

    def up(i: int) -> Call | None:
        if i >= nseg:
            return None
        if adapt:
            return lambda: run(rec, *adapt, Collective.BCAST, lv.leaders, int(size[i]), lv.root_node,
                               int(bounds[i]), f"up {i}: ")
        if i == 0:
            return lambda: tuned_run(rec, Collective.BCAST, lv.leaders, int(size[0]), lv.root_node, 0, "up 0: ")
        return lambda: run(rec, libnbc_ibcast(nnodes), {}, Collective.BCAST, lv.leaders, int(size[i]),
                           lv.root_node, int(bounds[i]), f"up {i}: ")

    def low(i: int) -> Call:
        return lambda: low_run(rec, Collective.BCAST, lv.nodes, int(size[i]), lv.root_low, int(bounds[i]),
                               f"low {i}: ", sm)

    in_steps(rec, [((), (up(0),))] + [((up(i + 1),), (low(i),)) for i in range(nseg)])


@register(Collective.BCAST, "ompi", "han_simple",
          "coll/han's simple bcast: the whole message up, then down, both by tuned's fixed decision",
          params=(PPN,))
def han_bcast_simple(rec: Recorder, case: Case, params: Mapping[str, int]) -> None:
    """``mca_coll_han_bcast_intra_simple``: a blocking up bcast among the leaders, then the low bcast."""
    lv = levels(rec, case, params["ppn"])
    if lv is None:
        return
    in_steps(rec, [((), (lambda: tuned_run(rec, Collective.BCAST, lv.leaders, case.nbytes, lv.root_node, 0, "up: "),
                         lambda: tuned_run(rec, Collective.BCAST, lv.nodes, case.nbytes, lv.root_low, 0, "low: ")))])
