"""A decision table: which algorithm (with which segment size, fan-out or radix) for each (P, n).

This is what model-based selection produces, what Open MPI's fixed decision
functions are rewritten as, and what the tuning-file writers read (Open MPI
coll/tuned dynamic rules, MPICH's selection JSON). A :class:`Selection`
covers one collective of one library as rectangles of communicator sizes x
message sizes (:class:`Rule`), each with its :class:`Choice`.

Message sizes are bytes as the library counts them for its decision
(``dtype size x count``; for bcast the whole message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from commcost.collectives import Algorithm, Collective


@dataclass(frozen=True)
class Choice:
    """An algorithm and the values of its tunables (``segsize``, ``fanout``, ``radix``, ...)."""

    algorithm: Algorithm
    params: Mapping[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``name`` or ``name(segsize=8192)``: the algorithm and the tunables that differ from its defaults."""
        defaults = {p.name: p.default for p in self.algorithm.params}
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()) if defaults.get(k) != v)
        return f"{self.algorithm.name}({extra})" if extra else self.algorithm.name

    def key(self) -> tuple:
        """Hashable identity: the algorithm's registry key and the sorted tunables."""
        return (self.algorithm.key, tuple(sorted(self.params.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Choice) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())


@dataclass(frozen=True)
class Rule:
    """``choice`` for every communicator size in [procs_lo, procs_hi] and message size in
    [nbytes_lo, nbytes_hi] (bytes), bounds included."""

    procs_lo: int
    procs_hi: int
    nbytes_lo: int
    nbytes_hi: int
    choice: Choice

    def covers(self, nprocs: int, nbytes: int) -> bool:
        """Whether (nprocs, nbytes) falls in this rectangle."""
        return self.procs_lo <= nprocs <= self.procs_hi and self.nbytes_lo <= nbytes <= self.nbytes_hi


@dataclass(frozen=True)
class Selection:
    """The rules of one collective for one library, sorted by (procs_lo, nbytes_lo), not overlapping.

    ``source`` says where the decisions come from (``model taulop``,
    ``Open MPI 5.0 fixed decision``) for reports and file headers.
    """

    collective: Collective
    library: str
    rules: tuple[Rule, ...]
    source: str = ""

    def choice(self, nprocs: int, nbytes: int) -> Choice | None:
        """The decision for one call, or None outside every rule."""
        for rule in self.rules:
            if rule.covers(nprocs, nbytes):
                return rule.choice
        return None

    def procs_bands(self) -> list[tuple[int, int]]:
        """The distinct communicator-size ranges, in order."""
        return sorted({(r.procs_lo, r.procs_hi) for r in self.rules})

    def rules_for(self, procs_lo: int, procs_hi: int) -> list[Rule]:
        """The rules of one communicator-size band, by message size."""
        return sorted((r for r in self.rules if (r.procs_lo, r.procs_hi) == (procs_lo, procs_hi)),
                      key=lambda r: r.nbytes_lo)


def compress(collective: Collective, library: str, procs: Iterable[int], sizes: Iterable[int],
             choices: list[list[Choice | None]], source: str = "") -> Selection:
    """Rules from a grid of decisions ``choices[p][m]`` at process counts ``procs`` and sizes ``sizes``.

    Along message sizes, neighbouring sizes with the same choice merge; a
    rule reaches from its first size up to just below the next rule's first
    size (the last one to the largest size of the grid), so every size
    between grid points takes the decision of the grid point below it, as
    the libraries' rule files read. Process counts whose rows are equal
    merge the same way into bands. A None choice writes no rule: the
    library's own decision stays there (a gap, which every tuning file
    writer fills with the library's default).
    """
    procs, sizes = list(procs), list(sizes)
    rows: list[list[tuple[int, int, Choice | None]]] = []
    for p_index in range(len(procs)):
        runs: list[tuple[int, int, Choice | None]] = []
        for m_index, nbytes in enumerate(sizes):
            choice = choices[p_index][m_index]
            if runs and runs[-1][2] == choice:
                continue
            if runs:
                runs[-1] = (runs[-1][0], nbytes - 1, runs[-1][2])
            runs.append((nbytes, sizes[-1], choice))
        rows.append(runs)
    rules: list[Rule] = []
    start = 0
    for p_index in range(1, len(procs) + 1):
        if p_index < len(procs) and rows[p_index] == rows[start]:
            continue
        hi = procs[p_index] - 1 if p_index < len(procs) else procs[-1]
        rules += [Rule(procs[start], hi, lo, up, c) for lo, up, c in rows[start] if c is not None]
        start = p_index
    return Selection(collective, library, tuple(rules), source)
