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

**Protocol regimes and the sender's share** (issue 35 item 2). Who pays
for a transmission depends on the library's protocol. Below a channel's
eager limit the sender copies the message out and its send completes: the
sender is taken for send_alpha + send_beta m, then free for its next
message, while the message arrives alpha + beta m after it started. Above
the limit (rendezvous: single-copy shared memory, RDMA get) the receiver
pulls the bytes: the sender is taken for rendezvous_send_alpha +
rendezvous_send_beta m (the handshake, and what it still copies), the
message arrives rendezvous_alpha + rendezvous_beta m after it started, and
the send completes only when the receiver has taken it (a linear gather's
senders wait their turn at the root: on Peak, the mean over ranks of a
256 KiB gather grows with P where a 128 KiB one falls). A root's
back-to-back sends overlap as far as the sender's share says (a linear
bcast's P - 1 receivers copy at once). The
receiver's share (recv_alpha + recv_beta m, rendezvous_recv_* above the
limit) is what a message holds its receiver: messages arriving together
are taken one at a time, each for its share, where Hockney's one law held
the receiver for the message's whole time on the wire (a linear reduce's
root paid P - 1 latencies); a message alone is in at its arrival. The
shares are fitted, not assumed; and between a copy limit and the eager
limit (``copy_limit_bytes``: UCX copies a message through its own buffers
in one piece up to its bcopy threshold or shared-memory segment, then
sends it zero-copy or in fragments) eager messages have a law of their own,
bulk_alpha + bulk_beta m, with its own shares (bulk_send_*, bulk_recv_*;
a share not given: the eager one). On Peak every algorithm's measured /
model ratio jumps from 4 to 8 KiB, then falls to 128 KiB, under one eager
law. **Backpressure** (``backpressure_from_bytes``): an eager message of
at least that size holds its sender while its receiver's queue drains the
messages that arrived before it, each for its receiver's share (not while
it waits for its receive to be posted: the unexpected queue takes it), so
senders that fill one receiver's queue faster than it drains finish in
turn (:mod:`.dependency_timeline`; a shared-memory FIFO of bounded depth).
On Peak a linear gather's or reduce's mean over ranks on one node grows as
P at every size (1 B: 0.3 us at P = 2, 5 us at 32), while a lone eager
message costs its sender only its share. A share equal to the wire's time is
classic Hockney; a share near 0, a receiver-copy transport with no
contention. A channel without ``eager_limit_bytes`` and send_* values is
the classic model above. The arrival times are LogGP's (Alexandrov et al.
1995: o + L + o against the sender's o, its gap g) in Hockney's
per-message and per-byte form, one pair per protocol as in the max-rate
model's short/eager/rendezvous regimes (paper 001 section 3, Table 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from commcost.models.base import (Cost, Model, PlacedSchedule, channel_table, completions_of_times, register_model,
                                  service_columns)
from commcost.models.fields import read_numbers, read_tables
from commcost.models.dependency_timeline import TransmissionTimes
from commcost.models.timeline import serialized

def hockney_time_s(nbytes: np.ndarray, alpha_s: np.ndarray, beta_s_per_byte: np.ndarray) -> np.ndarray:
    """T(m) = alpha + beta m: seconds to send m bytes (Hockney 1994)."""
    return alpha_s + beta_s_per_byte * nbytes


def first_given(rows: list[Any], names: tuple[str, ...]) -> np.ndarray:
    """Per channel, the first of ``names`` it gives (NaN where none does)."""
    out = np.full(len(rows), np.nan)
    for c, row in enumerate(rows):
        if row is not None:
            for name in names:
                given = getattr(row, name)
                if given is not None and given == given:  # (NaN: not given)
                    out[c] = given
                    break
    return out


