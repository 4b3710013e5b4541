"""Builds a :class:`CollectiveSchedule` phase by phase, one send or a numpy batch of sends at a time.

An algorithm writes its transmissions as byte ranges of the collective's
buffer (see :mod:`.case`); the recorder derives each transmission's size
from them and keeps the ranges for the data-flow checker when asked
(``data=True``). Batches (:meth:`Recorder.sends`) keep million-rank
builds fast: no Python loop per transmission.

Every schedule a recorder builds is a dependency schedule (see
:mod:`commcost.schedule.schedule`): no barrier between phases. An
algorithm either records its phases as the ranks' program steps, and the
waits follow from each rank's program order
(:func:`commcost.schedule.program_order.program_order`: a rank's step
starts when its previous step's sends and receptions have completed), or calls
:meth:`Recorder.dependencies`, keeps the ids every send method returns
(insertion order, from 0) and says what waits for what with
:meth:`Recorder.wait` (trees with segment windows, pipelines). A composite
may record stepped transmissions first and then explicit ones (a reduce,
then a broadcast): each explicit one also waits for its sender's whole
stepped program. Phases then only label steps; they must still be begun
so that every transmission comes after those it waits for (an earlier
phase, or earlier in the same one).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from commcost.arrays import unique_inverse
from commcost.collectives.case import Case, CollectiveSchedule
from commcost.collectives.rank_shift import NotFoldable, shift_invariant
from commcost.errors import InputError
from commcost.schedule.program_order import after_own, own_operations, program_order
from commcost.schedule.schedule import Schedule, SendMode, relabel_dependencies
from commcost.units import whole_number

Range = tuple[int, int]


MAX_TRANSMISSIONS = 8_000_000  # about 2.4 GiB at their peak (320 bytes each); a ring allgather on 2,048 ranks is 4.2 M
LIMIT_VARIABLE = "COMMCOST_MAX_TRANSMISSIONS"  # the environment variable that sets another limit
# a pricing's peak memory per transmission (arrays, the placed schedule, the timeline): 234 to 311 bytes measured
# by tracemalloc for Hockney and LogGP pricings of 1-2 M transmissions (bcast pipeline, ring allgather and
# allreduce on 1,024 ranks), rounded up
BYTES_PER_TRANSMISSION = 320
BYTES_PER_EDGE = 56  # a dependency edge while built: han's reduce on 1,024 ranks, 13.2 M edges, 0.73 GB of its peak
# a transmission a builder lays out whole before a fold keeps one node's share of them (index, rank and byte
# arrays): 40 bytes measured by tracemalloc for the in-order binary reduce on 1,024 ranks (16.8 M), rounded up
BYTES_PER_BUILT = 48
MEMORY_VARIABLE = "COMMCOST_MAX_MEMORY"  # the environment variable that bounds a pricing's memory (a size: 1GiB)


def transmission_limit() -> int:
    """The most transmissions a schedule may have before it is refused up front (:class:`ScheduleTooLarge`):
    ``$COMMCOST_MAX_TRANSMISSIONS`` when set (an integer >= 1), else :data:`MAX_TRANSMISSIONS`, and no more
    than ``$COMMCOST_MAX_MEMORY`` allows at :data:`BYTES_PER_TRANSMISSION` each when that is set. The
    default keeps one schedule's pricing near 2.4 GiB; a larger machine may raise it."""
    text = os.environ.get(LIMIT_VARIABLE, "").strip()
    limit = read_transmission_limit(text, LIMIT_VARIABLE) if text else MAX_TRANSMISSIONS
    memory = _memory_transmissions()
    return limit if memory is None else min(limit, memory)


def _memory_transmissions() -> int | None:
    """The transmissions ``$COMMCOST_MAX_MEMORY`` allows at :data:`BYTES_PER_TRANSMISSION` each, None when
    it is not set."""
    memory = os.environ.get(MEMORY_VARIABLE, "").strip()
    return read_memory_limit(memory, MEMORY_VARIABLE) // BYTES_PER_TRANSMISSION if memory else None


HELD_SCHEDULES = 4  # a fit holds every training point's schedule at once: this many times one schedule's limit


