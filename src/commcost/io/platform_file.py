"""Platform files (TOML): node types, nodes, group levels, channels and a default mapping.

See ``docs/file-formats.md`` for the whole format. In short::

    name = "two-clusters"
    levels = ["cluster"]                 # group levels, inner to outer (optional)
    [[node_types]]
    name = "xeon16"; cores = 16; sockets = 2; gpus = 0
    [[nodes]]
    name = "a{i}"; type = "xeon16"; count = 4; cluster = "A"
    [[channels]]
    name = "shm"; level = "node"; transfers = ["shm", "shm"]
    [mapping]
    kind = "sequential"; ppn = 16
"""

from __future__ import annotations

from pathlib import Path

from commcost.errors import InputError
from commcost.io.mapping_spec import MappingKind, MappingSpec
from commcost.io.toml_file import Table, read_toml
from commcost.platform.platform import Channel, ContentionScope, Node, NodeType, Platform
from commcost.units import MAX_NBYTES

_MAPPING_FIELDS = {
    MappingKind.SEQUENTIAL: ("ppn",),
    MappingKind.ROUND_ROBIN: ("nodes",),
    MappingKind.RANDOM: ("ppn", "seed"),
    MappingKind.FILE: ("path",),
    MappingKind.LAYOUT: ("path", "row"),
}


def load_platform(path: str | Path) -> tuple[Platform, MappingSpec | None]:
    """Read a platform file; returns the platform and its ``[mapping]`` (None when absent)."""
    root = Table.root(read_toml(path))
    root.only("name", "levels", "node_types", "nodes", "channels", "mapping", "network")
    levels = root.strings("levels", default=[], nonempty=False)
    for level in levels:
        if level in ("node", "world"):
            raise root.error("levels", f"{level!r} is built in; expected only group levels such as 'cluster'")
    types = _node_types(root)
    nodes = _nodes(root, types, levels)
    channels = _channels(root)
    try:
        platform = Platform(root.text("name", default=Path(path).stem), tuple(types.values()),
                            tuple(nodes), tuple(channels), tuple(levels), _network(root))
    except InputError as exc:
        raise root.error(exc.where, exc.message) from None
    net = platform.network
    if net is not None and net.routers * net.nodes_per_router < len(nodes):
        raise root.error("network", f"the torus holds {net.routers * net.nodes_per_router} nodes "
                                    f"({' x '.join(map(str, net.dims))} routers of {net.nodes_per_router}); "
                                    f"expected room for the {len(nodes)} nodes")
    mapping = root.table("mapping", default=None)
    return platform, (_mapping(mapping) if mapping is not None else None)


def _network(root: Table):
    """``[network] topology = "torus3d", dims = [X, Y, Z], nodes_per_router = N`` (paper 001's Blue Waters:
    Gemini routers of two nodes), or ``topology = "flat"`` / no section: None."""
    from commcost.platform.network import Torus3D

    table = root.table("network", default=None)
    if table is None:
        return None
    table.only("topology", "dims", "nodes_per_router")
    if table.text("topology", choices=["torus3d", "flat"]) == "flat":
        return None
    dims = table.raw("dims")
    if not (isinstance(dims, list) and len(dims) == 3 and all(isinstance(d, int) and not isinstance(d, bool)
                                                              and d >= 1 for d in dims)):
        raise table.error("dims", f"expected three integers >= 1 (X, Y, Z routers), got {dims!r}")
    per = table.integer("nodes_per_router", default=1, minimum=1)
    return Torus3D(tuple(dims), per)


def _node_types(root: Table) -> dict[str, NodeType]:
    types: dict[str, NodeType] = {}
    for entry in root.tables("node_types"):
        entry.only("name", "cores", "sockets", "gpus", "memory_bytes", "cores_per_cache")
        name = entry.text("name")
        if name in types:
            raise entry.error("name", f"node type {name!r} is declared twice")
        memory = entry.integer("memory_bytes", None, minimum=1)
        if memory is not None and memory > MAX_NBYTES:
            raise entry.error("memory_bytes", f"expected at most 1 PiB ({MAX_NBYTES} bytes), got {memory}")
        cores = entry.integer("cores", minimum=1)
        per_cache = entry.integer("cores_per_cache", None, minimum=1)
        if per_cache is not None and per_cache > cores:
            raise entry.error("cores_per_cache", f"{per_cache} is more than the node type's {cores} cores; expected "
                              "at most its cores")
        types[name] = NodeType(name, cores, entry.integer("sockets", 1, minimum=1),
                               entry.integer("gpus", 0, minimum=0), memory, per_cache)
    if not types:
        raise root.error("node_types", "expected at least one [[node_types]]")
    return types


