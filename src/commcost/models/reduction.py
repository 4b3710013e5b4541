"""Computation inside collectives: the time a rank spends reducing received data into its own.

tau-Lop prices a reduction of m bytes with operation op as gamma(m, op), a
time measured on the machine (issue 7: "reductions cost time per byte and
operation (tau-Lop's gamma(m, op))"). Here gamma is a table of sizes and
times per operation and datatype, interpolated linearly in m: flat below
the first size, continued along the last segment above the last (as the
tau-Lop tables are, :mod:`commcost.models.taulop.params`).

Where the time goes: a transmission marked *combine* (its receiver reduces
it, e.g. a reduce tree's child-to-parent step or a recursive-doubling
allreduce exchange) is followed by gamma(m) of work on the receiver. A
receiver reduces one message at a time, in order of arrival, so within a
phase its reductions form a queue: done_k = max(arrival_k, done_{k-1}) +
gamma(m_k) (:func:`commcost.models.timeline.queue_done`), and the
transmission counts as ended when its reduction is done. Every model prices
reductions this way; the parameter file's ``[reduction.<op>]`` tables give
gamma.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commcost.errors import InputError
from commcost.models.timeline import queue_done


@dataclass(frozen=True, eq=False)
class ReductionLaw:
    """gamma(m) of one operation and datatype: sizes ``m`` (bytes, increasing) and times (seconds)."""

    op: str
    m: np.ndarray
    time_s: np.ndarray

    @classmethod
    def from_dict(cls, op: str, data: dict[str, Any]) -> "ReductionLaw":
        """``{m = [...], time_s = [...]}``; errors name the field."""
        unknown = set(data) - {"m", "time_s"}
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]!r}; expected m and time_s", where=f"{op}")
        try:
            m = np.asarray(data.get("m"), dtype=np.float64)
            t = np.asarray(data.get("time_s"), dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("expected arrays of numbers m and time_s", where=op) from None
        if m.ndim != 1 or t.shape != m.shape or len(m) == 0:
            raise InputError(f"expected m and time_s of equal length >= 1, got {m.size} and {t.size}", where=op)
        if np.any(np.diff(m) <= 0) or np.any(m < 0):
            raise InputError("expected sizes m >= 0 in increasing order", where=f"{op}.m")
        if np.any(t < 0) or np.any(np.diff(t) < 0):
            raise InputError("expected times >= 0, not decreasing with m", where=f"{op}.time_s")
        return cls(op, m, t)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a ``[reduction.<op>]`` section."""
        return {"m": self.m.tolist(), "time_s": self.time_s.tolist()}

    def times(self, nbytes: np.ndarray) -> np.ndarray:
        """gamma(m) for each size."""
        x = np.asarray(nbytes, dtype=np.float64)
        inside = np.interp(x, self.m, self.time_s)
        if len(self.m) >= 2:
            slope = (self.time_s[-1] - self.time_s[-2]) / (self.m[-1] - self.m[-2])
        else:
            slope = self.time_s[-1] / self.m[-1] if self.m[-1] > 0 else 0.0
        return np.where(x > self.m[-1], self.time_s[-1] + slope * (x - self.m[-1]), inside)


def reduction_laws(data: dict[str, Any]) -> dict[str, ReductionLaw]:
    """The ``[reduction]`` section: one table per operation, ``[reduction.sum_double] m = ..., time_s = ...``."""
    if not isinstance(data, dict) or not data:
        raise InputError("expected one table per operation, e.g. [reduction.sum_double] m = [...], time_s = [...]")
    laws = {}
    for op, body in data.items():
        if not isinstance(body, dict):
            raise InputError("expected a table with m and time_s", where=op)
        laws[op] = ReductionLaw.from_dict(op, body)
    return laws


def with_reductions(end_s: np.ndarray, phase: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                    combine: np.ndarray, nprocs: int, law: ReductionLaw) -> np.ndarray:
    """End times once each combine transmission's receiver has reduced it (queued per phase and receiver)."""
    if law is None or not np.any(combine):
        return end_s
    out = np.array(end_s, dtype=np.float64, copy=True)
    idx = np.flatnonzero(combine)
    out[idx] = queue_done(phase[idx] * nprocs + dst[idx], end_s[idx], law.times(nbytes[idx]))
    return out
