"""The machine: node types, nodes, groups of nodes, and the channels that join ranks.

A channel is chosen by where two ranks run: on cores of one node that share
a cache (``cache``, where the node type states ``cores_per_cache``), on the
same node, in the same group of some level (a cluster, a site, ...), or in
different top-level groups ("world"). A channel also says which transfers one transmission
through it is made of (paper 000, eq. 1-3): shared memory is two shm
transfers, TCP is shm + net + shm, RDMA is one net transfer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from commcost.errors import InputError

if TYPE_CHECKING:
    from commcost.platform.network import Torus3D

class Placement(Protocol):
    """What the platform needs of a placement: the node index of every rank (a
    :class:`~commcost.platform.mapping.Mapping`, which imports this module, not the other way round)."""

    node_of_rank: np.ndarray
    cores: np.ndarray


CACHE_LEVEL = "cache"  # ranks of one node on cores that share a cache: inside the socket level
SOCKET_LEVEL = "socket"  # ranks of one node on the cores of one socket: inside the node level
NODE_LEVEL = "node"
WORLD_LEVEL = "world"


class ContentionScope(enum.Enum):
    """Which transmissions of a channel share its capacity (tau-Lop's concurrency tau)."""

    CHANNEL = "channel"  # every transmission on the channel (paper 000, Fig. 8 and eq. 8-10)
    NODE = "node"  # only transmissions sent from the same node
    RECEIVER_NODE = "receiver-node"  # only transmissions going into the same node (libtaulop's rule)


@dataclass(frozen=True)
class NodeType:
    """A kind of node: how many cores, sockets and GPUs it has, and its memory where stated (the bytes its
    ranks' buffers must fit in: a select of sizes past it is refused, :func:`largest_buffer`).
    ``cores_per_cache``, where stated: its cores come in groups of that many in order, each group sharing a
    cache (a POWER9 core pair's L2 and L3 region, an AMD CCX's L3, a cluster of efficiency cores' L2); two
    ranks whose first cores are in one group use the platform's ``cache`` channel where it has one. Its
    cores are split in order into ``sockets`` equal runs: two ranks whose first cores are in one run use
    the ``socket`` channel where the platform has one (paper 001's on-socket against on-node, off-socket).
    The cache groups are counted over the node's cores, and the cache channel wins over the socket's: where a
    socket's cores are not a multiple of ``cores_per_cache`` (Peak's 21) a group spans two sockets."""

    name: str
    cores: int
    sockets: int = 1
    gpus: int = 0
    memory_bytes: int | None = None
    cores_per_cache: int | None = None


@dataclass(frozen=True)
class Node:
    """One machine, of a node type, member of one group per level (inner to outer)."""

    name: str
    type: NodeType
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Channel:
    """A kind of link between two ranks.

    ``transfers`` names the transfer tables one transmission is made of
    (paper 000 eq. 1: shm = ("shm", "shm"); eq. 2: tcp = ("shm", "tcp", "shm");
    eq. 3: ib = ("ib",)). ``level`` is where the channel is used: "node" for
    ranks on the same node ("cache" for those of them whose cores share a
    cache: :attr:`NodeType.cores_per_cache`), a group level's name for ranks on different nodes
    of the same group of that level, "world" for ranks in different
    top-level groups. ``id`` is the number the papers write as T^id.
    ``nominal_latency_s`` and ``nominal_bandwidth`` (bytes per second), when
    given, are what the hardware is said to do: a fit to measured collectives
    takes them as priors, and as the values where no measured row tells.
    ``eager_limit_bytes``, when given, is the largest message the library
    sends eagerly on this channel (Open MPI's ``btl_sm_eager_limit``, UCX's
    rendezvous threshold): a fit to measured collectives then gives the
    channel a second law above it and a sender's cost apart from the wire's
    (:class:`commcost.models.hockney.HockneyChannel`). ``copy_limit_bytes``,
    below it, is the largest eager message the library copies through its
    own buffers in one piece (UCX's bcopy threshold, its shared-memory
    segment): a fit then gives the eager messages above it a law of their own.
    ``backpressure_from_bytes``, when given with an eager limit, is the
    smallest eager message that holds its sender while its receiver's queue
    drains what arrived before it (a shared-memory FIFO of bounded depth,
    which senders fill faster than one receiver drains it; 0: every
    message): a linear gather's
    senders then wait their turn at the root, as rendezvous senders always do.
    """

    name: str
    id: int
    level: str
    transfers: tuple[str, ...]
    contention: ContentionScope = ContentionScope.CHANNEL
    nominal_latency_s: float | None = None
    nominal_bandwidth: float | None = None
    eager_limit_bytes: int | None = None
    copy_limit_bytes: int | None = None
    backpressure_from_bytes: int | None = None


@dataclass(frozen=True)
class Platform:
    """Node types, nodes, group levels and channels; answers which channel joins two ranks."""

    name: str
    node_types: tuple[NodeType, ...]
    nodes: tuple[Node, ...]
    channels: tuple[Channel, ...]
    levels: tuple[str, ...] = ()
    network: "Torus3D | None" = None  # the network's topology; None: flat (no shared links modelled)
    _channel_at_level: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _group_index: np.ndarray = field(init=False, repr=False, compare=False)
    _cache_channel: int = field(init=False, repr=False, compare=False, default=-1)
    _cores_per_cache: np.ndarray = field(init=False, repr=False, compare=False, default=None)  # per node; 0: none
    _socket_channel: int = field(init=False, repr=False, compare=False, default=-1)
    _cores_per_socket: np.ndarray = field(init=False, repr=False, compare=False, default=None)  # per node

    def __post_init__(self) -> None:
        all_levels = (NODE_LEVEL, *self.levels, WORLD_LEVEL)
        if not self.nodes:
            raise InputError("a platform needs at least one node", where="nodes")
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InputError(f"node name {dup!r} is used twice; expected unique node names", where="nodes")
        for node in self.nodes:
            if len(node.groups) != len(self.levels):
                raise InputError(
                    f"node {node.name!r} names {len(node.groups)} groups; expected one per level {list(self.levels)}",
                    where="nodes",
                )
        slots = (CACHE_LEVEL, SOCKET_LEVEL, *all_levels)  # the cache level is inside the socket's, inside the node's
        at_level = [-1] * len(slots)
        for index, channel in enumerate(self.channels):
            if channel.level not in slots:
                raise InputError(
                    f"channel {channel.name!r} has level {channel.level!r}; expected one of {list(slots)}",
                    where="channels",
                )
            slot = slots.index(channel.level)
            if at_level[slot] >= 0:
                raise InputError(
                    f"channels {self.channels[at_level[slot]].name!r} and {channel.name!r} both serve level "
                    f"{channel.level!r}; expected one channel per level",
                    where="channels",
                )
            at_level[slot] = index
        per_cache = np.array([node.type.cores_per_cache or 0 for node in self.nodes], dtype=np.int64)
        if at_level[0] >= 0 and not per_cache.any():
            raise InputError(f"channel {self.channels[at_level[0]].name!r} serves level {CACHE_LEVEL!r} but no node "
                             "type states cores_per_cache; expected one that does", where="channels")
        object.__setattr__(self, "_cache_channel", at_level[0])
        object.__setattr__(self, "_cores_per_cache", per_cache)
        object.__setattr__(self, "_socket_channel", at_level[1])
        object.__setattr__(self, "_cores_per_socket", np.array(
            [max(1, -(-node.type.cores // max(node.type.sockets, 1))) for node in self.nodes], dtype=np.int64))
        at_level = at_level[2:]
        ids = [c.id for c in self.channels]
        if len(set(ids)) != len(ids):
            raise InputError("two channels have the same id; expected unique ids", where="channels")
        # group_index[level, node] = a number naming the node's group at that level
        # (level 0 is the node itself; the last row is the one world group).
        rows = [np.arange(len(self.nodes))]
        for depth in range(len(self.levels)):
            keys = [tuple(node.groups[depth:]) for node in self.nodes]
            lookup = {key: i for i, key in enumerate(dict.fromkeys(keys))}
            rows.append(np.array([lookup[key] for key in keys]))
        rows.append(np.zeros(len(self.nodes), dtype=np.int64))
        object.__setattr__(self, "_channel_at_level", tuple(at_level))
        object.__setattr__(self, "_group_index", np.vstack(rows).astype(np.int64))

    @property
    def all_levels(self) -> tuple[str, ...]:
        """Levels from the innermost (node) to the outermost (world)."""
        return (NODE_LEVEL, *self.levels, WORLD_LEVEL)

    def group_numbers(self, depth: int) -> np.ndarray:
        """A number per node naming its group at ``all_levels[depth]`` (0: the node itself; numbered in order
        of first appearance)."""
        return self._group_index[depth]

    def node_index(self, name: str) -> int:
        """Index of the node called ``name``."""
        for index, node in enumerate(self.nodes):
            if node.name == name:
                return index
        raise InputError(f"no node is called {name!r}; expected one of the platform's nodes")

    def channel(self, name: str) -> Channel:
        """The channel called ``name``."""
        for channel in self.channels:
            if channel.name == name:
                return channel
        raise InputError(f"no channel is called {name!r}; expected one of {[c.name for c in self.channels]}")

    def level_between_nodes(self, node_a: np.ndarray, node_b: np.ndarray) -> np.ndarray:
        """Index into ``all_levels`` of the innermost level two nodes share, elementwise."""
        node_a = np.asarray(node_a)
        node_b = np.asarray(node_b)
        level = np.full(np.broadcast(node_a, node_b).shape, len(self.all_levels) - 1, dtype=np.int64)
        for depth in range(len(self.all_levels) - 2, -1, -1):
            same = self._group_index[depth, node_a] == self._group_index[depth, node_b]
            level = np.where(same & (level > depth), depth, level)
        return level

    def channel_indices(self, mapping: Placement, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Index into ``channels`` of the channel joining each (src, dst) pair of ranks."""
        node = mapping.node_of_rank
        levels = self.level_between_nodes(node[np.asarray(src)], node[np.asarray(dst)])
        table = np.array(self._channel_at_level, dtype=np.int64)
        chosen = table[levels]
        if np.any(chosen < 0):
            missing = sorted({self.all_levels[lv] for lv in np.unique(levels[chosen < 0])})
            raise InputError(
                f"no channel serves level(s) {missing}: the mapping places communicating ranks there; "
                f"expected a [[channels]] entry with level = {missing[0]!r}",
                where="channels",
            )
        if self._socket_channel >= 0 or self._cache_channel >= 0:
            src, dst = np.asarray(src), np.asarray(dst)
            same_node = levels == 0
            if np.any(same_node):
                first = first_cores(mapping)
                if self._socket_channel >= 0:  # the cores of a socket: one run of cores / sockets
                    size = self._cores_per_socket[node[src]]
                    chosen = np.where(same_node & (first[src] // size == first[dst] // size), self._socket_channel,
                                      chosen)
                if self._cache_channel >= 0:  # the cores that share a cache: groups over the node's cores
                    per = self._cores_per_cache[node[src]]
                    size = np.maximum(per, 1)
                    shared = same_node & (per > 0) & (first[src] // size == first[dst] // size)
                    chosen = np.where(shared, self._cache_channel, chosen)
        return chosen

    @property
    def socket_channel(self) -> Channel | None:
        """The channel of ranks of one node whose cores are on one socket (level ``socket``), if any."""
        return self.channels[self._socket_channel] if self._socket_channel >= 0 else None

    @property
    def cache_channel(self) -> Channel | None:
        """The channel of ranks whose cores share a cache (level ``cache``), if the platform has one."""
        return self.channels[self._cache_channel] if self._cache_channel >= 0 else None

    def contention_domains(
        self, mapping: Placement, src: np.ndarray, channel_index: np.ndarray, dst: np.ndarray | None = None
    ) -> np.ndarray:
        """A number per transmission; equal numbers share a channel's capacity (tau-Lop's tau): the whole
        channel, the sending node (``node``) or the receiving node (``receiver-node``, which needs ``dst``;
        the authors' library libtaulop groups concurrent transmissions so)."""
        by_sender = np.array([c.contention is ContentionScope.NODE for c in self.channels], dtype=bool)[channel_index]
        by_receiver = np.array([c.contention is ContentionScope.RECEIVER_NODE for c in self.channels],
                               dtype=bool)[channel_index]
        node = mapping.node_of_rank[np.asarray(src)]
        if np.any(by_receiver):
            if dst is None:
                raise ValueError("a receiver-node contention scope needs the destinations")
            node = np.where(by_receiver, mapping.node_of_rank[np.asarray(dst)], node)
        nchan = len(self.channels)
        return np.where(by_sender | by_receiver, nchan + node * nchan + channel_index, channel_index)


def first_cores(mapping: Placement) -> np.ndarray:
    """Each rank's first core on its node: the ranks of a node take its cores in rank order, each as many as it
    uses (``mapping.cores``; Open MPI's ``--map-by core --bind-to core`` and a ``ppr`` mapping do). Kept on the
    mapping once computed."""
    cached = getattr(mapping, "_first_cores", None)
    if cached is not None:
        return cached
    node = np.asarray(mapping.node_of_rank, np.int64)
    cores = np.asarray(mapping.cores, np.int64)
    order = np.argsort(node, kind="stable")
    used = cores[order]
    before = np.cumsum(used) - used  # cores taken by the ranks before, over all nodes in node order
    starts = np.r_[True, node[order][1:] != node[order][:-1]]
    run_start = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
    first = np.empty(len(node), np.int64)
    first[order] = before - before[run_start]
    try:
        object.__setattr__(mapping, "_first_cores", first)
    except (AttributeError, TypeError):  # pragma: no cover - a placement that keeps no attributes
        pass
    return first
