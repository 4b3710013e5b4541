"""Schedules: transmissions (src, dst, nbytes), in phases or with dependencies.

A schedule is one of two kinds.

*Phased* (no dependencies): phases run one after another with a barrier
between them. Inside a phase every rank's sends are either a *sequence*
(blocking sends, each starting when the previous one ends) or *posted*
together (Isend + Waitall: all start at once). All ranks start a phase
together; a phase ends when its last transmission ends. A phase may be
*repeated*: run ``repeat`` times in a row with the same transmissions (the
P - 1 equal steps of a ring allgather), stored once. This is exact where the
program really steps in lockstep (paper 000's SUMMA and Wave2D iterations)
and the compact form of regular steps.

*Dependency* schedules (``after`` given): no barriers. Transmission i may
start once every transmission listed in ``after(i)`` has completed, where
"completed" is what the sender of i can observe (in the spirit of
LogGOPSim's GOAL programs, Hoefler et al. 2010):

* a j with ``dst[j] == src[i]`` has been *received* by the sender of i
  (receive-before-forward, a ``Recv`` or the receive half of a
  ``Sendrecv``);
* a j with ``src[j] == src[i]`` has been *sent*: the blocking send, or the
  ``Wait``/``Waitall`` over posted sends, has returned (a segment window).

A rank can only wait for its own operations, so every j is one of the two.
Dependencies point backwards in the arrays (``j < i``): array order is a
topological order, and within one sender it is the program order in which
the rank issues its sends. Phases are then only labels (for reports), and
``repeat`` is 1 everywhere. How a sender's sends share its processor or a
channel is the model's business (Hockney and LogGP inject one message at a
time in program order; tau-Lop lets started transmissions share the
channel).

How a rank *receives* is said too. A receiver takes its messages one at a
time; by default in order of arrival (receives posted together, an
``Irecv`` per peer then a ``Waitall``: whichever comes first is taken
first). A dependency schedule may order some receptions (``recv_prev``):
``recv_prev[i] = j`` says the receiver takes i only after it has taken j
(blocking receives in a fixed order, as Open MPI's linear reduce takes rank
P-1's vector, then P-2's, ...), j an earlier reception of the same rank;
-1 leaves i to the order of arrival. Each reception follows at most one
other: the ordered receptions of a rank form chains.

The arrays are flat so models can price a schedule with numpy, without
Python loops over ranks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from commcost.errors import InputError
from commcost.schedule.rows import NO_RELABEL, csr_rows


class SendMode(enum.Enum):
    """How one rank's sends inside a phase relate to each other."""

    SEQUENCE = "sequence"  # blocking sends, one after another (tau-Lop "+")
    POSTED = "posted"  # non-blocking sends posted together (tau-Lop "||")


@dataclass(frozen=True)
class SizeUnit:
    """The unit sizes are shown in (paper 000 counts SUMMA in blocks, Wave2D in doubles)."""

    name: str = "B"
    nbytes: int = 1


