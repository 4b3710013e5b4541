"""LogGP (one parameter set for the whole machine) and LogGPH (LogGP per channel).

LogGP: Alexandrov, Ionescu, Schauser and Scheiman, "LogGP: incorporating
long messages into the LogP model", SPAA 1995 (paper 000 ref [24]).
L is the network latency, o the processor overhead of a send or a receive,
g the gap between two consecutive messages of a processor, G the gap per
byte of a long message. A message of m bytes alone costs

    T(m) = o + (m-1) G + L + o = 2o + L + (m-1) G.

In a phase (all ranks start at t = 0) a sender injects its messages one
after another, the next max(g, o + (m-1) G) after the previous one began;
a receiver takes them one at a time, in order of arrival, its network port
taking the next max(g, (m-1) G) after the previous one (LogGP's gaps bind
a receiving interface as they bind a sending one), and its processor
spending o on each after that, so a gather of k messages of m bytes costs
the root k - 1 such gaps (or overheads, the larger) after the first
(:func:`commcost.models.timeline.loggp_end_times`). Channel contention is
not modelled (that is tau-Lop's job), and sends posted together (Isend +
Waitall) are priced like a sequence of blocking sends.

LogGPH: Yuan, Zhang, Tang, Rao and Sun, "LogGPH: a parallel computational
model with hierarchical communication awareness", CSE 2010 (paper 000 ref
[40]): the same law with one LogGP parameter set per channel (shared
memory, network, ...); o_send = o_recv = the channel's o.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from commcost.models.base import Cost, Model, PlacedSchedule, channel_table, completions_of_times, register_model
from commcost.models.fields import channel_arrays, read_numbers, read_tables
from commcost.models.dependency_timeline import TransmissionTimes
from commcost.models.timeline import LogGPArrays, loggp_end_times, loggp_receive_occupancy

LAW = ("inj = o_send + (m-1)*G; a sender starts its next message max(g, inj) later; "
       "arrival = start + inj + L; the receiver takes one message at a time, its port max(g, (m-1)*G) each, "
       "then o_recv each (one message: 2o + L + (m-1)G); no contention, posted sends priced as a sequence")


def loggp_time_s(nbytes: np.ndarray, L_s: np.ndarray, o_s: np.ndarray, G_s_per_byte: np.ndarray) -> np.ndarray:
    """T(m) = 2o + L + (m-1) G: seconds for one message alone (Alexandrov et al. 1995)."""
    return 2.0 * o_s + L_s + np.maximum(np.asarray(nbytes, dtype=np.float64) - 1.0, 0.0) * G_s_per_byte


def end_times_of(placed: PlacedSchedule, params: LogGPArrays, reduction_s: np.ndarray | None = None) -> np.ndarray:
    """End time of every transmission of a placed schedule under per-transmission LogGP values.

    In a dependency schedule (:mod:`.dependency_timeline`): inj = o_send +
    (m-1) G; the sender is busy max(g, inj) and its send completes after inj;
    the message arrives inj + L after it starts; the receiver takes it once
    it has taken the one before (in order of arrival, or the schedule's
    order), its port held max(g, (m-1) G)
    (:func:`commcost.models.timeline.loggp_receive_occupancy`), and spends
    o_recv (plus ``reduction_s``, gamma(m) of a combine transmission) on it."""
    s = placed.schedule
    if s.has_dependencies:
        return completions_of(placed, params, reduction_s)[1]
    return loggp_end_times(s.phase, s.src, s.dst, s.nprocs, s.nbytes, params, reduction_s)


def transmission_times_of(placed: PlacedSchedule, params: LogGPArrays,
                          reduction_s: np.ndarray | None = None) -> TransmissionTimes:
    """Each transmission's times under LogGP (:func:`end_times_of`): the sender busy max(g, inj) with
    inj = o_send + (m-1) G, its send completed after inj, the message in inj + L after it starts, the
    receiver's port held max(g, (m-1) G), then o_recv (plus ``reduction_s``) of its processor."""
    s = placed.schedule
    o_send, o_recv, L, g, G = (np.asarray(a, dtype=np.float64) for a in params)
    inject = o_send + np.maximum(s.nbytes - 1.0, 0.0) * G
    service = o_recv if reduction_s is None else o_recv + reduction_s
    return TransmissionTimes(np.maximum(g, inject), inject, inject + L, service,
                             loggp_receive_occupancy(s.nbytes, g, G))


