"""What a collective algorithm is asked to do, and the schedule it answers with.

Buffers, in bytes, that the data-flow checker (:mod:`.dataflow`) tracks:

* bcast: the message ``[0, n)``, held by the root at the start; every rank
  must end holding all of it.
* scatter: ``[0, P n)``, held by the root; rank r must end with block r,
  ``[r n, (r+1) n)``.
* gather: rank r starts with block r; the root must end with ``[0, P n)``.
* allgather: rank r starts with block r; every rank must end with all.
* alltoall: ``[0, P P n)``; block (i, j) = ``[(i P + j) n, (i P + j + 1) n)``
  is what rank i sends to rank j. Rank i starts with blocks (i, *), must end
  with blocks (*, i).
* reduce / allreduce: ``[0, n)``; every rank starts with its own
  contribution to every byte; a transmission that *combines* adds the
  sender's partial result into the receiver's, one that does not replaces
  the receiver's bytes with the sender's. The root (reduce) or every rank
  (allreduce) must end with every byte reduced over all P contributions,
  each counted exactly once.
* reduce_scatter: ``[0, P n)``, reduced as for reduce; rank r must end
  with block r, ``[r n, (r+1) n)``, reduced over all P contributions
  (``MPI_Reduce_scatter`` with every ``rcounts[i] = n``).

``n`` is :attr:`Case.nbytes`: the message (bcast, reduce, allreduce) or
one rank's block (scatter, gather, allgather, alltoall, reduce_scatter), as MPI's count
times the datatype's size.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from commcost.errors import InputError
from commcost.schedule.schedule import Schedule


class Collective(enum.Enum):
    """The MPI collective an algorithm implements."""

    BCAST = "bcast"
    SCATTER = "scatter"
    GATHER = "gather"
    ALLGATHER = "allgather"
    REDUCE = "reduce"
    ALLREDUCE = "allreduce"
    ALLTOALL = "alltoall"
    REDUCE_SCATTER = "reduce_scatter"

    @property
    def rooted(self) -> bool:
        """Whether the collective has a root."""
        return self in (Collective.BCAST, Collective.SCATTER, Collective.GATHER, Collective.REDUCE)

    @property
    def size_meaning(self) -> str:
        """What a size ``n`` of this collective counts, as an axis title says it (the MPI count's meaning)."""
        if self in (Collective.SCATTER, Collective.GATHER, Collective.ALLGATHER, Collective.REDUCE_SCATTER):
            return "message size per rank (each rank's block; the buffer holds P blocks)"
        if self is Collective.ALLTOALL:
            return "message size per pair (the block each rank sends each other rank)"
        return "message size (the whole buffer)"

    def buffer_nbytes(self, nprocs: int, nbytes: int) -> int:
        """Size of the buffer the data-flow checker tracks (see the module docstring)."""
        if self in (Collective.SCATTER, Collective.GATHER, Collective.ALLGATHER, Collective.REDUCE_SCATTER):
            return nprocs * nbytes
        if self is Collective.ALLTOALL:
            return nprocs * nprocs * nbytes
        return nbytes


@dataclass(frozen=True)
class Case:
    """One call: the collective, the number of ranks, the root and the size ``n`` (bytes); ``element_bytes``:
    the bytes of one element of its datatype (the library's algorithms count elements, :func:`.registry.build`)."""

    collective: Collective
    nprocs: int
    nbytes: int
    root: int = 0
    element_bytes: int = 1

    def __post_init__(self) -> None:
        if self.nprocs < 1:
            raise InputError(f"the number of ranks must be >= 1, got {self.nprocs}", where="procs")
        if self.nbytes < 0:
            raise InputError(f"the message size must be >= 0 bytes, got {self.nbytes}", where="nbytes")
        if not 0 <= self.root < self.nprocs:
            raise InputError(f"the root must be a rank in 0..{self.nprocs - 1}, got {self.root}", where="root")
        if self.element_bytes < 1:
            raise InputError(f"an element has at least 1 byte, got {self.element_bytes}", where="element_bytes")


@dataclass(frozen=True)
class Param:
    """A tunable of an algorithm (segment size, fan-out, radix), with the library's default."""

    name: str
    default: int
    help: str
    minimum: int = 0


@dataclass(frozen=True, eq=False)
class CollectiveSchedule:
    """A schedule and what its transmissions carry.

    ``payload[i]`` is the tuple of ``(start, stop)`` byte ranges of the
    collective's buffer that transmission i carries (None when the schedule
    was built for pricing only); ``combine[i]`` says whether the receiver
    reduces them into its own data (reduce, allreduce) rather than storing
    them.
    """

    schedule: Schedule
    case: Case
    algorithm: str
    params: dict[str, Any]
    payload: list[tuple[tuple[int, int], ...]] | None
    combine: np.ndarray
