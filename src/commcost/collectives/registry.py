"""The algorithm registry, keyed by the library's own names and ids.

An algorithm is registered under its collective, its library (``ompi`` for
Open MPI's coll/base + coll/tuned, ``mpich``, or ``generic`` for textbook
algorithms no library names) and the library's own name; Open MPI entries
also carry the id ``coll_tuned_<collective>_algorithm`` takes. A bare name
resolves to the Open MPI entry when there is one (Open MPI is commcost's
embedded MPI), else to the only entry of that name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, NamedTuple

import numpy as np

from commcost.collectives.case import Case, Collective, CollectiveSchedule, Param
from commcost.collectives.rank_shift import NotFoldable
from commcost.collectives.recorder import Recorder
from commcost.errors import InputError
from commcost.units import too_long_for_int

Builder = Callable[[Recorder, Case, Mapping[str, int]], None]
Supports = Callable[[int], bool]
ScaleUnit = Callable[[Mapping[str, int], int, int], "int | None"]
RoundCutter = Callable[[Mapping[str, int], int, int], "RoundCut | None"]
LIBRARIES = ("ompi", "mpich", "generic")


class Unsupported(InputError):
    """The library refuses the call: the algorithm does not run on this many ranks."""


class SegmentCut(NamedTuple):
    """``nbytes`` as ``count`` segments of ``size`` bytes, the last one ``last`` bytes; with ``parts`` = 2
    (split_binary_tree's halves) each half is ``count`` segments (the second one fewer when ``last`` is 1
    byte) and ``last`` the bytes of the two halves' last segments together."""

    size: int
    count: int
    last: int
    parts: int = 1

    def nbytes(self, full: int) -> int:
        """The message of ``full`` segments of ``size`` (in each part) and then this one's last segments."""
        return full * self.size * self.parts + self.last


