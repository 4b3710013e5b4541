"""Schedules: transmissions (src, dst, nbytes) grouped into phases that run one after another.

Inside a phase every rank's sends are either a *sequence* (blocking sends,
each starting when the previous one ends) or *posted* together (Isend +
Waitall: all start at once). All ranks start a phase together; a phase ends
when its last transmission ends. A phase may be *repeated*: run ``repeat``
times in a row with the same transmissions (the P - 1 equal steps of a ring
allgather), stored once. The arrays are flat so models can price a schedule
with numpy, without Python loops over ranks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from commcost.errors import InputError


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
        if np.any(np.diff(self.phase) < 0):
            raise ValueError("transmissions must be ordered by phase")

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
                        checked=False)  # a valid schedule with sizes scaled by a factor >= 0 stays valid

    def in_units(self, nbytes: float) -> float:
        """A byte count expressed in the schedule's display unit."""
        return nbytes / self.unit.nbytes


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
        if not self._phase_names:
            self.phase()
        self._src.append(src)
        self._dst.append(dst)
        self._nbytes.append(nbytes * self.unit.nbytes)
        self._phase.append(len(self._phase_names) - 1)
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
        )