def completions_of(placed: PlacedSchedule, params: LogGPArrays, reduction_s: np.ndarray | None = None,
                   origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(sent, done)`` of every transmission of a dependency schedule (:meth:`Model.completions`): a send
    completes o_send + (m-1) G after it starts; its receiver is done as :func:`end_times_of` says;
    ``origin``: each rank's own start."""
    return completions_of_times(placed, transmission_times_of(placed, params, reduction_s), origin)


def receive_occupancy_of(placed: PlacedSchedule, params: LogGPArrays) -> np.ndarray:
    """Each transmission's hold on its receiver's port, max(g, (m-1) G); o_recv follows on its processor."""
    return loggp_receive_occupancy(placed.schedule.nbytes, params.g_s, params.G_s_per_byte)


@dataclass(frozen=True)
class LogGPParams:
    """LogGP parameters: latency L, overhead o, gap g (seconds) and gap per byte G."""

    L_s: float
    o_s: float
    g_s: float
    G_s_per_byte: float

    UNITS: ClassVar[dict[str, str]] = {
        "L_s": "seconds", "o_s": "seconds", "g_s": "seconds", "G_s_per_byte": "seconds per byte",
    }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LogGPParams":
        """From ``{L_s, o_s, g_s, G_s_per_byte}`` (TOML: ``[loggp] L_s = ...``)."""
        return cls(**read_numbers(data, cls.UNITS))

    def to_dict(self) -> dict[str, float]:
        """Plain data for a TOML section."""
        return {"L_s": self.L_s, "o_s": self.o_s, "g_s": self.g_s, "G_s_per_byte": self.G_s_per_byte}

    def per_transmission(self, n: int) -> LogGPArrays:
        """The same values for ``n`` transmissions."""
        return LogGPArrays(*(np.full(n, v) for v in (self.o_s, self.o_s, self.L_s, self.g_s, self.G_s_per_byte)))


@dataclass(frozen=True)
class LogGPHParams:
    """LogGP parameters by channel name."""

    channels: dict[str, LogGPParams]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LogGPHParams":
        """From ``{channel: {L_s, o_s, g_s, G_s_per_byte}}`` (TOML: ``[loggph.ib] L_s = ...``)."""
        return cls(read_tables(data, LogGPParams.from_dict, "L_s, o_s, g_s, G_s_per_byte",
                               "[loggph.ib] L_s = 2e-6, o_s = 1e-6, g_s = 1e-6, G_s_per_byte = 1e-10"))

    def to_dict(self) -> dict[str, dict[str, float]]:
        """Plain data for a TOML section."""
        return {name: channel.to_dict() for name, channel in self.channels.items()}

    def per_transmission(self, placed: PlacedSchedule) -> LogGPArrays:
        """Each transmission's values, from its channel."""
        rows = channel_table(self.channels, placed, LogGPH.NAME)
        L, o, g, G = channel_arrays(rows, ("L_s", "o_s", "g_s", "G_s_per_byte"), placed.channel)
        return LogGPArrays(o, o, L, g, G)


@register_model
class LogGP(Model):
    """LogGP (Alexandrov et al. 1995): one L, o, g, G for every channel."""

    folds_by_rank_shift = True
    NAME = "loggp"
    DESCRIPTION = "LogGP (Alexandrov et al. 1995): 2o + L + (m-1)G per message, one parameter set for all channels"
    PARAMS = LogGPParams

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        return end_times_of(placed, self.params.per_transmission(placed.schedule.ntransmissions),
                            self.reduction_service_s(placed.schedule))

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        return receive_occupancy_of(placed, self.params.per_transmission(placed.schedule.ntransmissions))

    def transmission_times(self, placed: PlacedSchedule) -> TransmissionTimes:
        return transmission_times_of(placed, self.params.per_transmission(placed.schedule.ntransmissions),
                                     self.reduction_service_s(placed.schedule))

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return completions_of_times(placed, self.transmission_times(placed), origin)

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        return {"law": LAW, "params": self.params.to_dict()}


@register_model
class LogGPH(Model):
    """LogGPH (paper 000 ref [40]): LogGP with one parameter set per channel."""

    folds_by_rank_shift = True
    NAME = "loggph"
    DESCRIPTION = "LogGPH: LogGP for hierarchical platforms, one L, o, g, G per channel"
    PARAMS = LogGPHParams

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        return end_times_of(placed, self.params.per_transmission(placed), self.reduction_service_s(placed.schedule))

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        return receive_occupancy_of(placed, self.params.per_transmission(placed))

    def transmission_times(self, placed: PlacedSchedule) -> TransmissionTimes:
        return transmission_times_of(placed, self.params.per_transmission(placed),
                                     self.reduction_service_s(placed.schedule))

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return completions_of_times(placed, self.transmission_times(placed), origin)

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        return {"law": LAW + " (parameters per channel)", "params": self.params.to_dict()}
