"""HLogGP: LogGP with per-processor overheads and per-link latency and gaps.

Bosque and Pastor, "A parallel computational model for heterogeneous
clusters", IEEE TPDS 17(12), 2006 (paper 000 ref [23], discussed in its
section 2): the scalar parameters of LogGP become vectors over the P
processors (o_send_s[i], o_recv_s[i]) and matrices over pairs of processors
(L_s[i,j], g_s[i,j], G_s_per_byte[i,j]). The law is LogGP's
(:func:`commcost.models.timeline.loggp_end_times`): a message of m bytes
from i to j alone costs o_send[i] + (m-1) G[i,j] + L[i,j] + o_recv[j]; a
sender injects its messages one after another, the next max(g[i,j],
o_send[i] + (m-1) G[i,j]) later; a receiver j takes them one at a time, in
order of arrival, its port the next max(g[i,j], (m-1) G[i,j]) after the
one before, and its processor spends o_recv[j] on each after that. No channel contention, and posted sends are priced
like a sequence of blocking sends. "HLogGP becomes LogGPH when the nodes of
the platform are identical" (paper 000 section 5).

P x P matrices cannot be written down for large P, so the parameters are
given compactly and gathered per transmission:

* processors, by node type (``Platform`` NodeType.name): a rank takes
  ``"<type>:gpu"`` if it is a GPU rank and that entry exists, else
  ``"<type>"``, else ``"default"``;
* links, by channel: a transmission from a node of type s to a node of
  type d over channel c takes ``"<c>:<s>:<d>"`` (directed: give both
  directions for a symmetric pair) if it exists, else ``"<c>"``;
* explicit overrides, applied last: ``ranks = {rank: {o_send_s, o_recv_s}}``
  (either field may be left out) and ``pairs = [[src, dst, L_s, g_s,
  G_s_per_byte], ...]`` (directed).

Entries naming node types, channels or ranks the run does not have are
ignored, so one file serves several platforms and runs of several sizes;
a rank or transmission that no entry covers is an InputError at pricing.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn

import numpy as np

from commcost.errors import InputError
from commcost.models.base import Cost, Model, PlacedSchedule, register_model
from commcost.models.fields import read_number, read_numbers, read_tables, within
from commcost.models.loggp import completions_of, end_times_of, receive_occupancy_of
from commcost.models.timeline import LogGPArrays
from commcost.platform import RankKind

DEFAULT = "default"
GPU_SUFFIX = ":gpu"
HLOGGP_LAW = ("inj = o_send[i] + (m-1)*G[i,j]; sender i starts its next message max(g[i,j], inj) later; "
              "arrival = start + inj + L[i,j]; receiver j takes one at a time, its port "
              "max(g[i,j], (m-1)*G[i,j]) each, then o_recv[j] each "
              "(one message: o_send[i] + L[i,j] + (m-1)G[i,j] + o_recv[j]); no contention, "
              "posted sends priced as a sequence")


@dataclass(frozen=True)
class Processor:
    """The overheads of one kind of processor: sending and receiving a message (seconds)."""

    o_send_s: float
    o_recv_s: float

    UNITS: ClassVar[dict[str, str]] = {"o_send_s": "seconds", "o_recv_s": "seconds"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Processor":
        """From ``{o_send_s, o_recv_s}``."""
        return cls(**read_numbers(data, cls.UNITS))

    def to_dict(self) -> dict[str, float]:
        """Plain data for a TOML section."""
        return {"o_send_s": self.o_send_s, "o_recv_s": self.o_recv_s}


@dataclass(frozen=True)
class Link:
    """Latency, gap (seconds) and gap per byte of the link between two processors."""

    L_s: float
    g_s: float
    G_s_per_byte: float

    UNITS: ClassVar[dict[str, str]] = {"L_s": "seconds", "g_s": "seconds", "G_s_per_byte": "seconds per byte"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Link":
        """From ``{L_s, g_s, G_s_per_byte}``."""
        return cls(**read_numbers(data, cls.UNITS))

    def to_dict(self) -> dict[str, float]:
        """Plain data for a TOML section."""
        return {"L_s": self.L_s, "g_s": self.g_s, "G_s_per_byte": self.G_s_per_byte}

    @property
    def values(self) -> tuple[float, float, float]:
        """(L_s, g_s, G_s_per_byte)."""
        return (self.L_s, self.g_s, self.G_s_per_byte)


@dataclass(frozen=True)
class RankOverride:
    """One rank's own overheads; a field left None keeps its node type's value."""

    o_send_s: float | None = None
    o_recv_s: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RankOverride":
        """From ``{o_send_s?, o_recv_s?}`` with at least one of them."""
        if not isinstance(data, dict) or not data:
            raise InputError(f"expected a table with o_send_s and/or o_recv_s, got {data!r}")
        for key in data:
            if key not in Processor.UNITS:
                raise InputError(f"unknown key {key!r}; expected o_send_s, o_recv_s", where=str(key))
        return cls(**{key: read_number(value, "seconds", key) for key, value in data.items()})

    def to_dict(self) -> dict[str, float]:
        """Plain data for a TOML section (only the fields set)."""
        return {k: v for k, v in (("o_send_s", self.o_send_s), ("o_recv_s", self.o_recv_s)) if v is not None}


@dataclass(frozen=True)
class HLogGPParams:
    """HLogGP parameters, compact: processors by node type, links by channel, explicit overrides."""

    processors: dict[str, Processor]
    links: dict[str, Link]
    ranks: dict[int, RankOverride] = field(default_factory=dict)
    pairs: dict[tuple[int, int], Link] = field(default_factory=dict)

    KEYS: ClassVar[tuple[str, ...]] = ("processors", "links", "ranks", "pairs")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HLogGPParams":
        """From ``{processors: {type: {...}}, links: {channel: {...}}, ranks?: {...}, pairs?: [...]}``."""
        if not isinstance(data, dict):
            raise InputError(f"expected a table with processors and links, got {data!r}")
        for key in data:
            if key not in cls.KEYS:
                raise InputError(f"unknown key {key!r}; expected {', '.join(cls.KEYS)}", where=str(key))
        for key in ("processors", "links"):
            if key not in data:
                raise InputError(f"missing {key}; expected [hloggp.{key}.<name>] tables", where=key)
        try:
            processors = read_tables(data["processors"], Processor.from_dict, "o_send_s, o_recv_s",
                                     "[hloggp.processors.default] o_send_s = 1e-6, o_recv_s = 1e-6")
        except InputError as exc:
            raise within("processors", exc) from None
        for name in processors:
            _check_name(name, "processors", 0 if not name.endswith(GPU_SUFFIX) else 1,
                        '"default", "<nodetype>" or "<nodetype>:gpu"')
        try:
            links = read_tables(data["links"], Link.from_dict, "L_s, g_s, G_s_per_byte",
                                "[hloggp.links.ib] L_s = 2e-6, g_s = 1e-6, G_s_per_byte = 1e-10")
        except InputError as exc:
            raise within("links", exc) from None
        for name in links:
            _check_name(name, "links", 0 if ":" not in name else 2,
                        '"<channel>" or "<channel>:<srctype>:<dsttype>"')
        return cls(processors, links, _read_ranks(data.get("ranks", {})), _read_pairs(data.get("pairs", [])))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a TOML section; round-trips through :meth:`from_dict`."""
        out: dict[str, Any] = {
            "processors": {name: p.to_dict() for name, p in self.processors.items()},
            "links": {name: link.to_dict() for name, link in self.links.items()},
        }
        if self.ranks:
            out["ranks"] = {str(rank): o.to_dict() for rank, o in sorted(self.ranks.items())}
        if self.pairs:
            out["pairs"] = [[src, dst, *link.values] for (src, dst), link in sorted(self.pairs.items())]
        return out

    def processor(self, node_type: str, gpu: bool) -> Processor | None:
        """The entry a rank on a node of ``node_type`` takes (before rank overrides)."""
        names = ([node_type + GPU_SUFFIX] if gpu else []) + [node_type, DEFAULT]
        return next((self.processors[n] for n in names if n in self.processors), None)

    def per_rank(self, placed: PlacedSchedule) -> tuple[np.ndarray, np.ndarray]:
        """o_send_s[i] and o_recv_s[i] for every rank of the mapping (NaN where no entry applies)."""
        types, type_of_rank = _rank_types(placed)
        gpu = (placed.mapping.kind == RankKind.GPU).astype(np.int64)
        table = np.full((len(types), 2, 2), np.nan)
        for t, name in enumerate(types):
            for is_gpu in (0, 1):
                proc = self.processor(name, bool(is_gpu))
                if proc is not None:
                    table[t, is_gpu] = (proc.o_send_s, proc.o_recv_s)
        values = table[type_of_rank, gpu]
        nranks = len(type_of_rank)
        for column, attr in enumerate(("o_send_s", "o_recv_s")):
            given = [(r, getattr(o, attr)) for r, o in self.ranks.items()
                     if r < nranks and getattr(o, attr) is not None]
            if given:
                ranks, vals = np.array(given).T
                values[ranks.astype(np.int64), column] = vals
        return values[:, 0], values[:, 1]

    def per_transmission(self, placed: PlacedSchedule) -> LogGPArrays:
        """The five HLogGP values of every transmission: o_send[src], o_recv[dst], L, g, G[src, dst]."""
        s = placed.schedule
        o_send_rank, o_recv_rank = self.per_rank(placed)
        o_send, o_recv = o_send_rank[s.src], o_recv_rank[s.dst]
        for values, ranks, what in ((o_send, s.src, "o_send_s"), (o_recv, s.dst, "o_recv_s")):
            if np.isnan(values).any():
                self._no_processor(placed, int(ranks[np.argmax(np.isnan(values))]), what)
        link = self._link_values(placed)
        return LogGPArrays(o_send, o_recv, link[:, 0], link[:, 1], link[:, 2])

    def _link_values(self, placed: PlacedSchedule) -> np.ndarray:
        s, platform = placed.schedule, placed.platform
        types, type_of_rank = _rank_types(placed)
        type_index = {name: t for t, name in enumerate(types)}
        chan_index = {ch.name: c for c, ch in enumerate(platform.channels)}
        table = np.full((len(platform.channels), len(types), len(types), 3), np.nan)
        for name, link in self.links.items():  # plain channel entries first, pair-of-types entries over them
            if name in chan_index:
                table[chan_index[name]] = link.values
        for name, link in self.links.items():
            c, _, rest = name.partition(":")
            src_type, _, dst_type = rest.partition(":")
            if rest and c in chan_index and src_type in type_index and dst_type in type_index:
                table[chan_index[c], type_index[src_type], type_index[dst_type]] = link.values
        ts, td = type_of_rank[s.src], type_of_rank[s.dst]
        values = table[placed.channel, ts, td]
        nranks = len(type_of_rank)
        pairs = [(a * nranks + b, link) for (a, b), link in self.pairs.items() if a < nranks and b < nranks]
        if pairs and len(values):
            pairs.sort(key=lambda kv: kv[0])
            keys = np.array([k for k, _ in pairs], dtype=np.int64)
            rows = np.array([link.values for _, link in pairs])
            wanted = s.src * nranks + s.dst
            at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            hit = keys[at] == wanted
            values[hit] = rows[at[hit]]
        missing = np.isnan(values[:, 0])
        if missing.any():
            i = int(np.argmax(missing))
            channel = platform.channels[placed.channel[i]].name
            pair = f"{types[ts[i]]}:{types[td[i]]}"
            raise InputError(
                f"HLogGP parameters have no link entry for channel {channel!r} from node type "
                f"{types[ts[i]]!r} to {types[td[i]]!r} (rank {s.src[i]} -> {s.dst[i]}); "
                f"expected links.{channel} or links.\"{channel}:{pair}\"",
                where=f"{HLogGP.NAME}.links.{channel}",
            )
        return values

    def _no_processor(self, placed: PlacedSchedule, rank: int, what: str) -> NoReturn:
        types, type_of_rank = _rank_types(placed)
        node_type = types[type_of_rank[rank]]
        gpu = placed.mapping.kind[rank] == RankKind.GPU
        names = ([f'"{node_type}{GPU_SUFFIX}"'] if gpu else []) + [node_type, DEFAULT]
        raise InputError(
            f"HLogGP parameters give no {what} for rank {rank} ({'GPU' if gpu else 'CPU'} rank on a node of type "
            f"{node_type!r}); expected one of " + ", ".join(f"processors.{n}" for n in names),
            where=f"{HLogGP.NAME}.processors.{node_type}",
        )