@dataclass(frozen=True, eq=False)
class Schedule:
    """Flat arrays, one entry per transmission, in send order within each (phase, src).

    ``posted[i]`` tells whether the sender of transmission i posts its sends
    of that phase together (True) or sends them in sequence (False).
    ``repeat[k]`` (default 1) is how many times phase k runs in a row; the
    arrays hold its transmissions once. ``combine[i]`` (default False) marks
    a transmission its receiver reduces into its own data (reduce,
    allreduce), which costs computation (:mod:`commcost.models.reduction`).
    """

    nprocs: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    phase: np.ndarray
    posted: np.ndarray
    phase_names: tuple[str, ...]
    name: str = "schedule"
    unit: SizeUnit = field(default_factory=SizeUnit)
    repeat: np.ndarray | None = None
    combine: np.ndarray | None = None
    after_ptr: np.ndarray | None = None
    after_idx: np.ndarray | None = None
    recv_prev: np.ndarray | None = None
    checked: bool = field(default=True, repr=False, compare=False)  # False: built by trusted code, skip validate

    def __post_init__(self) -> None:
        repeat = np.ones(self.nphases, np.int64) if self.repeat is None else self.repeat
        object.__setattr__(self, "repeat", np.ascontiguousarray(repeat, dtype=np.int64))
        combine = np.zeros(len(self.src), bool) if self.combine is None else self.combine
        object.__setattr__(self, "combine", np.ascontiguousarray(combine, dtype=bool))
        for attr, dtype in (("src", np.int64), ("dst", np.int64), ("nbytes", np.float64),
                            ("phase", np.int64), ("posted", bool)):
            object.__setattr__(self, attr, np.ascontiguousarray(getattr(self, attr), dtype=dtype))
        n = len(self.src)
        if not all(len(getattr(self, a)) == n for a in ("dst", "nbytes", "phase", "posted", "combine")):
            raise ValueError("schedule arrays must all have one entry per transmission")
        if (self.after_ptr is None) != (self.after_idx is None):
            raise ValueError("after_ptr and after_idx come together")
        if self.after_ptr is not None:
            object.__setattr__(self, "after_ptr", np.ascontiguousarray(self.after_ptr, dtype=np.int64))
            object.__setattr__(self, "after_idx", np.ascontiguousarray(self.after_idx, dtype=np.int64))
            if self.after_ptr.shape != (n + 1,) or self.after_ptr[0] != 0 or self.after_ptr[-1] != len(self.after_idx) \
                    or np.any(np.diff(self.after_ptr) < 0):
                raise ValueError("after_ptr must be n + 1 non-decreasing offsets into after_idx")
        if self.recv_prev is not None:
            object.__setattr__(self, "recv_prev", np.ascontiguousarray(self.recv_prev, dtype=np.int64))
            if self.recv_prev.shape != (n,):
                raise ValueError("recv_prev must have one entry per transmission")
            if not np.any(self.recv_prev >= 0):
                object.__setattr__(self, "recv_prev", None)  # every reception in order of arrival
        if self.checked:
            self.validate()

    @property
    def ntransmissions(self) -> int:
        """Number of transmissions in all phases."""
        return len(self.src)

    @property
    def transmissions_run(self) -> int:
        """Number of transmissions that run, repeated phases counted as often as they run."""
        return int(self.repeat[self.phase].sum())

    @property
    def phases_run(self) -> int:
        """Number of phases that run, repeated phases counted as often as they run."""
        return int(self.repeat.sum())

    @property
    def has_dependencies(self) -> bool:
        """Whether transmissions wait for named transmissions (no phase barriers)."""
        return self.after_ptr is not None

    def waiter_of_edge(self) -> np.ndarray:
        """For each entry of ``after_idx``, the transmission that waits (empty for a phased schedule)."""
        if self.after_ptr is None:
            return np.zeros(0, np.int64)
        return np.repeat(np.arange(self.ntransmissions, dtype=np.int64), np.diff(self.after_ptr))

    def after(self, i: int) -> np.ndarray:
        """The transmissions that transmission ``i`` waits for (empty for a phased schedule)."""
        if self.after_ptr is None:
            return np.zeros(0, np.int64)
        return self.after_idx[self.after_ptr[i]:self.after_ptr[i + 1]]

    @property
    def nphases(self) -> int:
        """Number of phases."""
        return len(self.phase_names)

    def validate(self) -> None:
        """Check ranks, sizes and phases; raise InputError naming the first bad transmission."""
        if self.nprocs < 1:
            raise InputError(f"nprocs must be >= 1, got {self.nprocs}", where="nprocs")
        checks = (
            ((self.src < 0) | (self.src >= self.nprocs), f"src must be a rank in 0..{self.nprocs - 1}"),
            ((self.dst < 0) | (self.dst >= self.nprocs), f"dst must be a rank in 0..{self.nprocs - 1}"),
            (self.src == self.dst, "src and dst must differ (a rank does not send to itself)"),
            (~np.isfinite(self.nbytes) | (self.nbytes < 0), "nbytes must be a finite size >= 0"),
            ((self.phase < 0) | (self.phase >= max(self.nphases, 1)), "phase index out of range"),
        )
        if self.repeat.shape != (self.nphases,) or np.any(self.repeat < 1):
            raise InputError(f"expected one repeat count >= 1 per phase, got {self.repeat.tolist()}",
                             where="repeat")
        for bad, expected in checks:
            if np.any(bad):
                i = int(np.argmax(bad))
                raise InputError(
                    f"transmission {self._describe(i)}: {expected}",
                    where=f"phases[{self.phase[i]}]" if 0 <= self.phase[i] < self.nphases else None,
                )
        if self.after_ptr is not None:
            self._validate_dependencies()
        elif np.any(np.diff(self.phase) < 0):
            raise ValueError("transmissions must be ordered by phase")
        if self.recv_prev is not None:
            self._validate_receive_order()

    def _validate_receive_order(self) -> None:
        """Ordered receptions: in a dependency schedule, each after an earlier reception of its receiver,
        and no reception followed by two."""
        if self.after_ptr is None:
            raise InputError("ordered receptions (recv_prev) need a dependency schedule; expected waits "
                             "(after) or no receive order", where="recv_prev")
        i = np.flatnonzero(self.recv_prev >= 0)
        j = self.recv_prev[i]
        bad = (j >= i) | (self.dst[np.minimum(j, self.ntransmissions - 1)] != self.dst[i])
        if np.any(bad):
            k = int(i[np.argmax(bad)])
            raise InputError(f"transmission {self._describe(k)} is received after #{int(self.recv_prev[k])}; "
                             "expected an earlier transmission to the same receiver", where=f"recv_prev[{k}]")
        if len(np.unique(j)) != len(j):
            twice = int(np.bincount(j).argmax())
            raise InputError(f"two receptions are taken right after #{twice}; expected each reception to "
                             "follow at most one other (a chain per receiver)", where="recv_prev")

    def _validate_dependencies(self) -> None:
        """Dependencies point backwards and name an earlier send or receive of the waiting sender."""
        if np.any(self.repeat != 1):
            raise InputError("a schedule with dependencies runs every transmission once; expected repeat = 1",
                             where="repeat")
        waiter, waited = self.waiter_of_edge(), self.after_idx
        bad = (waited < 0) | (waited >= waiter)
        if np.any(bad):
            k = int(np.argmax(bad))
            raise InputError(f"transmission {self._describe(int(waiter[k]))} waits for #{int(waited[k])}; "
                             "expected an earlier transmission", where=f"after[{int(waiter[k])}]")
        local = (self.dst[waited] == self.src[waiter]) | (self.src[waited] == self.src[waiter])
        if not np.all(local):
            k = int(np.argmin(local))
            raise InputError(
                f"transmission {self._describe(int(waiter[k]))} waits for {self._describe(int(waited[k]))}, "
                "which its sender neither receives nor sends; expected a transmission to or from its sender",
                where=f"after[{int(waiter[k])}]")

    def _describe(self, i: int) -> str:
        return f"#{i} (src {self.src[i]}, dst {self.dst[i]}, nbytes {self.nbytes[i]:g})"

    def phase_slices(self) -> list[slice]:
        """The range of transmissions of each phase, in phase order."""
        bounds = np.searchsorted(self.phase, np.arange(self.nphases + 1))
        return [slice(int(bounds[k]), int(bounds[k + 1])) for k in range(self.nphases)]

    def scaled(self, factor: float) -> "Schedule":
        """The same schedule with every size multiplied by ``factor`` (>= 0)."""
        return Schedule(self.nprocs, self.src, self.dst, self.nbytes * factor, self.phase,
                        self.posted, self.phase_names, self.name, self.unit, self.repeat, self.combine,
                        self.after_ptr, self.after_idx, self.recv_prev, checked=False)  # a valid schedule with sizes scaled by a factor >= 0 stays valid

    def without_dependencies(self) -> "Schedule":
        """The same transmissions as a phased schedule: a barrier between phases instead of the
        dependencies and the receive order (what commcost priced before schedules carried dependencies; the
        baseline of the benchmarks). Raises InputError if the phases are not in order."""
        if self.after_ptr is None:
            return self
        return Schedule(self.nprocs, self.src, self.dst, self.nbytes, self.phase, self.posted, self.phase_names,
                        self.name, self.unit, self.repeat, self.combine)

    def in_units(self, nbytes: float) -> float:
        """A byte count expressed in the schedule's display unit."""
        return nbytes / self.unit.nbytes


