"""Hockney's model per channel: a message of m bytes costs alpha + beta m.

Hockney 1994 ("The communication challenge for MPP: Intel Paragon and
Meiko CS-2", Parallel Computing 20(3); paper 000 ref [26]). Each channel c
has its own latency alpha_c (seconds) and inverse bandwidth beta_c (seconds
per byte). In a phase a sender's messages go one after another:
start_0 = 0, start_i = start_{i-1} + T_{i-1}, end_i = start_i + T_i with
T_i = alpha_c + beta_c m_i. A receiver takes one message at a time, each
holding it for the message's own T_i: k messages arriving together into one
rank end T, 2T, ..., kT after they started (the single-port, full-duplex
assumption under which Thakur, Rabenseifner and Gropp 2005 price MPICH's
collectives: a rank sends one message and receives one at a time, both at
once). The model knows no channel contention (tau-Lop's job), and sends
posted together (Isend + Waitall) cost the same as a sequence of blocking
sends. In a dependency schedule a transmission starts once what it waits
for has ended and its sender is free (:mod:`.dependency_timeline`).
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
    """Hockney 1994 per channel: T = alpha + beta m, one message out and one in at a time per rank."""

    NAME = "hockney"
    DESCRIPTION = "Hockney (1994): alpha + beta*m per message and channel, one out and one in at a time per rank"
    PARAMS = HockneyParams

    def _times(self, placed: PlacedSchedule) -> np.ndarray:
        rows = channel_table(self.params.channels, placed, self.NAME)
        alpha, beta = channel_arrays(rows, ("alpha_s", "beta_s_per_byte"), placed.channel)
        return hockney_time_s(placed.schedule.nbytes, alpha, beta)

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        """alpha + beta m: a message holds its receiver as long as its sender (single port)."""
        return self._times(placed)

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        s = placed.schedule
        if s.has_dependencies:
            return self.completions(placed)[1]
        _, sent = serialized(s.phase * s.nprocs + s.src, self._times(placed))
        return self.phased_receptions(placed, sent)

    def completions(self, placed: PlacedSchedule) -> tuple[np.ndarray, np.ndarray]:
        """A send completes alpha + beta m after it starts; its receiver is done as :meth:`end_times` says."""
        s = placed.schedule
        busy = self._times(placed)
        start, done = dependency_times(s.src, s.dst, s.after_ptr, s.after_idx, s.nprocs, busy, busy, busy,
                                       self.receive_service_s(placed), recv_occupancy_s=busy, recv_prev=s.recv_prev,
                                       schedule=s)
        return start + busy, done

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        return {
            "law": "T = alpha + beta*m per message; a sender's messages one after another, a receiver's "
                   "one at a time (single port), no contention (Hockney 1994)",
            "params": {name: ch.to_dict() for name, ch in self.params.channels.items()},
        }
