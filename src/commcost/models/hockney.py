"""Hockney's model per channel: a message of m bytes costs alpha + beta m.

Hockney 1994 ("The communication challenge for MPP: Intel Paragon and
Meiko CS-2", Parallel Computing 20(3); paper 000 ref [26]). Each channel c
has its own latency alpha_c (seconds) and inverse bandwidth beta_c (seconds
per byte). In a phase a sender's messages go one after another:
start_0 = 0, start_i = start_{i-1} + T_{i-1}, end_i = start_i + T_i with
T_i = alpha_c + beta_c m_i. Receivers are not serialized: a rank receiving
several messages takes them all at once. The model knows no channel
contention (tau-Lop's job), and sends posted together (Isend + Waitall) cost
the same as a sequence of blocking sends. In a dependency schedule a
transmission starts once what it waits for has ended and its sender is free
(:mod:`.dependency_timeline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from commcost.models.base import Cost, Model, PlacedSchedule, channel_table, register_model
from commcost.models.fields import channel_arrays, read_numbers, read_tables
from commcost.models.dependency_timeline import dependency_times
from commcost.models.timeline import serialized

def hockney_time_s(nbytes: np.ndarray, alpha_s: np.ndarray, beta_s_per_byte: np.ndarray) -> np.ndarray:
    """T(m) = alpha + beta m: seconds to send m bytes (Hockney 1994)."""
    return alpha_s + beta_s_per_byte * nbytes


def hockney_end_times(phase: np.ndarray, src: np.ndarray, nprocs: int, nbytes: np.ndarray,
                      alpha_s: np.ndarray, beta_s_per_byte: np.ndarray) -> np.ndarray:
    """End of each transmission when each (phase, src) sends its messages one after another.

    end_i = sum_{j <= i} (alpha_j + beta_j m_j) over the sender's messages of the phase.
    """
    _, end = serialized(phase * nprocs + src, hockney_time_s(nbytes, alpha_s, beta_s_per_byte))
    return end


@dataclass(frozen=True)
class HockneyChannel:
    """Hockney parameters of one channel: latency and inverse bandwidth."""

    alpha_s: float
    beta_s_per_byte: float

    UNITS: ClassVar[dict[str, str]] = {"alpha_s": "seconds", "beta_s_per_byte": "seconds per byte"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HockneyChannel":
        """From ``{alpha_s, beta_s_per_byte}``."""
        return cls(**read_numbers(data, cls.UNITS))

    def to_dict(self) -> dict[str, float]:
        """Plain data for a TOML section."""
        return {"alpha_s": self.alpha_s, "beta_s_per_byte": self.beta_s_per_byte}


@dataclass(frozen=True)
class HockneyParams:
    """Hockney parameters by channel name."""

    channels: dict[str, HockneyChannel]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HockneyParams":
        """From ``{channel: {alpha_s, beta_s_per_byte}}`` (TOML: ``[hockney.shm] alpha_s = ...``)."""
        return cls(read_tables(data, HockneyChannel.from_dict, "alpha_s, beta_s_per_byte",
                               "[hockney.shm] alpha_s = 1e-6, beta_s_per_byte = 1e-10"))

    def to_dict(self) -> dict[str, dict[str, float]]:
        """Plain data for a TOML section."""
        return {name: channel.to_dict() for name, channel in self.channels.items()}


@register_model
class Hockney(Model):
    """Hockney 1994 per channel: T = alpha + beta m, a sender's messages one after another."""

    NAME = "hockney"
    DESCRIPTION = "Hockney (1994): alpha + beta*m per message and channel, serialized at the sender"
    PARAMS = HockneyParams

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        rows = channel_table(self.params.channels, placed, self.NAME)
        alpha, beta = channel_arrays(rows, ("alpha_s", "beta_s_per_byte"), placed.channel)
        s = placed.schedule
        if s.has_dependencies:
            busy = hockney_time_s(s.nbytes, alpha, beta)
            return dependency_times(s.src, s.dst, s.after_ptr, s.after_idx, s.nprocs, busy, busy, busy,
                                    self.reduction_service_s(s))[1]
        return hockney_end_times(s.phase, s.src, s.nprocs, s.nbytes, alpha, beta)

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        return {
            "law": "T = alpha + beta*m per message; a sender's messages one after another, "
                   "receivers not serialized, no contention (Hockney 1994)",
            "params": {name: ch.to_dict() for name, ch in self.params.channels.items()},
        }
