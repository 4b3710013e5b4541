"""Computation inside collectives: the time a rank spends reducing received data into its own.

tau-Lop prices a reduction of m bytes with operation op as gamma(m, op), a
time measured on the machine (issue 7: "reductions cost time per byte and
operation (tau-Lop's gamma(m, op))"). Here gamma is a table of sizes and
times per operation and datatype, interpolated linearly in m, flat below
the first size; past the last size M, as the tau-Lop tables are
(:mod:`commcost.models.taulop.params`), in whole chunks by default
(``beyond_m = "chunks"``: gamma(q M + r) = q gamma(M) + gamma(r), paper
000's proportional rule, which libtaulop's ``TauLopParam::getTime``
applies to gamma too) or along the last segment (``"slope"``).

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
    beyond_m: str = "chunks"

    @classmethod
    def from_dict(cls, op: str, data: dict[str, Any]) -> "ReductionLaw":
        """``{m = [...], time_s = [...], beyond_m = "chunks" | "slope"}``; errors name the field."""
        unknown = set(data) - {"m", "time_s", "beyond_m"}
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]!r}; expected m, time_s and beyond_m", where=f"{op}")
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
        return cls(op, m, t, beyond_rule(data.get("beyond_m", "chunks"), f"{op}.beyond_m", m))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a ``[reduction.<op>]`` section."""
        return {"m": self.m.tolist(), "time_s": self.time_s.tolist(), "beyond_m": self.beyond_m}

    def times(self, nbytes: np.ndarray) -> np.ndarray:
        """gamma(m) for each size (module docstring: interpolated inside, whole chunks or the last slope past
        the last size)."""
        x = np.asarray(nbytes, dtype=np.float64)
        inside = np.interp(x, self.m, self.time_s)
        top = self.m[-1]
        if self.beyond_m == "chunks" and top > 0:
            whole = np.floor(x / top)
            rest = x - whole * top
            chunked = whole * self.time_s[-1] + np.where(rest > 0, np.interp(rest, self.m, self.time_s), 0.0)
            return np.where(x > top, chunked, inside)
        if len(self.m) >= 2:
            slope = (self.time_s[-1] - self.time_s[-2]) / (self.m[-1] - self.m[-2])
        else:
            slope = self.time_s[-1] / top if top > 0 else 0.0
        return np.where(x > top, self.time_s[-1] + slope * (x - top), inside)


def beyond_rule(value: Any, where: str, m: np.ndarray) -> str:
    """A table's ``beyond_m``, checked: "chunks" needs a last size above 0."""
    if value not in ("chunks", "slope"):
        raise InputError(f'expected "chunks" or "slope", got {value!r}', where=where)
    if value == "chunks" and m[-1] <= 0:
        raise InputError("whole chunks of the last size need a last size above 0 bytes", where=where)
    return value


def reduction_laws(data: dict[str, Any], read_file: Any = None) -> dict[str, ReductionLaw]:
    """The ``[reduction]`` section: one table per operation, ``[reduction.sum_double] m = ..., time_s = ...``,
    or a column of a file, ``[reduction.sum_int] file = "gamma.txt", column = "SUM_I"``, which
    ``read_file(op, body)`` reads (the I/O layer's reader, :func:`commcost.io.gamma_table.read_gamma_table`)."""
    if not isinstance(data, dict) or not data:
        raise InputError("expected one table per operation, e.g. [reduction.sum_double] m = [...], time_s = [...]")
    laws = {}
    for op, body in data.items():
        if not isinstance(body, dict):
            raise InputError("expected a table with m and time_s, or file and column", where=op)
        if "file" in body:
            if read_file is None:
                raise InputError("a reduction table in a file is read through a parameter file", where=op)
            laws[op] = read_file(op, body)
        else:
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
