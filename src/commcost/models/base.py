"""What every model shares: a schedule placed on a platform, the Cost it returns, the registry."""

from __future__ import annotations

import abc
import functools
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Mapping as TMapping

import numpy as np

from commcost.errors import InputError
from commcost.models.dependency_timeline import STRUCTURE_KEY, TransmissionTimes, dependency_completions
from commcost.models.group_max import group_max
from commcost.models.reduction import ReductionLaw
from commcost.models.symmetry import placed_fold
from commcost.models.timeline import queue_done
from commcost.platform import Mapping, Platform
from commcost.schedule import Schedule


@dataclass(frozen=True, eq=False)
class PlacedSchedule:
    """A schedule with its ranks placed: the channel (and contention domain) of every transmission."""

    schedule: Schedule
    platform: Platform
    mapping: Mapping
    channel: np.ndarray  # index into platform.channels, per transmission
    domain: np.ndarray  # equal numbers share a channel's capacity, per transmission

    @classmethod
    def of(cls, schedule: Schedule, platform: Platform, mapping: Mapping) -> "PlacedSchedule":
        """Place ``schedule`` with ``mapping`` on ``platform``."""
        if mapping.nprocs < schedule.nprocs:
            raise InputError(
                f"the schedule has {schedule.nprocs} ranks but the mapping places {mapping.nprocs}; "
                "expected a mapping of at least as many ranks",
                where="mapping",
            )
        channel = platform.channel_indices(mapping, schedule.src, schedule.dst)
        domain = platform.contention_domains(mapping, schedule.src, channel, schedule.dst)
        return cls(schedule, platform, mapping, channel, domain)

    @classmethod
    def of_folded(cls, schedule: Schedule, placement_dst: np.ndarray, nprocs: int, platform: Platform,
                  mapping: Mapping, domains: bool = False) -> "PlacedSchedule | None":
        """Place a schedule folded by the shift of ranks by q = ``schedule.nprocs`` (one node's share of a
        schedule on ``nprocs`` ranks, receivers modulo q: :func:`commcost.collectives.build_folded`), each
        transmission's channel that of its sender and real receiver ``placement_dst``; or None where the
        placement is not invariant under the shift: every rank's kind, cores and node type the same as
        rank r + q's, and every transmission's channel the same as its images' (each shift checked, on the
        data). Priced by a model without contention (:attr:`Model.folds_by_rank_shift`), it gives every
        rank's times as the whole schedule would (:mod:`commcost.models.symmetry`). ``domains`` (a model
        whose transmissions share a contention domain's capacity: tau-Lop) also asks that the shift map
        contention domains one to one and that a domain holding one of these transmissions hold only
        them, so the folded run sees each domain's whole concurrency (a node's port: yes; a whole
        channel, or a receiving node's port that other nodes send to: no)."""
        q, p = schedule.nprocs, int(nprocs)
        if q < 1 or p % q or mapping.nprocs < p:
            return None
        blocks = p // q
        node = mapping.node_of_rank[:p]
        types = np.array([platform.nodes[i].type.name for i in np.unique(node).tolist()])
        type_of = dict(zip(np.unique(node).tolist(), types.tolist()))
        per_rank = [mapping.kind[:p], mapping.cores[:p], np.array([type_of[i] for i in node.tolist()])]
        for column in per_rank:
            rows = column.reshape(blocks, q)
            if not np.all(rows == rows[:1]):
                return None
        src, dst = np.asarray(schedule.src, np.int64), np.asarray(placement_dst, np.int64)
        pairs, inverse = np.unique(src * p + dst, return_inverse=True)  # a ring's share: q pairs
        one, other = pairs // p, pairs % p
        joined = platform.channel_indices(mapping, one, other)
        shared = platform.contention_domains(mapping, one, joined, other) if domains else None
        seen = [np.unique(shared)] if domains else []
        step = max(1, (1 << 22) // len(pairs))  # shifts checked at once: about 4 M pairs
        for first in range(1, blocks, step):
            shifts = np.arange(first, min(blocks, first + step), dtype=np.int64)[:, None] * q
            image_src, image_dst = (one[None, :] + shifts).ravel(), ((other[None, :] + shifts) % p).ravel()
            images = platform.channel_indices(mapping, image_src, image_dst)
            if not np.all(images.reshape(len(shifts), -1) == joined[None, :]):
                return None
            if domains:
                theirs = platform.contention_domains(mapping, image_src, images, image_dst).reshape(len(shifts), -1)
                if not all(_one_to_one(shared, row) for row in theirs):
                    return None
                seen += [np.unique(row) for row in theirs]
        if domains and len(np.unique(np.concatenate(seen))) != sum(len(d) for d in seen):
            return None  # a domain of these transmissions also holds another shift's
        channel = joined[inverse.ravel()]
        domain = platform.contention_domains(mapping, src, channel, dst)
        return cls(schedule, platform, mapping, channel, domain)

    def scaled(self, factor: float) -> "PlacedSchedule":
        """The same placement of the schedule with every size multiplied by ``factor`` (> 0), keeping what
        pricing derived from this one: what a model keeps on a placed schedule (its fold by a shift of
        ranks, the used channels) and the schedule's dependency structure depend on its ranks, channels,
        domains, waits and on which sizes are equal, never on the sizes themselves, and a uniform scaling
        keeps equal sizes equal. So a sweep over sizes of one scale unit finds its fold and structure once."""
        if not factor > 0:
            raise ValueError(f"expected a factor > 0, got {factor}")
        out = self._placing(self.schedule.scaled(factor))
        out.__dict__.update(self._derived())
        return out

    def with_sizes(self, nbytes: np.ndarray) -> "PlacedSchedule":
        """The same placement of the schedule with these sizes (one per transmission, >= 0), keeping only the
        schedule's dependency structure (sizes play no part in it): not a fold, which rests on which sizes
        are equal. A long pipeline's first segments priced for each whole message they start."""
        return self._placing(replace(self.schedule, nbytes=np.asarray(nbytes, dtype=np.float64)))

    def keep_derived(self, scaled: "PlacedSchedule") -> None:
        """Take back what pricing derived on ``scaled``, a :meth:`scaled` copy of this one (its fold, found
        at a second pricing; the dependency structure), for the next copy."""
        self.__dict__.update(scaled._derived())
        self.keep_structure(scaled)

    def keep_structure(self, copy: "PlacedSchedule") -> None:
        """Take back the dependency structure pricing derived on ``copy`` (a :meth:`scaled` or
        :meth:`with_sizes` copy of this one), for the next copy."""
        if STRUCTURE_KEY in copy.schedule.__dict__:
            self.schedule.__dict__[STRUCTURE_KEY] = copy.schedule.__dict__[STRUCTURE_KEY]

    def _placing(self, schedule: Schedule) -> "PlacedSchedule":
        """``schedule`` (this one's transmissions with other sizes) with this placement and this schedule's
        dependency structure."""
        if STRUCTURE_KEY in self.schedule.__dict__:
            schedule.__dict__[STRUCTURE_KEY] = self.schedule.__dict__[STRUCTURE_KEY]
        return PlacedSchedule(schedule, self.platform, self.mapping, self.channel, self.domain)

    def _derived(self) -> dict:
        """What models keep on this placed schedule beside its fields (a fold, the used channels)."""
        return {k: v for k, v in self.__dict__.items() if k not in _FIELDS}

    @functools.cached_property
    def used_channels(self) -> frozenset[int]:
        """The indices of the channels some transmission uses (kept: a fit prices the same schedule again
        and again)."""
        return frozenset(np.unique(self.channel).tolist())

    def channel_names(self) -> list[str]:
        """Names of the platform's channels, by index."""
        return [c.name for c in self.platform.channels]


_FIELDS = frozenset(f.name for f in fields(PlacedSchedule))  # its own, not what models keep on it


def _one_to_one(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a[i] == a[j] exactly when b[i] == b[j] (the shift maps domains one to one)."""
    both = np.unique(np.stack([a, b]), axis=1).shape[1]
    return both == len(np.unique(a)) == len(np.unique(b))


@dataclass
class Cost:
    """What a model says a schedule costs: in total, per phase, per rank and per channel.

    Phased schedule: ``phase_time_s[k]`` is one run of phase k; ``time_s``
    and the other sums count a repeated phase as often as it runs.
    ``rank_time_s[r]`` sums, over phases, the time at which rank r's last
    send of the phase ends. ``channel_time_s[c]`` sums, over phases, the time
    at which the last transmission on channel c ends.

    Dependency schedule (no barriers): every time is read from the start of
    the schedule. ``time_s`` is the last end; ``phase_time_s[k]``,
    ``rank_time_s[r]`` and ``channel_time_s[c]`` are the last end among the
    transmissions of phase k, of sender r, on channel c.

    ``explain`` carries model-specific detail (tau-Lop: the formula in the
    paper's notation).
    """

    model: str
    time_s: float
    phase_names: tuple[str, ...]
    phase_time_s: np.ndarray
    rank_time_s: np.ndarray
    channel_time_s: dict[str, float]
    channel_nbytes: dict[str, float]
    channel_count: dict[str, int]
    explain: dict[str, Any] = field(default_factory=dict)
    from_start: bool = False  # a dependency schedule's: phase, rank and channel times are last ends

    @classmethod
    def from_end_times(cls, model: str, placed: PlacedSchedule, end_s: np.ndarray) -> "Cost":
        """Summarize per-transmission end times (seconds after their phase starts).

        ``phase_time_s`` is one run of each phase; the totals count a
        repeated phase as often as it runs.
        """
        sched = placed.schedule
        if sched.has_dependencies:
            return cls._from_dependency_ends(model, placed, end_s)
        nphases = sched.nphases
        runs = sched.repeat[sched.phase]
        phase_time = group_max(nphases, sched.phase, end_s)
        rank_time = _sum_of_group_max(sched.phase, sched.src, end_s * runs, sched.nprocs)
        names = placed.channel_names()
        nchan = len(names)
        per_channel = group_max(nphases * nchan, sched.phase * nchan + placed.channel, end_s).reshape(nphases, nchan)
        per_channel *= sched.repeat[:, None]
        nbytes = np.bincount(placed.channel, weights=sched.nbytes * runs, minlength=nchan)
        count = np.bincount(placed.channel, weights=runs, minlength=nchan).astype(np.int64)
        return cls(
            model=model,
            time_s=float(phase_time @ sched.repeat),
            phase_names=sched.phase_names,
            phase_time_s=phase_time,
            rank_time_s=rank_time,
            channel_time_s={names[c]: float(per_channel[:, c].sum()) for c in range(nchan)},
            channel_nbytes={names[c]: float(nbytes[c]) for c in range(nchan)},
            channel_count={names[c]: int(count[c]) for c in range(nchan)},
        )


    @classmethod
    def _from_dependency_ends(cls, model: str, placed: PlacedSchedule, end_s: np.ndarray) -> "Cost":
        """:meth:`from_end_times` for a dependency schedule: last ends, all read from its start."""
        sched = placed.schedule
        names = placed.channel_names()
        nchan = len(names)
        phase_time = group_max(sched.nphases, sched.phase, end_s)
        rank_time = group_max(sched.nprocs, sched.src, end_s)
        channel_time = group_max(nchan, placed.channel, end_s)
        nbytes = np.bincount(placed.channel, weights=sched.nbytes, minlength=nchan)
        count = np.bincount(placed.channel, minlength=nchan)
        return cls(
            model=model,
            time_s=float(end_s.max(initial=0.0)),
            phase_names=sched.phase_names,
            phase_time_s=phase_time,
            rank_time_s=rank_time,
            channel_time_s={names[c]: float(channel_time[c]) for c in range(nchan)},
            channel_nbytes={names[c]: float(nbytes[c]) for c in range(nchan)},
            channel_count={names[c]: int(count[c]) for c in range(nchan)},
            from_start=True,
        )


def _sum_of_group_max(phase: np.ndarray, rank: np.ndarray, value: np.ndarray, nranks: int) -> np.ndarray:
    """For each rank, the sum over phases of its largest value in the phase (no phases x ranks matrix)."""
    if not len(value):
        return np.zeros(nranks)
    nphases = int(phase[-1]) + 1 if len(phase) else 0
    if nphases * nranks <= 4_000_000:  # small enough for a dense phases x ranks table
        return group_max(nphases * nranks, phase * nranks + rank, value).reshape(nphases, nranks).sum(axis=0)
    order = np.lexsort((value, rank, phase))
    key_p, key_r = phase[order], rank[order]
    last = np.ones(len(order), dtype=bool)  # the last of each (phase, rank) group holds its max
    last[:-1] = (key_p[1:] != key_p[:-1]) | (key_r[1:] != key_r[:-1])
    return np.bincount(key_r[last], weights=value[order][last], minlength=nranks).astype(np.float64)


class Model(abc.ABC):
    """A cost model: parameters given to ``__init__``, ``price`` returns a :class:`Cost`."""

    NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str]
    PARAMS: ClassVar[type]
    # every transmission's times a function of its size, channel and combine flag, no contention, each rank one
    # port: a schedule folded by a shift of ranks (PlacedSchedule.of_folded) prices as the whole one
    folds_by_rank_shift: ClassVar[bool] = False
    fold_checks_domains: ClassVar[bool] = False  # its transmissions share domains (PlacedSchedule.of_folded)

    def __init__(self, params: Any) -> None:
        self.params = params
        self.reduction: ReductionLaw | None = None

    def with_reduction(self, law: "ReductionLaw | None") -> "Model":
        """Price reductions (combine transmissions) with gamma(m) of ``law`` (None: communication only)."""
        self.reduction = law
        return self

    @abc.abstractmethod
    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        """Seconds until each transmission is received: from the start of its phase, or, in a dependency
        schedule, from the start of the schedule; its receiver's queue included (one message in at a time,
        :meth:`receive_occupancy_s`) and, for a combine transmission, the receiver's reduction of it (what
        waits for a reception waits for it too)."""

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        """How long each transmission holds its receiver, which takes one message at a time: k messages into
        one rank cost it the sum of their occupancies (the model's per-message and per-byte receive cost).
        Each model says what its law charges; a message alone costs what it costs without the queue."""
        return np.zeros(placed.schedule.ntransmissions)

    def reduction_service_s(self, schedule: Schedule) -> np.ndarray | None:
        """gamma(m) of each combine transmission (0 for the others), or None without reductions."""
        if self.reduction is None or not schedule.combine.any():
            return None
        out = np.zeros(schedule.ntransmissions)
        idx = np.flatnonzero(schedule.combine)
        out[idx] = self.reduction.times(schedule.nbytes[idx])
        return out

    def receive_service_s(self, placed: PlacedSchedule, own: np.ndarray | None = None) -> np.ndarray | None:
        """What a receiver spends on each message once its bytes are in: the model's own receive cost
        (``own``: LogGP's o_recv) plus, for a combine transmission, its reduction; None when nothing."""
        gamma = self.reduction_service_s(placed.schedule)
        if own is None:
            return gamma
        return own if gamma is None else own + gamma

    def phased_receptions(self, placed: PlacedSchedule, arrival_s: np.ndarray,
                          own_service_s: np.ndarray | None = None) -> np.ndarray:
        """End times of a phased schedule's transmissions from the arrival of their last bytes: each
        receiver takes its messages of a phase one at a time in order of arrival,
        done = max(arrival, previous done + occupancy) + service (:func:`commcost.models.timeline.queue_done`)."""
        s = placed.schedule
        service = self.receive_service_s(placed, own_service_s)
        occupancy = self.receive_occupancy_s(placed)
        if service is None and not np.any(occupancy):
            return arrival_s
        return queue_done(s.phase * s.nprocs + s.dst, arrival_s,
                          np.zeros(s.ntransmissions) if service is None else service, occupancy)

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        """Model-specific detail for ``--explain``; empty unless a model has something to say."""
        return {}

    def phase_times_s(self, placed: PlacedSchedule) -> np.ndarray:
        """One run of each phase: its last end (dependency schedule: see :meth:`total_time_s`)."""
        end = self.end_times(placed)
        return group_max(placed.schedule.nphases, placed.schedule.phase, end)

    def total_time_s(self, placed: PlacedSchedule) -> float:
        """Only the total (cheaper than :meth:`price`): the sum over phases of each phase's last end, times
        its repeats; for a dependency schedule, the last end."""
        if placed.schedule.has_dependencies:
            return float(self.end_times(placed).max(initial=0.0))
        return float(self.phase_times_s(placed) @ placed.schedule.repeat)

    def transmission_times(self, placed: PlacedSchedule) -> TransmissionTimes | None:
        """Each transmission's times as :mod:`.dependency_timeline`'s recurrences take them, for a model that
        prices a dependency schedule by them alone (then :meth:`completions` is
        :func:`completions_of_times` of them, and :func:`commcost.models.parameter_sets.statistics_s` prices
        many parameter sets in one walk); None for a model that prices otherwise (contention, queues)."""
        return None

    @classmethod
    def time_columns(cls, models: "list[Model]", placed: PlacedSchedule) -> TransmissionTimes | None:
        """The :meth:`transmission_times` of several parameter sets of this model as (n, sets) columns (the same
        numbers), or None where a set has none or the sets flag different rendezvous or pressed sends."""
        return stack_times([m.transmission_times(placed) for m in models])

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(sent, done)`` per transmission of a dependency schedule, seconds from its start: when its send
        completed for its sender (a blocking send returned, a Waitall saw it) and when its receiver was done
        with it (:meth:`end_times`). A model that does not tell them apart: both its end. ``origin``: each
        rank's own start (:func:`~.dependency_timeline.dependency_completions`), for a model that prices by
        :meth:`transmission_times`."""
        if origin is not None:
            times = self.transmission_times(placed)
            if times is None:
                raise ValueError(f"the {self.NAME} model does not price ranks that start apart")
            return completions_of_times(placed, times, origin)
        done = self.end_times(placed)
        return done, done

    def rank_ends_s(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> np.ndarray:
        """When each rank's part of the schedule is over: its last send completed and its last reception
        done (0 for a rank with neither). A dependency schedule: from its start, or with ``origin`` (each
        rank's own start, :meth:`completions`) from the common 0, at least the rank's start. A phased one:
        the sum over phases of the rank's last end in each (the barrier releases it then), repeated phases
        counted as often as they run (``origin`` added)."""
        s = placed.schedule
        if s.has_dependencies:
            sent, done = self.completions(placed) if origin is None else self.completions(placed, origin)
            ends = np.maximum(group_max(s.nprocs, s.src, sent), group_max(s.nprocs, s.dst, done))
            return ends if origin is None else np.maximum(ends, origin)
        if origin is not None:
            return self.rank_ends_s(placed) + origin
        end = self.end_times(placed)
        runs = s.repeat[s.phase]
        both = np.concatenate([s.phase, s.phase])
        return _sum_of_group_max(both, np.concatenate([s.src, s.dst]), np.concatenate([end, end]) * np.r_[runs, runs],
                                 s.nprocs) if len(end) else np.zeros(s.nprocs)

    def statistic_s(self, placed: PlacedSchedule, statistic: str = "max") -> float:
        """The figure a benchmark reports for the schedule, from every rank's time (:data:`STATISTICS`): the
        last rank's (``max``, the schedule's total), the mean over ranks (OSU's Avg Latency, IMB's t_avg:
        each rank times its own call), the least, or rank 0's."""
        if statistic in ("max", ""):
            return self.total_time_s(placed)
        ends = self.rank_ends_s(placed)
        if statistic == "mean":
            return float(ends.mean()) if len(ends) else 0.0
        if statistic == "min":
            return float(ends.min()) if len(ends) else 0.0
        if statistic == "rank0":
            return float(ends[0]) if len(ends) else 0.0
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {STATISTICS}")

    def price(self, placed: PlacedSchedule, explain: bool = False) -> Cost:
        """The cost of a placed schedule under this model."""
        cost = Cost.from_end_times(self.NAME, placed, self.end_times(placed))
        if explain:
            cost.explain = self.explain(placed, cost)
        return cost


def _same_flags(flags: list) -> bool:
    """Whether every set flags the same transmissions (None: none)."""
    first = flags[0]
    return all((first is None) == (other is None) and (first is None or np.array_equal(first, other))
               for other in flags[1:])


def columns_of(values: list, n: int) -> np.ndarray | None:
    """c per-transmission arrays (None: zeros) as the columns of an (n, c) array; None where all are None."""
    if all(v is None for v in values):
        return None
    out = np.zeros((n, len(values)))
    for q, v in enumerate(values):
        if v is not None:
            out[:, q] = v
    return out


def service_columns(models: list, placed: PlacedSchedule) -> np.ndarray | None:
    """Each model's :meth:`Model.receive_service_s` of ``placed`` as (n, sets) columns (None: none has any), a
    reduction law shared by several sets computed once."""
    known: dict = {}
    values = []
    for model in models:
        law = model.reduction
        key = None if law is None else (law.m.tobytes(), law.time_s.tobytes(), law.beyond_m)
        if key not in known:
            known[key] = model.receive_service_s(placed)
        values.append(known[key])
    return columns_of(values, placed.schedule.ntransmissions)


def stack_times(times: list) -> TransmissionTimes | None:
    """c sets of :class:`~.dependency_timeline.TransmissionTimes` as one of (n, c) columns (None: a set has
    none, or the sets flag different sends)."""
    if not times or any(t is None for t in times) or not _same_flags([t.sync for t in times]) \
            or not _same_flags([t.pressed for t in times]):
        return None
    n = len(times[0].send_busy)
    return TransmissionTimes(*(columns_of([getattr(t, name) for t in times], n)
                               for name in TransmissionTimes._fields[:5]), times[0].sync, times[0].pressed)


def completions_of_times(placed: PlacedSchedule, times: TransmissionTimes,
                         origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(sent, done)`` of every transmission of a placed dependency schedule (:meth:`Model.completions`) from
    its model's :class:`~.dependency_timeline.TransmissionTimes`, folded where one node's ranks repeat;
    ``origin``: each rank's own start (not folded then)."""
    s = placed.schedule
    _, completed, done = dependency_completions(s.src, s.dst, s.after_ptr, s.after_idx, s.nprocs, times.send_busy,
                                                times.inject, times.flight, times.service,
                                                recv_occupancy_s=times.occupancy, recv_prev=s.recv_prev, schedule=s,
                                                sync=times.sync, pressed=times.pressed,
                                                folded=None if origin is not None else placed_fold(placed),
                                                origin=origin)
    return completed, done


STATISTICS = ("max", "mean", "min", "rank0")  # over ranks: what a benchmark reports (Model.statistic_s)

MODELS: dict[str, type[Model]] = {}


def register_model(cls: type[Model]) -> type[Model]:
    """Class decorator: make a model known to the CLI and to ``MODELS`` under its NAME."""
    if cls.NAME in MODELS:
        raise ValueError(f"model {cls.NAME!r} registered twice")
    MODELS[cls.NAME] = cls
    return cls


def channel_table(
    per_channel: TMapping[str, Any], placed: PlacedSchedule, what: str
) -> list[Any]:
    """Per-channel parameters in the platform's channel order (None for channels the schedule
    does not use); names the first used channel that has none."""
    used = placed.used_channels
    rows = []
    for index, channel in enumerate(placed.platform.channels):
        if channel.name not in per_channel and index not in used:
            rows.append(None)
            continue
        if channel.name not in per_channel:
            raise InputError(
                f"{what} parameters have no entry for channel {channel.name!r}; "
                f"expected one for each of {placed.channel_names()}",
                where=f"{what}.{channel.name}",
            )
        rows.append(per_channel[channel.name])
    return rows