def held_limit() -> int:
    """The most transmissions a fit may hold over all its training points' schedules: what
    ``$COMMCOST_MAX_MEMORY`` allows at :data:`BYTES_PER_TRANSMISSION` each where it is set, else
    :data:`HELD_SCHEDULES` times one schedule's limit (:func:`transmission_limit`)."""
    memory = _memory_transmissions()
    return HELD_SCHEDULES * transmission_limit() if memory is None else memory


def read_memory_limit(text: str, where: str) -> int:
    """A memory bound as given (``where``: the variable or option that gave it): a size (``512MiB``, ``2GiB``,
    bytes) of at least one transmission's :data:`BYTES_PER_TRANSMISSION`."""
    from commcost.units import parse_nbytes

    try:
        nbytes = parse_nbytes(text.strip()[:40])
    except InputError:
        nbytes = -1
    if nbytes < BYTES_PER_TRANSMISSION:
        raise InputError(f"expected a size of at least {BYTES_PER_TRANSMISSION} bytes (one transmission priced), "
                         f"such as 512MiB or 2GiB, got {text[:40]!r}", where=where)
    return nbytes


def _peak(transmissions: int) -> str:
    """What pricing ``transmissions`` would take at its peak, for a refusal's message."""
    from commcost.units import format_nbytes

    return f"about {format_nbytes(transmissions * BYTES_PER_TRANSMISSION)} while priced"


def read_whole_number(text: str, where: str, least: int, what: str) -> int:
    """A whole number >= ``least`` as given in a variable or an option (``where`` names it;
    :func:`commcost.units.whole_number`); else one line, "expected ``what``"."""
    value = whole_number(text)
    if value is None or value < least:
        raise InputError(f"expected {what}, got {text.strip()[:40]!r}", where=where)
    return value


def read_transmission_limit(text: str, where: str) -> int:
    """A transmission limit as given (``where``: the variable or option that gave it): a whole number >= 1."""
    return read_whole_number(text, where, 1, "a whole number of transmissions >= 1")


