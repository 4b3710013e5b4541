"""Node-aware max-rate model with queue search and network contention (paper 001).

Paper 001 eq. 2 (Gropp et al. 2016's max-rate model): a message of s bytes
between ranks on different nodes costs

    T = alpha + ppn s / min(R_N, ppn R_b),

ppn the ranks of the sender's node that send off-node in the same phase
(the *actively* communicating ones), R_b the rate between two ranks and R_N
the node's injection rate: the node's link binds only when ppn R_b > R_N.
Messages within a node are not injected into the network and cost the
postal alpha + s / R_b. Section 3 splits the parameters by locality
(intra-socket, intra-node across sockets, inter-node) and by protocol
(short, eager, rendezvous, by size thresholds), Table 1
(``examples/params/bluewaters.toml``).

On top, per phase (section 4):

* queue search (eq. 3-4): a rank receiving n messages in the phase spends
  gamma n^2 searching its queues (``queue_search = "upper"``, receives
  posted in the reverse order of arrival), or gamma n^2 / 3 (``"measured"``:
  the maximum the paper measured on its SpMV and SpGEMM levels, section 5),
  or nothing (``"none"``: receives posted in arrival order);
* network contention (eq. 5-7): T_c = delta l, l the bytes on the busiest
  link; ``contention = "cube"`` takes eq. 7's perfect cube,
  l = 2 h^3 b ppn (:func:`commcost.platform.network.cube_link_bytes`),
  ``"topology"`` routes every inter-node message over the platform's torus
  and takes the busiest link's bytes (:meth:`Torus3D.link_bytes`), ``"none"``
  leaves it out.

A phase is priced like Hockney's: a rank's sends leave one after another,
each taking its max-rate time T; a transmission ends when its sender has
sent it, its receiver has searched its queue (the receiver's whole n^2),
and the phase's contention is paid: end = sum of the sender's T up to it
+ q(receiver) + T_c; a receiver then takes its messages one at a time,
each holding it for its max-rate time on the receiving side (eq. 2 with
the receiving node's active ranks as ppn: the node's injection limit binds
what comes in too). The phase time is the last end; :meth:`MaxRate.terms`
splits it into its three parts at the transmission that ends last. In a
dependency schedule (a collective algorithm) only the max-rate times count:
queue search and contention are terms of one phase's exchange.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from commcost.errors import InputError
from commcost.models.base import Cost, Model, PlacedSchedule, register_model
from commcost.models.dependency_timeline import dependency_completions
from commcost.models.fields import read_number
from commcost.models.timeline import serialized

LOCALITIES = ("intra_socket", "intra_node", "inter_node")
PROTOCOLS = ("short", "eager", "rend")
QUEUE_SEARCH = {"upper": 1.0, "measured": 1.0 / 3.0, "none": 0.0}  # factor of gamma n^2
CONTENTION = ("cube", "topology", "none")


@dataclass(frozen=True)
class MaxRateRow:
    """One (locality, protocol) row of paper 001 Table 1: latency, rate between two ranks, node rate."""

    alpha_s: float
    rate_bytes_per_s: float
    node_rate_bytes_per_s: float = math.inf  # R_N: inter-node rows only

    def to_dict(self) -> dict[str, float]:
        out = {"alpha_s": self.alpha_s, "rate_bytes_per_s": self.rate_bytes_per_s}
        if math.isfinite(self.node_rate_bytes_per_s):
            out["node_rate_bytes_per_s"] = self.node_rate_bytes_per_s
        return out


@dataclass(frozen=True)
class MaxRateParams:
    """Table 1's rows by (locality, protocol), the protocol thresholds and the section 4 penalties."""

    rows: dict[tuple[str, str], MaxRateRow]
    short_max_bytes: float = 500.0
    eager_max_bytes: float = 8192.0
    queue_gamma_s: float = 8.4e-9  # eq. 4
    queue_search: str = "upper"
    contention_delta_s_per_byte: float = 1.0e-10  # eq. 6
    contention: str = "cube"
    settings: ClassVar[tuple[str, ...]] = ("short_max_bytes", "eager_max_bytes", "queue_gamma_s", "queue_search",
                                          "contention_delta_s_per_byte", "contention")
    _arrays: dict = field(default_factory=dict, init=False, compare=False, repr=False)  # table()'s, per instance

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MaxRateParams":
        """``[maxrate]`` settings and ``[maxrate.<locality>.<protocol>] alpha_s, rate_bytes_per_s[,
        node_rate_bytes_per_s]`` for every locality of :data:`LOCALITIES` and protocol of :data:`PROTOCOLS`."""
        if not isinstance(data, dict):
            raise InputError("expected a table of max-rate parameters")
        unknown = set(data) - set(LOCALITIES) - set(cls.settings)
        if unknown:
            key = sorted(unknown)[0]
            raise InputError(f"unknown key {key!r}; expected {', '.join(cls.settings)} or the tables "
                             f"{', '.join(LOCALITIES)}", where=key)
        rows = {}
        for loc in LOCALITIES:
            table = data.get(loc)
            if not isinstance(table, dict):
                raise InputError(f"missing table [maxrate.{loc}] with rows {', '.join(PROTOCOLS)}", where=loc)
            for proto in PROTOCOLS:
                row = table.get(proto)
                where = f"{loc}.{proto}"
                if not isinstance(row, dict):
                    raise InputError("missing row; expected alpha_s and rate_bytes_per_s", where=where)
                extra = set(row) - {"alpha_s", "rate_bytes_per_s", "node_rate_bytes_per_s"}
                if extra:
                    raise InputError(f"unknown key {sorted(extra)[0]!r}; expected alpha_s, rate_bytes_per_s"
                                     + (", node_rate_bytes_per_s" if loc == "inter_node" else ""),
                                     where=f"{where}.{sorted(extra)[0]}")
                if "node_rate_bytes_per_s" in row and loc != "inter_node":
                    raise InputError("a node's injection rate limits inter-node messages only",
                                     where=f"{where}.node_rate_bytes_per_s")
                for key in ("alpha_s", "rate_bytes_per_s"):
                    if key not in row:
                        raise InputError(f"missing {key}", where=f"{where}.{key}")
                alpha = read_number(row["alpha_s"], "seconds", f"{where}.alpha_s")
                rate = read_number(row["rate_bytes_per_s"], "bytes per second", f"{where}.rate_bytes_per_s")
                node = row.get("node_rate_bytes_per_s", math.inf)
                node = math.inf if node == math.inf else read_number(node, "bytes per second",
                                                                     f"{where}.node_rate_bytes_per_s")
                if rate <= 0 or node <= 0:
                    raise InputError("expected a rate > 0", where=f"{where}.rate_bytes_per_s")
                rows[(loc, proto)] = MaxRateRow(alpha, rate, node)
        values: dict[str, Any] = {}
        for key in ("short_max_bytes", "eager_max_bytes", "queue_gamma_s", "contention_delta_s_per_byte"):
            if key in data:
                values[key] = read_number(data[key], "bytes" if key.endswith("bytes") else "seconds", key)
        for key, choices in (("queue_search", tuple(QUEUE_SEARCH)), ("contention", CONTENTION)):
            if key in data:
                if data[key] not in choices:
                    raise InputError(f"expected one of {list(choices)}, got {data[key]!r}", where=key)
                values[key] = data[key]
        params = cls(rows, **values)
        if params.eager_max_bytes < params.short_max_bytes:
            raise InputError(f"expected eager_max_bytes >= short_max_bytes ({params.short_max_bytes:g})",
                             where="eager_max_bytes")
        return params

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: getattr(self, key) for key in self.settings}
        for (loc, proto), row in self.rows.items():
            out.setdefault(loc, {})[proto] = row.to_dict()
        return out

    def table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """alpha, R_b, R_N as (locality, protocol) arrays."""
        if not self._arrays:
            for name in ("alpha_s", "rate_bytes_per_s", "node_rate_bytes_per_s"):
                self._arrays[name] = np.array([[getattr(self.rows[(loc, p)], name) for p in PROTOCOLS]
                                               for loc in LOCALITIES])
        return self._arrays["alpha_s"], self._arrays["rate_bytes_per_s"], self._arrays["node_rate_bytes_per_s"]


