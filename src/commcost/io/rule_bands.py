"""A Selection as the libraries' tuning files see it: communicator-size bands of message-size steps.

Tuning files key their rules on lower bounds (Open MPI's classic rules: the
last communicator size <= P, then the last message size <= m) or on upper
bounds (MPICH: the first ``comm_size<=N`` / ``avg_msg_size<=M`` that holds).
A :class:`~commcost.selection.decision.Selection` is a set of inclusive
rectangles that may leave gaps. :func:`bands` cuts the plane of
communicator sizes >= 1 and message sizes >= 0 into bands of consecutive
communicator sizes that share one sequence of message-size steps; a step
whose choice is None is a place no rule of the Selection covers (a gap, or
beyond the Selection). Every writer starts from these bands, so each one
only decides what to write for a None step.
"""

from __future__ import annotations

from dataclasses import dataclass

from commcost.selection.decision import Choice, Rule, Selection


@dataclass(frozen=True)
class Step:
    """Message sizes ``[nbytes_lo, nbytes_hi]`` (None: no upper end) decided by ``choice`` (None: no rule)."""

    nbytes_lo: int
    nbytes_hi: int | None
    choice: Choice | None


@dataclass(frozen=True)
class Band:
    """Communicator sizes ``[procs_lo, procs_hi]`` (None: no upper end) and their message-size steps.

    The steps start at 0 bytes, follow each other without gaps and end
    with an unbounded step.
    """

    procs_lo: int
    procs_hi: int | None
    steps: tuple[Step, ...]

    @property
    def empty(self) -> bool:
        """Whether no rule of the Selection decides anything in this band."""
        return all(step.choice is None for step in self.steps)


def _steps(rules: list[Rule]) -> tuple[Step, ...]:
    """The message-size steps of rules that all cover one communicator size, gaps as None steps."""
    steps: list[Step] = []
    cursor = 0
    for rule in sorted(rules, key=lambda r: r.nbytes_lo):
        if rule.nbytes_lo > cursor:
            steps.append(Step(cursor, rule.nbytes_lo - 1, None))
        steps.append(Step(max(rule.nbytes_lo, cursor), rule.nbytes_hi, rule.choice))
        cursor = rule.nbytes_hi + 1
    steps.append(Step(cursor, None, None))
    merged: list[Step] = []
    for step in steps:
        if merged and merged[-1].choice == step.choice:
            merged[-1] = Step(merged[-1].nbytes_lo, step.nbytes_hi, step.choice)
        else:
            merged.append(step)
    return tuple(merged)


def bands(selection: Selection) -> list[Band]:
    """The Selection as bands covering every communicator size from 1 up (the last one unbounded).

    Neighbouring communicator sizes whose steps are equal share a band, so
    a Selection written by :func:`~commcost.selection.decision.compress`
    gives back its own bands, plus None bands for what it leaves out.
    """
    cuts = {1}
    for rule in selection.rules:
        cuts.update((max(rule.procs_lo, 1), rule.procs_hi + 1))
    edges = sorted(cuts)
    out: list[Band] = []
    for index, lo in enumerate(edges):
        hi = edges[index + 1] - 1 if index + 1 < len(edges) else None
        steps = _steps([r for r in selection.rules if r.procs_lo <= lo <= r.procs_hi])
        if out and out[-1].steps == steps:
            out[-1] = Band(out[-1].procs_lo, hi, steps)
        else:
            out.append(Band(lo, hi, steps))
    return out


def scaled(band: Band, factor: int) -> Band:
    """The band with message sizes times ``factor`` (Open MPI keys block collectives on P x block).

    Only sizes that are multiples of ``factor`` occur in the file's key, so
    a step ``[lo, hi]`` becomes ``[factor lo, factor hi + factor - 1]`` and
    the steps still tile every size.
    """
    steps = tuple(Step(s.nbytes_lo * factor, None if s.nbytes_hi is None else s.nbytes_hi * factor + factor - 1,
                       s.choice) for s in band.steps)
    return Band(band.procs_lo, band.procs_hi, steps)