def _successive(ids: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(later, earlier): each reception of ``ids`` (a :meth:`Recorder.receive_in_order` sequence) beside the
    one its receiver takes just before it, per receiver in the order given."""
    run = ids[np.argsort(dst[ids], kind="stable")]
    same = dst[run[1:]] == dst[run[:-1]]
    return run[1:][same], run[:-1][same]


class ScheduleTooLarge(InputError):
    """An algorithm's schedule would exceed the recorder's limit on transmissions."""


class Recorder:
    """Collects phases of transmissions for one :class:`Case`."""

    def __init__(self, case: Case, data: bool = False, limit: int | None = None, fold: int | None = None) -> None:
        """``fold``: record only ranks 0..fold-1's transmissions, receivers modulo ``fold``, each batch checked
        invariant under the shift of ranks by ``fold`` (:mod:`.rank_shift`; :class:`NotFoldable` if not);
        :attr:`placement_dst` then holds each built transmission's real receiver."""
        self.case = case
        self.data = data
        self.fold = fold
        self.placement_dst: np.ndarray | None = None
        self._real_dst: list[np.ndarray] = []
        self.limit = transmission_limit() if limit is None else limit
        self._count = 0
        self._names: list[str] = []
        self._posted: list[bool] = []
        self._src: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._nbytes: list[np.ndarray] = []
        self._phase: list[np.ndarray] = []
        self._combine: list[np.ndarray] = []
        self._payload: list[tuple[Range, ...]] = []
        # the collectives a composite runs one after another: first id of each, and where its explicit waits begin
        self._parts: list[int] = [0]
        self._explicit_from: list[int | None] = [None]
        self._waiter: list[np.ndarray] = []
        self._waited: list[np.ndarray] = []
        self._taken_after: list[np.ndarray] = []  # ordered receptions: (later, earlier) pairs of ids
        self._taken_before: list[np.ndarray] = []
        # single sends are gathered in lists and flushed as one batch
        self._one: tuple[list[int], list[int], list[float], list[bool]] = ([], [], [], [])

    @property
    def nphases(self) -> int:
        """Phases begun so far."""
        return len(self._names)

    @property
    def count(self) -> int:
        """Transmissions recorded so far: the id the next one gets."""
        return self._count + len(self._one[0])

    def dependencies(self) -> "Recorder":
        """From the next transmission on, what waits is said with :meth:`wait` (not derived from program
        order); each such transmission also waits for its sender's stepped program before it."""
        if self.fold:
            raise NotFoldable("waits stated explicitly")
        if self._explicit_from[-1] is None:
            self._explicit_from[-1] = self.count
        return self

    def next_collective(self) -> "Recorder":
        """The transmissions recorded from now on belong to the next collective of a composite (a reduce,
        then a bcast): MPI collectives are blocking, so each waits for its sender's every send and
        reception in the collectives before."""
        self._flush()
        if self.count > self._parts[-1]:
            self._parts.append(self.count)
            self._explicit_from.append(None)
        return self

    def wait(self, waiter: Any, waited: Any) -> "Recorder":
        """Transmission(s) ``waiter`` start only after ``waited`` completed (ids; arrays broadcast; entries
        of ``waited`` below 0 are skipped, so a "no such transmission" marker can stand in)."""
        w, d = (a.ravel() for a in np.broadcast_arrays(np.asarray(waiter, np.int64), np.asarray(waited, np.int64)))
        keep = d >= 0
        if not keep.all():
            w, d = w[keep], d[keep]
        if len(w):
            self.dependencies()
            self._waiter.append(w.copy())
            self._waited.append(d.copy())
        return self

    def receive_in_order(self, ids: Any) -> "Recorder":
        """The receivers of transmissions ``ids`` take them in the order given (blocking receives, each
        posted once the one before it completed; :mod:`commcost.schedule.schedule`): per receiver, each of
        its ids here is taken right after its previous one here. Ids below 0 are skipped. Without this a
        rank takes its receptions in order of arrival."""
        if self.fold:
            raise NotFoldable("receptions in a stated order")
        self._flush()
        ids = np.asarray(ids, np.int64).ravel()
        ids = ids[ids >= 0]
        if len(ids) > 1:
            self._taken_after.append(ids)
        return self

    def phase(self, name: str | None = None, mode: SendMode = SendMode.POSTED) -> "Recorder":
        """Begin a phase: a step of every rank that sends in it (``mode``: its sends posted together, or one
        after another); see the module docstring for what it waits for."""
        self._flush()
        self._names.append(name or f"step {len(self._names)}")
        self._posted.append(mode is SendMode.POSTED)
        return self

    def staged_sends(self, step: np.ndarray, src: np.ndarray, dst: np.ndarray, start: np.ndarray,
                     stop: np.ndarray, label: str, mode: SendMode = SendMode.POSTED,
                     combine: bool = False, names: Sequence[str] | None = None,
                     representatives: bool = False) -> np.ndarray:
        """Many phases in one batch: transmission i runs in phase ``step[i]`` of a run of new phases,
        one per distinct step in increasing order (named ``label step t``, or ``names[k]`` for the k-th
        distinct step; ``representatives``: in fold mode, the batch is only ranks 0..fold-1's sends of a
        batch its builder checked invariant under the shift, receivers as they are); within a phase and a
        sender, transmissions keep their order in the arrays. ``combine``: every transmission reduces
        into the receiver's data (see :mod:`.case`). Returns the id of each transmission, aligned with the arguments."""
        self._flush()
        step, src, dst, start, stop = (np.asarray(a, dtype=np.int64) for a in (step, src, dst, start, stop))
        if not len(step):
            return np.zeros(0, np.int64)
        if np.all(step[1:] >= step[:-1]):  # already in step order (one segment per edge): no sort
            order = np.arange(len(step))
            new = np.r_[True, step[1:] != step[:-1]]
            steps, local = step[new], np.cumsum(new) - 1
        else:
            steps, local = unique_inverse(step)
            order = np.argsort(local, kind="stable")
        first = len(self._names)
        self._names += [f"{label} step {t}" for t in steps.tolist()] if names is None else list(names)
        self._posted += [mode is SendMode.POSTED] * len(steps)
        src, dst, start, stop = src[order], dst[order], start[order], stop[order]
        base = self._count
        self._append(src, dst, np.maximum(stop - start, 0).astype(np.float64), np.full(len(src), combine),
                     phase=first + local[order], representatives=representatives)
        if self.data:
            self._payload.extend(((int(a), int(b)),) if b > a else () for a, b in zip(start, stop))
        ids = np.empty(len(order), np.int64)
        ids[order] = base + np.arange(len(order), dtype=np.int64)
        return ids

    def send(self, src: int, dst: int, ranges: Range | Sequence[Range], combine: bool = False) -> int:
        """One transmission from ``src`` to ``dst`` carrying the byte ranges ``ranges``; returns its id."""
        if not self._names:
            self.phase()
        me = self.count
        if ranges and isinstance(ranges[0], (int, np.integer)):
            ranges = (ranges,)  # type: ignore[assignment]
        spans = tuple((int(a), int(b)) for a, b in ranges if b > a)  # type: ignore[misc]
        src_l, dst_l, nb_l, comb_l = self._one
        src_l.append(int(src))
        dst_l.append(int(dst))
        nb_l.append(float(sum(b - a for a, b in spans)))
        comb_l.append(bool(combine))
        if self.data:
            self._payload.append(spans)
        return me

    def sends(self, src: Any, dst: Any, start: Any, stop: Any, combine: bool = False) -> np.ndarray:
        """A batch of transmissions, each carrying the one range ``[start[i], stop[i])`` (scalars broadcast);
        returns their ids."""
        if not self._names:
            self.phase()
        self._flush()
        src, dst, start, stop = (a.ravel() for a in np.broadcast_arrays(
            *(np.asarray(x, dtype=np.int64) for x in (src, dst, start, stop))))
        base = self._count
        self._append(src, dst, np.maximum(stop - start, 0).astype(np.float64), np.full(len(src), combine))
        if self.data:
            self._payload.extend(((int(a), int(b)),) if b > a else () for a, b in zip(start, stop))
        return base + np.arange(len(src), dtype=np.int64)

    def embed(self, part: CollectiveSchedule, ranks: np.ndarray, offset: Any = 0, label: str = "") -> np.ndarray:
        """Record another collective's schedule as run by ``ranks`` (its rank i is ``ranks[i]`` here) on
        the bytes from ``offset`` of this collective's buffer: its transmissions, its phases (named
        ``label`` + its names) and its waits, as explicit dependencies (a sub-communicator's collective
        inside a hierarchical one). ``ranks`` may be a matrix: one copy per row, all in the same phases,
        ``offset`` then a scalar or one per row. Returns the ids its transmissions get here, copy by copy
        in its order (a matrix like ``ranks``' rows)."""
        s = part.schedule
        ranks = np.atleast_2d(np.asarray(ranks, np.int64))
        copies, n = len(ranks), s.ntransmissions
        self.dependencies()
        self._flush()
        if not n or not copies:
            return np.zeros((copies, 0), np.int64)
        first = len(self._names)
        starts = np.searchsorted(s.phase, np.arange(s.nphases))
        self._names += [f"{label}{name}" for name in s.phase_names]
        self._posted += np.asarray(s.posted, bool)[np.minimum(starts, n - 1)].tolist()
        base = self._count
        self._append(ranks[:, s.src].ravel(), ranks[:, s.dst].ravel(), np.tile(np.asarray(s.nbytes, np.float64), copies),
                     np.tile(np.asarray(part.combine, bool), copies), phase=np.tile(first + np.asarray(s.phase, np.int64), copies))
        if self.data:
            if part.payload is None:
                raise ValueError("embedding in a data build needs a part built with data=True")
            for shift in np.broadcast_to(np.asarray(offset, np.int64), (copies,)).tolist():
                self._payload.extend(tuple((a + shift, b + shift) for a, b in spans) for spans in part.payload)
        ids = base + np.arange(copies * n, dtype=np.int64).reshape(copies, n)
        if s.after_ptr is not None:
            waiter = np.repeat(np.arange(n, dtype=np.int64), np.diff(s.after_ptr))
            self.wait(ids[:, waiter], ids[:, np.asarray(s.after_idx, np.int64)])
        if s.recv_prev is not None:
            later = np.flatnonzero(s.recv_prev >= 0)
            self._taken_before.append(np.stack([ids[:, later].ravel(), ids[:, s.recv_prev[later]].ravel()]))
        return ids

    def reserve(self, count: int, why: str = "", whole: bool = True) -> None:
        """Refuse up front a schedule that will record at least ``count`` more transmissions than the limit
        allows (before its arrays are built: a segmented pipeline's are segments x edges long). Folded, one
        node's share of them is recorded, but a builder that lays out all ``count`` first (``whole``; not one
        that builds the representatives alone) needs them in memory for a while: at :data:`BYTES_PER_BUILT`
        each, no more than the limit's memory."""
        if self.fold and whole and count * BYTES_PER_BUILT > self.limit * BYTES_PER_TRANSMISSION:
            from commcost.units import format_nbytes

            raise self._too_large(
                f"would lay out {count:,} transmissions before its fold keeps one "
                f"node's share (about {format_nbytes(count * BYTES_PER_BUILT)} while built"
                f"{f'; {why}' if why else ''}); expected fewer ranks, larger segments, a closed-form model, or a "
                f"larger --max-transmissions or --max-memory")
        if self.fold:  # one node's share of them
            count = count * self.fold // max(self.case.nprocs, 1)
        if self.count + count > self.limit:
            raise self._too_large(
                f"would exceed {self.limit:,} transmissions ({_peak(self.limit)}"
                f"{f'; {why}' if why else ''}); expected fewer ranks, larger segments, a closed-form model, or a "
                f"larger --max-transmissions or --max-memory")

    def _too_large(self, why: str) -> ScheduleTooLarge:
        """The refusal of this recording: which collective, size and ranks, then ``why``."""
        return ScheduleTooLarge(f"the schedule of this {self.case.collective.value} of {self.case.nbytes:,} bytes "
                                f"on {self.case.nprocs:,} ranks {why}")

    def _append(self, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, combine: np.ndarray,
                phase: np.ndarray | None = None, representatives: bool = False) -> None:
        if representatives and not self.fold:
            raise ValueError("a batch of representatives outside fold mode")
        if self.fold and len(src):
            steps = np.full(len(src), len(self._names) - 1, dtype=np.int64) if phase is None else phase
            if representatives:  # checked by its builder: only that it is one node's share, no rank to itself
                if np.any(src >= self.fold) or np.any((dst - src) % self.fold == 0):
                    raise NotFoldable("representatives that are not")
            elif not shift_invariant(src, dst, nbytes, combine, steps, self.case.nprocs, self.fold):
                raise NotFoldable("a batch that the shift of ranks does not map onto itself")
            keep = src < self.fold
            src, real, nbytes, combine = src[keep], dst[keep], nbytes[keep], combine[keep]
            phase = steps[keep]
            self._real_dst.append(real)
            dst = real % self.fold
        self._count += len(src)
        if self._count > self.limit:
            raise self._too_large(
                f"exceeds {self.limit:,} transmissions ({_peak(self.limit)}); "
                f"expected fewer ranks, or a closed-form model")
        if len(src):
            self._src.append(src)
            self._dst.append(dst)
            self._nbytes.append(nbytes)
            self._phase.append(np.full(len(src), len(self._names) - 1, dtype=np.int64) if phase is None else phase)
            self._combine.append(combine)

    def _flush(self) -> None:
        src_l, dst_l, nb_l, comb_l = self._one
        if src_l:
            self._append(np.array(src_l, dtype=np.int64), np.array(dst_l, dtype=np.int64),
                         np.array(nb_l, dtype=np.float64), np.array(comb_l, dtype=bool))
            self._one = ([], [], [], [])

    def _program_waits(self, phase: np.ndarray, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                       combine: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The waits not stated with :meth:`wait`: program order within each collective of the recording,
        and, from one collective to the next, every operation of the sender in the ones before. Builds for
        the data-flow checker (``data``) name every posted transmission waited for (the checker lets a
        send forward only what its ancestors delivered); pricing builds, per peer, the last and the
        largest, which end no earlier (:func:`commcost.schedule.program_order.program_order`)."""
        posted = np.array(self._posted, dtype=bool)
        bounds = self._parts + [self.count]
        waiter: list[np.ndarray] = []
        waited: list[np.ndarray] = []
        for q, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            explicit = self._explicit_from[q]
            # folded, two peers may be one: every reception waited for is named (as for the checker)
            w, d = program_order(phase[a:b], posted, src[a:b], dst[a:b], (b if explicit is None else explicit) - a,
                                 nbytes[a:b], combine[a:b], compress=not self.data and not self.fold)
            waiter.append(w + a)
            waited.append(d + a)
            if q:  # each of this collective's sends waits for its sender's operations in the earlier ones
                received = None if self.data else self._last_taken(a, dst)
                rank, _ = own_operations(np.arange(a), src[:a], dst[:a], received)
                edges = int(np.bincount(rank, minlength=self.case.nprocs)[src[a:b]].sum())
                if edges > self.limit * BYTES_PER_TRANSMISSION // BYTES_PER_EDGE:
                    from commcost.units import format_nbytes

                    raise self._too_large(
                        f"would hold {edges:,} waits between its collectives (about "
                        f"{format_nbytes(edges * BYTES_PER_EDGE)} while built); expected fewer ranks, or a "
                        f"larger --max-transmissions or --max-memory")
                i, j = after_own(np.arange(a, b), src[a:b], np.arange(a), src[:a], dst[:a], received)
                waiter.append(i)
                waited.append(j)
        return waiter, waited

    def _last_taken(self, before: int, dst: np.ndarray) -> np.ndarray:
        """Mask over transmissions ``0 .. before - 1``: False for a reception its receiver takes before
        another one of them in a stated order (:meth:`receive_in_order`, an embedded part's order), which
        then ends no earlier; waiting for that later one is waiting for both."""
        keep = np.ones(before, bool)
        for ids in self._taken_after:
            keep[_successive(ids[ids < before], dst)[1]] = False
        for later, earlier in self._taken_before:
            keep[earlier[(later < before) & (earlier < before)]] = False
        return keep

    def _receive_order(self, order: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
        """``recv_prev`` of the built schedule (positions after ``order``) from :meth:`receive_in_order`'s
        sequences and the embedded parts' orders; None when every reception is taken in order of arrival."""
        later, earlier = [], []
        for ids in self._taken_after:
            after, before = _successive(ids, dst)
            later.append(after)
            earlier.append(before)
        for pair in self._taken_before:
            later.append(pair[0])
            earlier.append(pair[1])
        if not later:
            return None
        new_of_old = np.empty(len(order), np.int64)
        new_of_old[order] = np.arange(len(order), dtype=np.int64)
        prev = np.full(len(order), -1, np.int64)
        prev[new_of_old[np.concatenate(later)]] = new_of_old[np.concatenate(earlier)]
        return prev

    def build(self, algorithm: str, params: dict[str, Any]) -> CollectiveSchedule:
        """The finished schedule; phases that stayed empty are dropped."""
        self._flush()

        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        phase = cat(self._phase, np.int64)
        used = np.unique(phase)
        renumber = np.full(max(len(self._names), 1), -1, dtype=np.int64)
        renumber[used] = np.arange(len(used))
        phase = renumber[phase]
        order = np.argsort(phase, kind="stable")
        posted = np.array(self._posted, dtype=bool)[used][phase] if len(used) else np.zeros(0, bool)
        after_ptr = after_idx = None
        src, dst = cat(self._src, np.int64), cat(self._dst, np.int64)
        if len(src):
            w, d = self._program_waits(cat(self._phase, np.int64), src, dst, cat(self._nbytes, np.float64),
                                       cat(self._combine, bool))
            after_ptr, after_idx = relabel_dependencies(order, np.concatenate(w + self._waiter),
                                                        np.concatenate(d + self._waited),
                                                        f"{self.case.collective.value} {algorithm}")
        if self.fold:
            self.placement_dst = cat(self._real_dst, np.int64)[order]
        schedule = Schedule(
            self.fold or self.case.nprocs, src[order], dst[order],
            cat(self._nbytes, np.float64)[order], phase[order], posted[order],
            tuple(self._names) if len(used) == len(self._names) else tuple([self._names[k] for k in used.tolist()]),
            name=f"{self.case.collective.value} {algorithm}",
            combine=cat(self._combine, bool)[order],
            after_ptr=after_ptr, after_idx=after_idx, recv_prev=self._receive_order(order, dst),
            checked=self.data,  # the checker's builds are validated; pricing builds come from the same code
        )
        payload = [self._payload[i] for i in order] if self.data else None
        return CollectiveSchedule(schedule, self.case, algorithm, dict(params), payload,
                                  cat(self._combine, bool)[order])