def _check_name(name: str, section: str, colons: int, expected: str) -> None:
    parts = name.split(":")
    if len(parts) != colons + 1 or not all(parts):
        raise InputError(f"bad entry name {name!r}; expected {expected}", where=f"{section}.{name}")


def _read_ranks(data: Any) -> dict[int, RankOverride]:
    if not isinstance(data, dict):
        raise InputError(f"expected tables of rank overrides, e.g. [hloggp.ranks.0] o_send_s = 1e-6, got {data!r}",
                         where="ranks")
    ranks: dict[int, RankOverride] = {}
    for key, entry in data.items():
        if isinstance(key, bool) or not (isinstance(key, numbers.Integral) and key >= 0
                                         or isinstance(key, str) and key.isascii() and key.isdigit()):
            raise InputError(f"expected a rank number >= 0 as key, got {key!r}", where=f"ranks.{key}")
        rank = int(key)
        if rank in ranks:
            raise InputError(f"rank {rank} is given twice; expected one entry per rank", where=f"ranks.{key}")
        try:
            ranks[rank] = RankOverride.from_dict(entry)
        except InputError as exc:
            raise within(f"ranks.{key}", exc) from None
    return ranks


def _read_pairs(data: Any) -> dict[tuple[int, int], Link]:
    shape = "[src, dst, L_s, g_s, G_s_per_byte]"
    if not isinstance(data, (list, tuple)):
        raise InputError(f"expected a list of {shape}, got {data!r}", where="pairs")
    pairs: dict[tuple[int, int], Link] = {}
    for i, row in enumerate(data):
        where = f"pairs[{i}]"
        if not isinstance(row, (list, tuple)) or len(row) != 5:
            raise InputError(f"expected {shape}, got {row!r}", where=where)
        for j, name in enumerate(("src", "dst")):
            if isinstance(row[j], bool) or not isinstance(row[j], numbers.Integral) or row[j] < 0:
                raise InputError(f"expected a rank number >= 0 ({name}), got {row[j]!r}", where=f"{where}.{name}")
        src, dst = int(row[0]), int(row[1])
        if src == dst:
            raise InputError(f"src and dst are both {src}; expected two different ranks", where=where)
        if (src, dst) in pairs:
            raise InputError(f"pair {src} -> {dst} is given twice; expected one entry per (src, dst)", where=where)
        try:
            pairs[(src, dst)] = Link.from_dict(dict(zip(Link.UNITS, row[2:])))
        except InputError as exc:
            raise within(where, exc) from None
    return pairs


def _rank_types(placed: PlacedSchedule) -> tuple[list[str], np.ndarray]:
    """The node type names of the platform and each rank's index into them."""
    names = [node.type.name for node in placed.platform.nodes]
    types = list(dict.fromkeys(names))
    index = {name: t for t, name in enumerate(types)}
    type_of_node = np.array([index[name] for name in names], dtype=np.int64)
    return types, type_of_node[placed.mapping.node_of_rank]


@register_model
class HLogGP(Model):
    """HLogGP (Bosque & Pastor 2006): LogGP with processor vectors and link matrices."""

    NAME = "hloggp"
    DESCRIPTION = "HLogGP (Bosque & Pastor 2006): LogGP with overheads per processor and L, g, G per pair"
    PARAMS = HLogGPParams

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        return end_times_of(placed, self.params.per_transmission(placed), self.reduction_service_s(placed.schedule))

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        """max(g, (m-1) G) of each transmission's link: its hold on the receiver's port."""
        return receive_occupancy_of(placed, self.params.per_transmission(placed))

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return completions_of(placed, self.params.per_transmission(placed), self.reduction_service_s(placed.schedule),
                              origin)

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        return {
            "law": HLOGGP_LAW,
            "params": self.params.to_dict(),
        }