def locality(placed: PlacedSchedule) -> np.ndarray:
    """0 intra-socket, 1 intra-node across sockets, 2 inter-node, per transmission. A rank's socket: its
    position among its node's ranks (in rank order) times the node type's sockets over its cores."""
    mapping, platform = placed.mapping, placed.platform
    node = mapping.node_of_rank
    order = np.argsort(node, kind="stable")
    sorted_node = node[order]
    starts = np.flatnonzero(np.r_[True, sorted_node[1:] != sorted_node[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, len(node)]))
    local = np.empty(len(node), dtype=np.int64)
    local[order] = np.arange(len(node)) - first
    sockets = np.array([n.type.sockets for n in platform.nodes])[node]
    cores = np.array([n.type.cores for n in platform.nodes])[node]
    socket = np.minimum(local * sockets // np.maximum(cores, 1), sockets - 1)
    s = placed.schedule
    src, dst = s.src, s.dst
    return np.where(node[src] != node[dst], 2, np.where(socket[src] == socket[dst], 0, 1))


def active_per_node(phase: np.ndarray, src: np.ndarray, node_of_src: np.ndarray, off_node: np.ndarray) -> np.ndarray:
    """Per transmission, the ranks of its sender's node that send off-node in its phase (paper 001's ppn;
    1 for the others)."""
    out = np.ones(len(src), dtype=np.int64)
    if not off_node.any():
        return out
    nodes = int(node_of_src.max()) + 1
    ranks = int(src.max()) + 1
    group = phase[off_node] * nodes + node_of_src[off_node]  # (phase, node)
    senders = np.unique(group * ranks + src[off_node]) // ranks  # one entry per (phase, node, sender)
    keys, counts = np.unique(senders, return_counts=True)
    out[off_node] = counts[np.searchsorted(keys, group)]
    return out


@dataclass(frozen=True)
class Terms:
    """A phase's time split as paper 001 Fig. 10-11 split it (seconds), at the transmission ending last."""

    maxrate_s: float
    queue_s: float
    contention_s: float

    @property
    def time_s(self) -> float:
        return self.maxrate_s + self.queue_s + self.contention_s


@register_model
class MaxRate(Model):
    """Paper 001: node-aware max-rate (eq. 2, Table 1), queue search (eq. 3-4), network contention (eq. 5-7)."""

    NAME = "maxrate"
    DESCRIPTION = ("node-aware max-rate (paper 001): alpha + ppn s / min(R_N, ppn R_b) by locality and protocol, "
                   "plus queue search gamma n^2 and network contention delta l")
    PARAMS = MaxRateParams

    def message_times(self, placed: PlacedSchedule, receiving: bool = False) -> np.ndarray:
        """Eq. 2 per transmission: its locality's and protocol's alpha + ppn s / min(R_N, ppn R_b), ppn the
        ranks of the sender's node sending off-node in its phase (``receiving``: of the receiver's node
        receiving from off-node: the node's injection limit binds what comes in as what goes out)."""
        p: MaxRateParams = self.params
        s = placed.schedule
        alpha, rate, node_rate = p.table()
        loc = locality(placed)
        proto = np.where(s.nbytes <= p.short_max_bytes, 0, np.where(s.nbytes <= p.eager_max_bytes, 1, 2))
        node = placed.mapping.node_of_rank
        side = s.dst if receiving else s.src
        ppn = active_per_node(s.phase, side, node[side], loc == 2)
        rb, rn = rate[loc, proto], node_rate[loc, proto]
        return alpha[loc, proto] + ppn * s.nbytes / np.minimum(rn, ppn * rb)

    def receive_occupancy_s(self, placed: PlacedSchedule) -> np.ndarray:
        """Eq. 2 on the receiving side: a rank takes one message at a time, each holding it its max-rate
        time with the receiving node's active ranks as ppn."""
        return self.message_times(placed, receiving=True)

    def queue_times(self, placed: PlacedSchedule) -> np.ndarray:
        """Eq. 3 per transmission: gamma n^2 (times the queue_search factor) of its receiver, n the messages
        the receiver gets in the phase."""
        p: MaxRateParams = self.params
        s = placed.schedule
        factor = QUEUE_SEARCH[p.queue_search]
        if factor == 0 or s.ntransmissions == 0:
            return np.zeros(s.ntransmissions)
        key = s.phase * s.nprocs + s.dst
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        n = counts[inverse].astype(np.float64)
        return factor * p.queue_gamma_s * n * n

    def contention_times(self, placed: PlacedSchedule) -> np.ndarray:
        """Eq. 5 per phase: delta times the bytes on the busiest link (eq. 7's cube, or the platform's
        torus routed dimension-order)."""
        from commcost.platform.network import cube_link_bytes

        p: MaxRateParams = self.params
        s = placed.schedule
        out = np.zeros(s.nphases)
        if p.contention == "none" or s.ntransmissions == 0:
            return out
        net = placed.platform.network
        if p.contention == "topology" and net is None:
            raise InputError("contention = \"topology\" routes over the platform's network, and the platform "
                             "has none; expected a [network] topology = \"torus3d\" section in the platform "
                             "or contention = \"cube\"", where="maxrate.contention")
        node = placed.mapping.node_of_rank
        off = node[s.src] != node[s.dst]
        per_router = net.nodes_per_router if net is not None else 1
        for k in np.unique(s.phase[off]):
            m = off & (s.phase == k)
            src_node, dst_node, nbytes = node[s.src[m]], node[s.dst[m]], s.nbytes[m]
            if p.contention == "topology":
                load = float(net.link_bytes(src_node, dst_node, nbytes).max(initial=0.0))
            else:
                hops = _cube_hops(src_node, dst_node, per_router)
                senders = len(np.unique(s.src[m]))
                nodes = len(np.unique(src_node))
                load = cube_link_bytes(hops, nbytes, senders, nodes, per_router)
            out[k] = p.contention_delta_s_per_byte * load
        return out

    def _parts(self, placed: PlacedSchedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = placed.schedule
        _, sent = serialized(s.phase * s.nprocs + s.src, self.message_times(placed))
        return sent, self.queue_times(placed), self.contention_times(placed)[s.phase]

    def end_times(self, placed: PlacedSchedule) -> np.ndarray:
        s = placed.schedule
        if s.has_dependencies:
            return self.completions(placed)[1]
        sent, queue, contention = self._parts(placed)
        return self.phased_receptions(placed, sent + queue + contention)

    def completions(self, placed: PlacedSchedule, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A send completes its max-rate time after it starts; its receiver is done as :meth:`end_times`
        says; ``origin``: each rank's own start (:meth:`Model.completions`)."""
        s = placed.schedule
        busy = self.message_times(placed)
        start, _, done = dependency_completions(s.src, s.dst, s.after_ptr, s.after_idx, s.nprocs, busy, busy, busy,
                                                self.receive_service_s(placed),
                                                recv_occupancy_s=self.receive_occupancy_s(placed),
                                                recv_prev=s.recv_prev, schedule=s, origin=origin)
        return start + busy, done

    def terms(self, placed: PlacedSchedule) -> list[Terms]:
        """Per phase, its time split at the transmission that ends last: its max-rate time (its sender's up to
        it, and its wait for its receiver to take it), its receiver's queue search, the phase's contention (a
        dependency schedule: max-rate only)."""
        s = placed.schedule
        out = []
        if s.has_dependencies:
            end = self.end_times(placed)
            return [Terms(float(end.max(initial=0.0)), 0.0, 0.0)]
        sent, queue, contention = self._parts(placed)
        end = self.phased_receptions(placed, sent + queue + contention)
        for k in range(s.nphases):
            idx = np.flatnonzero(s.phase == k)
            if len(idx) == 0:
                out.append(Terms(0.0, 0.0, 0.0))
                continue
            i = idx[int(np.argmax(end[idx]))]  # its max-rate part: sent, and waiting for its receiver
            out.append(Terms(float(end[i] - queue[i] - contention[i]), float(queue[i]), float(contention[i])))
        return out

    def explain(self, placed: PlacedSchedule, cost: Cost) -> dict[str, Any]:
        p: MaxRateParams = self.params
        return {"law": "T = alpha + ppn s / min(R_N, ppn R_b) per message by locality and protocol, a sender's "
                       "messages one after another; + gamma n^2 queue search at the receiver; + delta l "
                       "contention per phase (paper 001 eq. 2-7)",
                "queue_search": p.queue_search, "contention": p.contention,
                "terms": [t.__dict__ | {"time_s": t.time_s} for t in self.terms(placed)]}


def _cube_hops(src_node: np.ndarray, dst_node: np.ndarray, per_router: int) -> np.ndarray:
    """Links between routers placed in order in the smallest cube holding them (paper 001 Fig. 8), mesh
    distances: the cube is a partition of the torus, its wrap-around links not its own."""
    from commcost.platform.network import Torus3D

    routers = int(max(src_node.max(initial=0), dst_node.max(initial=0))) // per_router + 1
    side = max(1, math.ceil(round(routers ** (1.0 / 3.0), 9)))
    while side ** 3 < routers:
        side += 1
    cube = Torus3D((side, side, side), per_router)
    return np.abs(cube.coords(src_node) - cube.coords(dst_node)).sum(axis=1)