@dataclass(frozen=True)
class Segmented:
    """An algorithm whose schedule for n bytes is segments repeated: the message cut into segments of
    ``params[param]`` bytes, the last one the rest, every segment run as the one before it; everything else
    in the schedule is the same for every n cut alike, but for the transmissions of the phases
    ``part_phases``, which carry the whole message (in-order binary reduce's send to the root) or, with
    ``parts`` = 2, a half (split_binary_tree's exchange). Then the
    same algorithm on fewer segments with the same last one (:meth:`SegmentCut.nbytes`), those
    transmissions grown back to the message's size, is the first segments of the schedule and its end
    (:mod:`commcost.selection.long_pipeline`). ``approximate_from``: an algorithm whose steps vary from segment
    to segment (coll/han's reduce), so that no exact fold holds, and which commcost cannot record whole from
    that many segments, is priced there by the approximate fold (:func:`.long_pipeline.pipeline_statistic_s`).
    ``chained``: one chain through all ranks (Open MPI's pipeline), whose fill is as long as the chain, priced
    first from smaller copies of itself (:mod:`commcost.selection.chain_fold`)."""

    param: str = "segsize"
    part_phases: tuple[str, ...] = ()
    parts: int = 1
    approximate_from: int = 0  # segments: from this many, with no exact fold, folded approximately (0: never)
    chained: bool = False

    def cut(self, params: Mapping[str, int], nbytes: int) -> SegmentCut | None:
        """The cut of ``nbytes`` (at least two segments in each part), or None. With ``parts`` = 2 the message
        is halves ``ceil(n/2)`` and the rest (split_binary_tree), each cut into segments: one more full
        segment in each half is ``2 size`` more bytes, and every transmission of ``part_phases`` (a half)
        grows by ``size``."""
        size = int(params.get(self.param, 0))
        if size < 1 or nbytes <= size * self.parts:
            return None
        first = -(-nbytes // self.parts)  # the first (larger) part
        count = -(-first // size)
        return SegmentCut(size, count, nbytes - (count - 1) * size * self.parts, self.parts)


SEGMENTS = Segmented()  # the message in segments of params["segsize"]
CHAINED = Segmented(chained=True)  # the same, down one chain through all ranks


@dataclass(frozen=True)
class Algorithm:
    """A collective algorithm: who runs it, under what name and id, with which tunables."""

    collective: Collective
    library: str
    name: str
    builder: Builder
    description: str
    params: tuple[Param, ...] = ()
    id: int | None = None
    scales: ScaleUnit | None = None
    pipelined: bool = False  # the schedule is a tree_pipeline of `segsize` segments over its one-segment schedule
    nprocs_ok: Supports | None = None  # the communicator sizes the library runs it on (None: all)
    segmented: "Segmented | None" = None  # n bytes are segments repeated (segment_cut)
    rounds: RoundCutter | None = None  # n bytes are alike rounds repeated (round_cut)

    def segment_cut(self, params: Mapping[str, int], nbytes: int) -> "SegmentCut | None":
        """How the schedule for ``nbytes`` is alike segments repeated (:class:`Segmented`), or None."""
        return None if self.segmented is None else self.segmented.cut(params, nbytes)

    def round_cut(self, params: Mapping[str, int], nprocs: int, nbytes: int) -> RoundCut | None:
        """How the schedule for ``nbytes`` on ``nprocs`` ranks is alike rounds repeated (:class:`RoundCut`), or
        None."""
        return None if self.rounds is None else self.rounds(params, nprocs, nbytes)

    def supports(self, nprocs: int) -> bool:
        """Whether the library runs this algorithm on ``nprocs`` ranks (Open MPI's two_proc: only on 2)."""
        return nprocs < 2 or self.nprocs_ok is None or self.nprocs_ok(nprocs)

    def scale_unit(self, params: Mapping[str, int], nprocs: int, nbytes: int) -> int | None:
        """A size n0 whose schedule, every size times ``nbytes / n0``, is the schedule for ``nbytes``; or None.

        Unsegmented trees and linear algorithms give 1 (every transmission
        carries the whole message); scatter-allgather broadcasts give P when
        P divides n (equal blocks). Sizes with the same n0 share one build in
        a size sweep; the claim is tested against building at every size.
        """
        if self.scales is None or nbytes < 1 or nprocs < 2:
            return None
        unit = self.scales(params, nprocs, nbytes)
        return unit if unit is not None and unit <= nbytes and nbytes % unit == 0 else None

    @property
    def key(self) -> str:
        """``library.name``, unique within a collective."""
        return f"{self.library}.{self.name}"

    def resolve_params(self, given: Mapping[str, int] | None = None) -> dict[str, int]:
        """The library's defaults overridden by ``given``; unknown names or values too small are errors."""
        values = {p.name: p.default for p in self.params}
        for name, value in (given or {}).items():
            spec = next((p for p in self.params if p.name == name), None)
            if spec is None:
                known = ", ".join(p.name for p in self.params) or "none"
                raise InputError(f"{self.key} has no parameter {name!r}; its parameters: {known}", where=name)
            if isinstance(value, bool) or not isinstance(value, int) or value < spec.minimum:
                raise InputError(f"{name} must be an integer >= {spec.minimum}, got {value!r}", where=name)
            values[name] = value
        return values


class RoundCut(NamedTuple):
    """A schedule for n bytes run as ``count`` alike rounds of ``per_round`` bytes each, then a tail (its phases
    named from ``tail``) whose transmissions carry one ``piece`` of bytes per round: Open MPI's segmented ring
    allreduce, whose reduce-scatter runs in rounds of one piece per block and whose allgather passes whole
    blocks. The same algorithm with ``params`` on ``nbytes(m)`` bytes runs m of those rounds, its tail's
    transmissions carrying m pieces (:mod:`commcost.selection.round_fold` prices the whole from them)."""

    count: int
    per_round: int
    piece: int
    params: tuple[tuple[str, int], ...]
    tail: str

    def nbytes(self, rounds: int) -> int:
        """The message whose schedule is ``rounds`` of these rounds."""
        return rounds * self.per_round


ALGORITHMS: dict[tuple[Collective, str], Algorithm] = {}


def register(collective: Collective, library: str, name: str, description: str,
             params: tuple[Param, ...] = (), id: int | None = None,
             scales: ScaleUnit | None = None, pipelined: bool = False,
             nprocs_ok: Supports | None = None, segmented: Segmented | None = None,
             rounds: RoundCutter | None = None) -> Callable[[Builder], Builder]:
    """Decorator: register ``builder`` as ``library.name`` for ``collective``.

    ``scales(params, nprocs, nbytes)`` gives the size whose schedule scales to
    the one for ``nbytes``, or None (see :meth:`Algorithm.scale_unit`). ``pipelined``: the schedule for
    n bytes is the posted pipeline of ``segsize`` segments over the tree of its one-segment schedule
    (:func:`commcost.collectives.ompi_bcast.tree_pipeline`), so a model may price it from the tree.
    ``nprocs_ok(P)``: whether the library runs it on P ranks; :func:`build` raises :class:`Unsupported`
    where it does not (as the library's call fails). ``segmented``: how a schedule is made of repeated segments
    (:class:`Segmented`); ``rounds(params, nprocs, nbytes)``: of alike rounds (:class:`RoundCut`), or None.
    """
    if library not in LIBRARIES:
        raise ValueError(f"library must be one of {LIBRARIES}")

    def wrap(builder: Builder) -> Builder:
        algorithm = Algorithm(collective, library, name, builder, description, params, id, scales, pipelined,
                              nprocs_ok, segmented, rounds)
        if (collective, algorithm.key) in ALGORITHMS:
            raise ValueError(f"{collective.value} {algorithm.key} is registered twice")
        ALGORITHMS[(collective, algorithm.key)] = algorithm
        return builder
    return wrap


def algorithms(collective: Collective | None = None) -> list[Algorithm]:
    """Registered algorithms (of one collective), Open MPI by id first, then by library and name."""
    chosen = [a for (c, _), a in ALGORITHMS.items() if collective is None or c is collective]
    order = {lib: i for i, lib in enumerate(LIBRARIES)}
    # Open MPI's coll/tuned ids first, then its other components' algorithms (coll/han: no id), so a tie in a
    # selection goes to a tuned algorithm
    return sorted(chosen, key=lambda a: (a.collective.value, order[a.library], a.id is None, a.id or 0, a.name))


def find(collective: Collective, name: str) -> Algorithm:
    """The algorithm ``name`` (``library.name``, a bare name, or an Open MPI id) of ``collective``."""
    entries = algorithms(collective)
    if (collective, name) in ALGORITHMS:
        return ALGORITHMS[(collective, name)]
    if name.isdigit():  # an id; one past int()'s 4,300 digits is no id
        hits = [] if too_long_for_int(name) else [a for a in entries if a.library == "ompi" and a.id == int(name)]
    else:
        hits = [a for a in entries if a.name == name]
        hits = [a for a in hits if a.library == "ompi"] or hits
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(a.key for a in entries)
    if hits:
        raise InputError(f"{name!r} names several {collective.value} algorithms "
                         f"({', '.join(a.key for a in hits)}); write library.name")
    raise InputError(f"no {collective.value} algorithm {name!r}; expected one of {known}")


def build(algorithm: Algorithm, case: Case, params: Mapping[str, int] | None = None,
          data: bool = False) -> CollectiveSchedule:
    """The schedule of ``algorithm`` for ``case``; ``data=True`` keeps payloads for the checker.

    A zero-byte call or a one-rank communicator gives an empty schedule: the
    MPI bindings return before any algorithm runs. An algorithm the library
    does not run on ``case.nprocs`` ranks raises :class:`Unsupported`.
    """
    if case.collective is not algorithm.collective:
        raise ValueError(f"{algorithm.key} implements {algorithm.collective.value}, not {case.collective.value}")
    if case.element_bytes > 1:
        return in_elements(algorithm, case, params, data)
    values = algorithm.resolve_params(params)
    if case.nbytes > 0 and not algorithm.supports(case.nprocs):
        raise Unsupported(f"{algorithm.collective.value} {algorithm.key} does not run on {case.nprocs} ranks "
                          f"(Open MPI returns MPI_ERR_UNSUPPORTED_OPERATION)", where="procs")
    recorder = Recorder(case, data=data)
    if case.nbytes > 0 and case.nprocs > 1:
        # MPI returns at once for a zero count or a single rank (Open MPI ompi/mpi/c/bcast.c and siblings)
        algorithm.builder(recorder, case, values)
    return recorder.build(algorithm.key, values)


def build_folded(algorithm: Algorithm, case: Case, shift: int,
                 params: Mapping[str, int] | None = None) -> tuple[CollectiveSchedule, np.ndarray] | None:
    """The schedule of ``algorithm`` for ``case`` folded by the shift of ranks by ``shift`` (one node's
    ranks), built without the whole (:mod:`.rank_shift`): ranks 0..shift-1's transmissions, receivers
    modulo ``shift``, on ``shift`` ranks; with each transmission's real receiver, for its channel. None
    where a batch the algorithm records is not invariant under the shift, or the algorithm states its
    waits or its receive order (build it whole then)."""
    p = case.nprocs
    if case.nbytes <= 0 or shift < 2 or shift >= p or p % shift:
        return None
    if case.element_bytes > 1:  # as in_elements: the library's count of elements, each element_bytes bytes
        count, given = _in_count(algorithm, case, params)
        got = build_folded(algorithm, count, shift, given)
        if got is None:
            return None
        return replace(got[0], schedule=got[0].schedule.scaled(float(case.element_bytes)), case=case), got[1]
    values = algorithm.resolve_params(params)
    if not algorithm.supports(p):
        return None
    recorder = Recorder(case, fold=shift)
    try:
        algorithm.builder(recorder, case, values)
        built = recorder.build(algorithm.key, values)
    except NotFoldable:
        return None
    assert recorder.placement_dst is not None
    return built, recorder.placement_dst


def in_elements(algorithm: Algorithm, case: Case, params: Mapping[str, int] | None = None,
                data: bool = False) -> CollectiveSchedule:
    """The schedule of a call of ``case.nbytes`` bytes in elements of ``case.element_bytes``: the library's
    algorithm run on count = nbytes // element_bytes elements (what OSU passes: size / sizeof(float)), each
    transmission carrying element_bytes bytes per element. The builders count one element per byte, so it
    is the schedule of count bytes with every size times element_bytes; a segment size in bytes becomes
    segsize // element_bytes elements (Open MPI's ``COLL_BASE_COMPUTED_SEGCOUNT``; under one element: no
    segments). ``data`` payloads stay in elements."""
    count, given = _in_count(algorithm, case, params)
    built = build(algorithm, count, given, data)
    return replace(built, schedule=built.schedule.scaled(float(case.element_bytes)), case=case)


def _in_count(algorithm: Algorithm, case: Case, params: Mapping[str, int] | None) -> tuple[Case, dict[str, int]]:
    """The call of ``case`` in its elements (one byte each, as the builders count) and the parameters for it:
    a segment size in bytes becomes one in elements (:func:`in_elements`)."""
    given = dict(algorithm.resolve_params(params))
    if given.get("segsize"):
        given["segsize"] = given["segsize"] // case.element_bytes
    return Case(case.collective, case.nprocs, case.nbytes // case.element_bytes, case.root), given


def whole_blocks(params: Mapping[str, int], nprocs: int, nbytes: int) -> int:
    """Scale unit of an algorithm whose every transmission carries whole blocks of ``nbytes`` (or the whole
    message), counted independently of n: the 1-byte schedule, sizes times n."""
    return 1


def composite_unit(nprocs: int, nbytes: int, parts: tuple[tuple[Collective, str, int], ...]) -> int | None:
    """Scale unit of an algorithm that runs other collectives one after another with their defaults.

    ``parts`` lists (collective, name or Open MPI id, k): the part runs on ``k * nbytes`` bytes. The whole
    scales from 1 byte when every part's schedule at ``k n`` is its schedule at ``k`` bytes times n: its
    unit u at ``k n`` divides k and is also its unit at ``k`` (both then scale from the same u-byte
    schedule). Otherwise None.
    """
    for collective, name, k in parts:
        part = find(collective, name)
        values = part.resolve_params()
        unit = part.scale_unit(values, nprocs, k * nbytes)
        if unit is None or k % unit or part.scale_unit(values, nprocs, k) != unit:
            return None
    return 1