@dataclass(frozen=True)
class HockneyChannel:
    """Hockney parameters of one channel: latency and inverse bandwidth; optionally what a send takes of
    its sender (send_*), a second law above the channel's eager limit (rendezvous_*), and one for the eager
    messages above its copy limit (bulk_*: module docstring)."""

    alpha_s: float
    beta_s_per_byte: float
    send_alpha_s: float | None = None
    send_beta_s_per_byte: float | None = None
    recv_alpha_s: float | None = None
    recv_beta_s_per_byte: float | None = None
    eager_limit_bytes: float | None = None
    rendezvous_alpha_s: float | None = None
    rendezvous_beta_s_per_byte: float | None = None
    rendezvous_send_alpha_s: float | None = None
    rendezvous_send_beta_s_per_byte: float | None = None
    rendezvous_recv_alpha_s: float | None = None
    rendezvous_recv_beta_s_per_byte: float | None = None
    copy_limit_bytes: float | None = None
    bulk_alpha_s: float | None = None
    bulk_beta_s_per_byte: float | None = None
    bulk_send_alpha_s: float | None = None
    bulk_send_beta_s_per_byte: float | None = None
    bulk_recv_alpha_s: float | None = None
    bulk_recv_beta_s_per_byte: float | None = None
    backpressure_from_bytes: float | None = None

    UNITS: ClassVar[dict[str, str]] = {"alpha_s": "seconds", "beta_s_per_byte": "seconds per byte"}
    SENDER: ClassVar[dict[str, str]] = {"send_alpha_s": "seconds", "send_beta_s_per_byte": "seconds per byte"}
    RECEIVER: ClassVar[dict[str, str]] = {"recv_alpha_s": "seconds", "recv_beta_s_per_byte": "seconds per byte"}
    RENDEZVOUS: ClassVar[dict[str, str]] = {
        "eager_limit_bytes": "bytes", "rendezvous_alpha_s": "seconds", "rendezvous_beta_s_per_byte":
        "seconds per byte", "rendezvous_send_alpha_s": "seconds", "rendezvous_send_beta_s_per_byte":
        "seconds per byte"}
    RENDEZVOUS_RECEIVER: ClassVar[dict[str, str]] = {"rendezvous_recv_alpha_s": "seconds",
                                                     "rendezvous_recv_beta_s_per_byte": "seconds per byte"}
    BULK: ClassVar[dict[str, str]] = {"copy_limit_bytes": "bytes", "bulk_alpha_s": "seconds",
                                      "bulk_beta_s_per_byte": "seconds per byte"}
    BULK_SENDER: ClassVar[dict[str, str]] = {"bulk_send_alpha_s": "seconds", "bulk_send_beta_s_per_byte":
                                             "seconds per byte"}
    BULK_RECEIVER: ClassVar[dict[str, str]] = {"bulk_recv_alpha_s": "seconds", "bulk_recv_beta_s_per_byte":
                                               "seconds per byte"}

    BACKPRESSURE: ClassVar[dict[str, str]] = {"backpressure_from_bytes": "bytes"}

    @classmethod
    def groups(cls) -> tuple[dict[str, str], ...]:
        """The optional groups, each given whole, in the order :meth:`from_dict` checks them."""
        return (cls.SENDER, cls.RECEIVER, cls.RENDEZVOUS, cls.RENDEZVOUS_RECEIVER, cls.BULK, cls.BULK_SENDER,
                cls.BULK_RECEIVER, cls.BACKPRESSURE)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HockneyChannel":
        """From ``{alpha_s, beta_s_per_byte}``, with ``send_alpha_s, send_beta_s_per_byte`` both or neither
        (``recv_*`` too), and ``eager_limit_bytes`` with the four ``rendezvous_*`` values or none of them (and
        ``rendezvous_recv_*`` both or neither)."""
        if not isinstance(data, dict):
            return cls(**read_numbers(data, cls.UNITS))
        every = cls.groups()
        given = [any(k in data for k in g) for g in every]
        given[2] = given[2] or given[3]  # a rendezvous receiver's share needs the rest of the rendezvous law
        given[4] = given[4] or given[5] or given[6]  # a bulk share needs the bulk law and its limit
        groups = [g for g, yes in zip(every, given) if yes]
        units = {**cls.UNITS, **{k: v for g in groups for k, v in g.items()}}
        return cls(**read_numbers(data, units))

    @property
    def classic(self) -> bool:
        """Whether this is Hockney's one law, a sender taken for the whole message."""
        return self.send_alpha_s is None and self.recv_alpha_s is None and self.eager_limit_bytes is None \
            and self.copy_limit_bytes is None and self.backpressure_from_bytes is None

    def to_dict(self) -> dict[str, float]:
        """Plain data for a TOML section (the optional groups where given)."""
        out = {"alpha_s": self.alpha_s, "beta_s_per_byte": self.beta_s_per_byte}
        for key in (k for group in self.groups() for k in group):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def protocol_times(rows: list[Any], placed: PlacedSchedule, resolved: "ChannelLaws | None" = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Per transmission (seconds): the wire's time (start to arrival), what it takes of its sender, when its
    send completes for the sender, and how long it holds its receiver: Hockney's alpha + beta m for all four
    on a classic channel; below an eager limit the sender's send_alpha + send_beta m and a send completed
    then, the receiver's recv_alpha + recv_beta m; above it the rendezvous_* laws and a send completed
    when its receiver has taken it (at the earliest its arrival). Fifth: which are above their channel's
    eager limit (rendezvous: :func:`~.dependency_timeline.dependency_completions`'s ``sync``); sixth, which
    eager ones are from its ``backpressure_from_bytes`` up (its ``pressed``); each None where none is. A
    share not given is the wire's time. ``resolved``: :func:`resolve_laws` of ``rows``, when already known."""
    laws = resolved if resolved is not None else resolve_laws(rows)
    m = placed.schedule.nbytes
    channel = placed.channel
    if laws.law is None:  # every channel classic
        wire = hockney_time_s(m, laws.alpha[channel], laws.beta[channel])
        return wire, wire, wire, wire, None, None
    index, above, pressed = _regimes(placed, laws)
    coef = laws.law[index]
    wire = hockney_time_s(m, coef[:, 0], coef[:, 1])
    busy = hockney_time_s(m, coef[:, 2], coef[:, 3])
    held = hockney_time_s(m, coef[:, 4], coef[:, 5])
    sent = busy if above is None else np.where(above, wire, busy)  # a rendezvous send: when its receiver took it
    return wire, busy, sent, held, above, pressed


def _limits_key(laws: "ChannelLaws") -> tuple:
    """What splits transmissions into regimes: the channels' copy, eager and backpressure limits."""
    return laws.copy.tobytes(), laws.limit.tobytes(), None if laws.held_from is None else laws.held_from.tobytes()


REGIMES_KEY = "_hockney_regimes"  # where a placed schedule keeps its split by regime, per set of limits


def _regimes(placed: PlacedSchedule, laws: "ChannelLaws") -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Per transmission: its row of ``laws.law`` (its channel's eager, bulk or rendezvous law), which are above
    their channel's eager limit and which eager ones are pressed (None: none), kept on ``placed`` for the next
    pricing with the same limits (a fit prices the same schedules hundreds of times)."""
    key = _limits_key(laws)
    m, channel = placed.schedule.nbytes, placed.channel
    kept = placed.__dict__.get(REGIMES_KEY)  # (a scaled copy inherits it, with other sizes: then not its own)
    if kept is not None and kept[0] is m and kept[1] == key:
        return kept[2]
    copy, limit = laws.copy[channel], laws.limit[channel]
    bulk = m > np.where(np.isnan(copy), np.inf, copy)  # eager above the copy limit (the limit: below the eager one)
    above = m > np.where(np.isnan(limit), np.inf, limit)
    index = channel * 3 + np.where(above, 2, np.where(bulk, 1, 0))
    pressed = None
    if laws.held_from is not None:  # eager senders held while their receiver's queue drains
        pressed = m >= np.where(np.isnan(laws.held_from), np.inf, laws.held_from)[channel]
        pressed &= ~above
    found = (index, above if above.any() else None, pressed)
    placed.__dict__[REGIMES_KEY] = (m, key, found)  # (a frozen dataclass: its fields stay as they are)
    return found


LAWS = (  # per regime (eager, bulk, rendezvous): wire, busy, held x (alpha, beta), each the first its channel gives
    (("alpha_s",), ("beta_s_per_byte",), ("send_alpha_s", "alpha_s"), ("send_beta_s_per_byte", "beta_s_per_byte"),
     ("recv_alpha_s", "alpha_s"), ("recv_beta_s_per_byte", "beta_s_per_byte")),
    (("bulk_alpha_s",), ("bulk_beta_s_per_byte",), ("bulk_send_alpha_s", "send_alpha_s", "bulk_alpha_s"),
     ("bulk_send_beta_s_per_byte", "send_beta_s_per_byte", "bulk_beta_s_per_byte"),
     ("bulk_recv_alpha_s", "recv_alpha_s", "bulk_alpha_s"),
     ("bulk_recv_beta_s_per_byte", "recv_beta_s_per_byte", "bulk_beta_s_per_byte")),
    (("rendezvous_alpha_s",), ("rendezvous_beta_s_per_byte",), ("rendezvous_send_alpha_s",),
     ("rendezvous_send_beta_s_per_byte",), ("rendezvous_recv_alpha_s", "rendezvous_alpha_s"),
     ("rendezvous_recv_beta_s_per_byte", "rendezvous_beta_s_per_byte")))


class ChannelLaws(NamedTuple):
    """What :func:`protocol_times` needs of the per-channel rows, resolved once per channel (NaN: not given)."""

    alpha: np.ndarray  # per channel: alpha_s and beta_s_per_byte
    beta: np.ndarray
    law: np.ndarray | None  # (channels x 3 regimes, 6): :data:`LAWS`; None where every channel is classic
    copy: np.ndarray  # per channel: copy_limit_bytes, eager_limit_bytes, backpressure_from_bytes (None: none)
    limit: np.ndarray
    held_from: np.ndarray | None


def resolve_laws(rows: list[Any]) -> ChannelLaws:
    """The :class:`ChannelLaws` of per-channel rows (None: a channel no transmission uses)."""
    alpha, beta = first_given(rows, ("alpha_s",)), first_given(rows, ("beta_s_per_byte",))
    copy, limit = first_given(rows, ("copy_limit_bytes",)), first_given(rows, ("eager_limit_bytes",))
    if all(row is None or row.classic for row in rows):
        return ChannelLaws(alpha, beta, None, copy, limit, None)
    law = np.stack([np.stack([first_given(rows, names) for names in regime], axis=1) for regime in LAWS], axis=1)
    held_from = first_given(rows, ("backpressure_from_bytes",))
    return ChannelLaws(alpha, beta, law.reshape(-1, 6), copy, limit, None if np.isnan(held_from).all() else held_from)


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

    folds_by_rank_shift = True
    NAME = "hockney"
    DESCRIPTION = "Hockney (1994): alpha + beta*m per message and channel, one out and one in at a time per rank"
    PARAMS = HockneyParams

    def _times(self, placed: PlacedSchedule) -> np.ndarray:
        return self._protocol(placed)[0]

    def _laws(self, placed: PlacedSchedule) -> tuple[list, "ChannelLaws"]:
        """The per-channel rows ``placed`` reads and their :class:`ChannelLaws`, resolved once per model and
        set of channels used (a fit prices thousands of schedules on one platform)."""
        seen = self.__dict__.setdefault("_by_channels", {})
        hit = seen.get((id(placed.platform), placed.used_channels))
        if hit is not None and hit[0] is placed.platform:
            return hit[1], hit[2]
        rows = channel_table(self.params.channels, placed, self.NAME)
        key = tuple(id(row) for row in rows)  # the rows are this model's own channel objects: ids stay theirs
        cache = self.__dict__.setdefault("_resolved", {})
        if key not in cache:
            cache[key] = resolve_laws(rows)
        seen[(id(placed.platform), placed.used_channels)] = (placed.platform, rows, cache[key])
        return rows, cache[key]

    def _protocol(self, placed: PlacedSchedule) -> tuple:
        rows, laws = self._laws(placed)
        return protocol_times(rows, placed, laws)

    @classmethod
    def time_columns(cls, models: list, placed: PlacedSchedule) -> TransmissionTimes | None:
        """Several parameter sets' :meth:`transmission_times` as columns, their laws gathered for every set at
        once (the same numbers as one set at a time) where they share their limits (a fit's sets do)."""
        laws = [m._laws(placed)[1] for m in models]
        first = laws[0]
        m = placed.schedule.nbytes[:, None]
        if all(law.law is None for law in laws):  # Hockney's one law everywhere: a message's every time its wire's
            channel = placed.channel
            wire = hockney_time_s(m, np.stack([law.alpha for law in laws], axis=1)[channel],
                                  np.stack([law.beta for law in laws], axis=1)[channel])
            return TransmissionTimes(wire, wire, wire, service_columns(models, placed), wire)
        key = _limits_key(first) if first.law is not None else None
        if key is None or any(law.law is None or _limits_key(law) != key for law in laws):
            return super().time_columns(models, placed)
        index, above, pressed = _regimes(placed, first)
        coef = np.stack([law.law for law in laws], axis=1)[index]  # (n, sets, 6)
        wire, busy, held = (hockney_time_s(m, coef[:, :, 2 * r], coef[:, :, 2 * r + 1]) for r in range(3))
        sent = busy if above is None else np.where(above[:, None], wire, busy)
        return TransmissionTimes(busy, sent, wire, service_columns(models, placed), held, above, pressed)

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        """alpha + beta m (the receiver's share where the channel has one): what a message holds its receiver,
        one at a time (single port)."""
        return self._protocol(placed)[3]

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        s = placed.schedule
        if s.has_dependencies:
            return self.completions(placed)[1]
        wire, busy = self._protocol(placed)[:2]
        if busy is wire:
            _, sent = serialized(s.phase * s.nprocs + s.src, wire)
        else:  # a message starts when its sender is free of the previous ones, and arrives a wire time later
            start, _ = serialized(s.phase * s.nprocs + s.src, busy)
            sent = start + wire
        return self.phased_receptions(placed, sent)

    def transmission_times(self, placed: PlacedSchedule) -> TransmissionTimes:
        """A sender is taken for its share, its send completes then (eager), when the message has arrived
        (classic Hockney) or when its receiver has taken it (rendezvous: ``sync``); the message arrives a
        wire time after it starts and holds its receiver for the receiver's share."""
        wire, busy, sent, held, rendezvous, pressed = self._protocol(placed)
        return TransmissionTimes(busy, sent, wire, self.receive_service_s(placed), held, rendezvous, pressed)

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A send completes when its sender's share is done (eager), when the message has arrived (classic
        Hockney), or when its receiver has taken it (rendezvous: the sender waits for the receiver's turn);
        its receiver is done as :meth:`end_times` says; ``origin``: :meth:`Model.completions`."""
        return completions_of_times(placed, self.transmission_times(placed), origin)

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        return {
            "law": "T = alpha + beta*m per message; a sender's messages one after another, a receiver's "
                   "one at a time (single port), no contention (Hockney 1994)",
            "params": {name: ch.to_dict() for name, ch in self.params.channels.items()},
        }