MAX_NODES = 1 << 20  # a million ranks at one per node; each node is an object (1,000,000 load in about 4 s)


def _nodes(root: Table, types: dict[str, NodeType], levels: tuple[str, ...]) -> list[Node]:
    nodes: list[Node] = []
    for entry in root.tables("nodes"):
        entry.only("name", "type", "count", "start", *levels)
        type_name = entry.text("type")
        if type_name not in types:
            raise entry.error("type", f"unknown node type {type_name!r}; expected one of {list(types)}")
        count = entry.integer("count", 1, minimum=1)
        if len(nodes) + count > MAX_NODES:
            raise entry.error("count", f"{len(nodes) + count:,} nodes in all is past the limit of {MAX_NODES:,}; "
                                       "expected fewer")
        start = entry.integer("start", 0, minimum=0)
        pattern = entry.text("name")
        if count > 1 and "{i}" not in pattern:
            raise entry.error("name", f"count = {count} needs a name pattern with {{i}}, e.g. 'node{{i}}'")
        groups = tuple(entry.text(level) for level in levels)
        for i in range(start, start + count):
            nodes.append(Node(pattern.replace("{i}", str(i)), types[type_name], groups))
    return nodes


def _channels(root: Table) -> list[Channel]:
    channels = []
    for index, entry in enumerate(root.tables("channels")):
        entry.only("name", "id", "level", "transfers", "contention", "nominal_latency_s", "nominal_bandwidth",
                   "eager_limit_bytes", "copy_limit_bytes", "backpressure_from_bytes")
        name = entry.text("name")
        if any(c.name == name for c in channels):
            raise entry.error("name", f"channel name {name!r} is used twice; expected unique channel names")
        contention = entry.text("contention", "channel", choices=[c.value for c in ContentionScope])
        eager = entry.integer("eager_limit_bytes", None, minimum=1)
        copy = entry.integer("copy_limit_bytes", None, minimum=1)
        if copy is not None and (eager is None or copy >= eager):
            raise entry.error("copy_limit_bytes", f"{copy} is not below the channel's eager limit ({eager}); expected "
                              "an eager_limit_bytes above it")
        held = entry.integer("backpressure_from_bytes", None, minimum=0)
        if held is not None and (eager is None or held > eager):
            raise entry.error("backpressure_from_bytes", f"{held} is not at most the channel's eager limit ({eager}); "
                              "expected an eager_limit_bytes at or above it")
        channels.append(Channel(name, entry.integer("id", index, minimum=0), entry.text("level"),
                                entry.strings("transfers", default=[name]), ContentionScope(contention),
                                entry.positive("nominal_latency_s", None), entry.positive("nominal_bandwidth", None),
                                eager, copy, held))
    return channels


def _mapping(table: Table) -> MappingSpec:
    kind = MappingKind(table.text("kind", choices=[k.value for k in MappingKind]))
    table.only("kind", *_MAPPING_FIELDS[kind])
    if kind is MappingKind.SEQUENTIAL:
        return MappingSpec(kind, ppn=table.integer("ppn", minimum=1))
    if kind is MappingKind.ROUND_ROBIN:
        return MappingSpec(kind, nodes=table.integer("nodes", None, minimum=1) if table.has("nodes") else None)
    if kind is MappingKind.RANDOM:
        return MappingSpec(kind, ppn=table.integer("ppn", minimum=1), seed=table.integer("seed", 0, minimum=0))
    if kind is MappingKind.FILE:
        return MappingSpec(kind, path=table.text("path"))
    return MappingSpec(kind, path=table.text("path"), row=table.text("row"))
