"""The tau-Lop algebra: a schedule's cost as the paper writes it, ``2||T^0(116) + T^0(18)``.

Built by the paper's own rules (paper 000 section 3):

* A1: consecutive sends of a rank through one channel are one send of the
  summed size (:mod:`.jobs`); at the end, terms of equal concurrency and
  channel in the top-level sum are merged the same way
  (A||T^c(m1) + A||T^c(m2) = A||T^c(m1+m2)), as eq. 10 does;
* the pattern of eq. 5: concurrent sequences are aligned by position, the
  k-th send of every rank runs with the k-th send of the others, and a
  phase costs the sum over positions
  ([T^c0(ma) + T^c1(mb)] || [T^c0(mc) + T^c1(md)] =
  [T^c0(ma) || T^c0(mc)] + [T^c1(mb) || T^c1(md)]);
* A2: within one contention domain, T(m1) || ... || T(mn) with sorted sizes
  is the staircase n||T(m1) + (n-1)||T(m2-m1) + ... (eq. 9);
* A3: different domains do not interfere: max{...} (eq. 13-14).

The position alignment is the paper's shortcut: it is exact when the
aligned sends take equal times, and otherwise differs from the exact
engine (:mod:`.engine`), as for eq. 8.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Union

import numpy as np

from commcost.models.taulop.jobs import PhaseJobs
from commcost.models.taulop.params import TransmissionLaw


@dataclass(frozen=True)
class Term:
    """n || T^c(m): n concurrent transmissions of ``nbytes`` through channel index ``channel``."""

    n: int
    channel: int
    nbytes: float


@dataclass
class Max:
    """max{...} of sums that run in different contention domains (A3)."""

    parts: list["Sum"]


@dataclass
class Sum:
    """Terms and maxima that run one after another."""

    items: list[Union[Term, Max]] = field(default_factory=list)


def staircase(nbytes: np.ndarray, channel: int) -> list[Term]:
    """A2 on one domain: the || of transmissions of the given sizes as a sum of terms (eq. 9)."""
    sizes = np.sort(np.asarray(nbytes, dtype=np.float64))
    terms = []
    previous = 0.0
    for k, m in enumerate(sizes):
        if k == 0 or m > previous:
            terms.append(Term(len(sizes) - k, channel, float(m - previous)))
        previous = m
    return terms


def phase_expression(jobs: PhaseJobs) -> Sum:
    """One phase by the pattern of eq. 5: positions in sequence, domains in parallel."""
    total = Sum()
    for k in np.unique(jobs.position):
        at_k = jobs.position == k
        domains = np.unique(jobs.domain[at_k])
        parts = []
        for d in domains:
            sel = at_k & (jobs.domain == d)
            parts.append(Sum(staircase(jobs.nbytes[sel], int(jobs.channel[sel][0]))))
        if len(parts) == 1:
            total.items.extend(parts[0].items)
        else:
            total.items.append(Max(parts))
    return total


def merge_a1(expr: Sum) -> Sum:
    """A1 over a sum: terms of equal concurrency and channel become one term of the summed size."""
    merged: dict[tuple[int, int], int] = {}
    items: list[Union[Term, Max]] = []
    for item in expr.items:
        if isinstance(item, Term):
            key = (item.n, item.channel)
            if key in merged:
                at = merged[key]
                old = items[at]
                assert isinstance(old, Term)
                items[at] = Term(old.n, old.channel, old.nbytes + item.nbytes)
                continue
            merged[key] = len(items)
        items.append(item)
    return Sum(items)


def concat(sums: list[Sum]) -> Sum:
    """Phases one after another."""
    return Sum([item for s in sums for item in s.items])


def value(expr: Union[Sum, Max, Term], laws: list[TransmissionLaw]) -> float:
    """Seconds, pricing each term n||T^c(m) as o^c(m) + sum_k L^k(m, n)."""
    if isinstance(expr, Term):
        return laws[expr.channel].time(expr.nbytes, expr.n)
    if isinstance(expr, Max):
        return max(value(part, laws) for part in expr.parts)
    return float(sum(value(item, laws) for item in expr.items))


def _size(nbytes: float, unit_nbytes: int) -> str:
    amount = nbytes / unit_nbytes
    return str(int(round(amount))) if abs(amount - round(amount)) < 1e-9 else f"{amount:.6g}"


def to_text(expr: Union[Sum, Max, Term], label: Callable[[int], int], unit_nbytes: int = 1) -> str:
    """ASCII in the paper's notation: ``3||T^1(35) + 2||T^1(166) + T^1(81)``."""
    if isinstance(expr, Term):
        head = f"{expr.n}||" if expr.n > 1 else ""
        return f"{head}T^{label(expr.channel)}({_size(expr.nbytes, unit_nbytes)})"
    if isinstance(expr, Max):
        return "max{" + ", ".join(to_text(p, label, unit_nbytes) for p in expr.parts) + "}"
    return " + ".join(to_text(item, label, unit_nbytes) for item in expr.items) or "0"


def to_latex(expr: Union[Sum, Max, Term], label: Callable[[int], int], unit_nbytes: int = 1) -> str:
    """LaTeX: ``3 \\parallel T^{1}(35) + T^{1}(81)``."""
    if isinstance(expr, Term):
        head = f"{expr.n} \\parallel " if expr.n > 1 else ""
        return f"{head}T^{{{label(expr.channel)}}}({_size(expr.nbytes, unit_nbytes)})"
    if isinstance(expr, Max):
        return "\\max\\{" + ", ".join(to_latex(p, label, unit_nbytes) for p in expr.parts) + "\\}"
    return " + ".join(to_latex(item, label, unit_nbytes) for item in expr.items) or "0"


_TERM = re.compile(r"^\s*(?:(\d+)\s*\|\|\s*)?T\^\{?(\d+)\}?\s*\(\s*([0-9.eE+-]+)\s*\)\s*$")


def parse_terms(text: str) -> Counter:
    """The multiset of (n, channel label, size) of a flat sum in the paper's ASCII notation."""
    terms: Counter = Counter()
    for chunk in text.split("+ "):
        match = _TERM.match(chunk.strip().rstrip("+"))
        if not match:
            raise ValueError(f"not a term of the form n||T^c(m): {chunk!r}")
        n, c, m = match.groups()
        terms[(int(n or 1), int(c), float(m))] += 1
    return terms