def dependency_rows(n: int, waiter: np.ndarray, waited: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(after_ptr, after_idx)`` of ``n`` transmissions from edges ``waiter[k]`` waits for ``waited[k]``
    (duplicates dropped; each row sorted; :func:`.rows.csr_rows`)."""
    ptr, idx, _ = csr_rows(n, np.ascontiguousarray(waiter, np.int64), np.ascontiguousarray(waited, np.int64),
                           NO_RELABEL)
    return ptr, idx


def relabel_dependencies(order: np.ndarray, waiter: np.ndarray, waited: np.ndarray,
                         what: str = "schedule") -> tuple[np.ndarray, np.ndarray]:
    """Dependency rows after reordering transmissions: new position k holds old transmission ``order[k]``.

    Raises ValueError when an edge would point forwards (the builder put a
    transmission before one it waits for)."""
    n = len(order)
    new_of_old = np.empty(n, np.int64)
    new_of_old[order] = np.arange(n, dtype=np.int64)
    waiter, waited = np.ascontiguousarray(waiter, np.int64), np.ascontiguousarray(waited, np.int64)
    ptr, idx, bad = csr_rows(n, waiter, waited, new_of_old)
    if bad >= 0:
        raise ValueError(f"{what}: transmission {int(waiter[bad])} waits for {int(waited[bad])}, which does not "
                         "come before it (a dependency must point to an earlier phase, or earlier in the same one)")
    return ptr, idx


class ScheduleBuilder:
    """Builds a :class:`Schedule` phase by phase: ``b.phase("pbc"); b.send(1, 0, 134)``."""

    def __init__(self, nprocs: int, name: str = "schedule", unit: SizeUnit | None = None) -> None:
        self.nprocs = nprocs
        self.name = name
        self.unit = unit or SizeUnit()
        self._phase_names: list[str] = []
        self._default_mode: list[SendMode] = []
        self._repeat: list[int] = []
        self._modes: list[dict[int, SendMode]] = []
        self._src: list[int] = []
        self._dst: list[int] = []
        self._nbytes: list[float] = []
        self._phase: list[int] = []
        self._waiter: list[int] = []
        self._waited: list[int] = []

    def phase(self, name: str | None = None, mode: SendMode = SendMode.SEQUENCE,
              repeat: int = 1) -> "ScheduleBuilder":
        """Start a new phase (run ``repeat`` times); its sends run after every send of the previous phase."""
        self._phase_names.append(name or f"phase {len(self._phase_names)}")
        self._default_mode.append(mode)
        self._repeat.append(repeat)
        self._modes.append({})
        return self

    def set_mode(self, rank: int, mode: SendMode) -> "ScheduleBuilder":
        """Set how ``rank`` sends in the current phase."""
        self._modes[-1][rank] = mode
        return self

    def send(self, src: int, dst: int, nbytes: float) -> "ScheduleBuilder":
        """Add a transmission to the current phase, after ``src``'s earlier sends."""
        self.add(src, dst, nbytes)
        return self

    def add(self, src: int, dst: int, nbytes: float, after: Sequence[int] = ()) -> int:
        """Add a transmission to the current phase; returns its id (insertion order, from 0).

        ``after``: ids of transmissions it waits for (a receive of its sender or
        an earlier send of it). Any dependency makes the schedule a dependency
        schedule (no phase barriers)."""
        if not self._phase_names:
            self.phase()
        me = len(self._src)
        self._src.append(src)
        self._dst.append(dst)
        self._nbytes.append(nbytes * self.unit.nbytes)
        self._phase.append(len(self._phase_names) - 1)
        for j in after:
            self._waiter.append(me)
            self._waited.append(int(j))
        return me

    def wait(self, waiter: int, waited: int) -> "ScheduleBuilder":
        """Transmission ``waiter`` starts only after ``waited`` has completed (see the module docstring)."""
        self._waiter.append(int(waiter))
        self._waited.append(int(waited))
        return self

    def build(self) -> Schedule:
        """The schedule, with transmissions grouped by phase (send order kept)."""
        src = np.array(self._src, dtype=np.int64)
        phase = np.array(self._phase, dtype=np.int64)
        order = np.argsort(phase, kind="stable")
        posted = np.array(
            [self._modes[p].get(s, self._default_mode[p]) is SendMode.POSTED for s, p in zip(src, phase)],
            dtype=bool,
        )
        after_ptr = after_idx = None
        if self._waiter:
            after_ptr, after_idx = relabel_dependencies(order, np.array(self._waiter), np.array(self._waited),
                                                        self.name)
        return Schedule(
            nprocs=self.nprocs,
            src=src[order],
            dst=np.array(self._dst, dtype=np.int64)[order],
            nbytes=np.array(self._nbytes, dtype=np.float64)[order],
            phase=phase[order],
            posted=posted[order] if len(posted) else posted,
            phase_names=tuple(self._phase_names),
            name=self.name,
            unit=self.unit,
            repeat=np.array(self._repeat, dtype=np.int64),
            after_ptr=after_ptr,
            after_idx=after_idx,
        )
