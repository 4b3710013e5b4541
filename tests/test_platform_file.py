"""Platform files: channels chosen by level, node patterns, groups, and errors with lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.errors import InputError
from commcost.io.mapping_spec import MappingKind
from commcost.io.platform_file import load_platform
from commcost.platform import ContentionScope, Mapping

EX = Path(__file__).resolve().parent.parent / "examples"

THREE_LEVELS = """
name = "grid"
levels = ["cluster", "site"]

[[node_types]]
name = "small"
cores = 4

[[nodes]]
name = "a{i}"
type = "small"
count = 2
cluster = "A"
site = "north"

[[nodes]]
name = "b{i}"
type = "small"
count = 2
cluster = "B"
site = "north"

[[nodes]]
name = "c0"
type = "small"
cluster = "C"
site = "south"

[[channels]]
name = "shm"
level = "node"
transfers = ["shm", "shm"]

[[channels]]
name = "ib"
level = "cluster"
transfers = ["ib"]

[[channels]]
name = "tcp"
level = "site"
transfers = ["shm", "tcp", "shm"]
contention = "node"

[[channels]]
name = "wan"
level = "world"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "platform.toml"
    path.write_text(text)
    return path


def test_the_paper000_example_loads_with_its_mapping():
    platform, spec = load_platform(EX / "paper000" / "platform.toml")
    assert [n.name for n in platform.nodes] == ["node0", "node1"]
    assert [(c.name, c.id, c.transfers) for c in platform.channels] == [
        ("shm", 0, ("shm", "shm")), ("ib", 1, ("ib",))]
    assert spec.kind is MappingKind.SEQUENTIAL and spec.ppn == 3


def test_channels_follow_the_innermost_shared_level(tmp_path):
    platform, spec = load_platform(write(tmp_path, THREE_LEVELS))
    assert spec is None
    assert [n.name for n in platform.nodes] == ["a0", "a1", "b0", "b1", "c0"]
    mapping = Mapping.on_nodes([0, 0, 1, 2, 4])  # ranks on a0, a0, a1, b0, c0
    src = np.array([0, 0, 0, 0])
    dst = np.array([1, 2, 3, 4])
    names = [platform.channels[i].name for i in platform.channel_indices(mapping, src, dst)]
    assert names == ["shm", "ib", "tcp", "wan"]
    wan = platform.channel("wan")
    assert wan.transfers == ("wan",) and wan.id == 3  # defaults: transfers = [name], id = position
    assert platform.channel("tcp").contention is ContentionScope.NODE


def test_node_contention_gives_one_domain_per_sending_node(tmp_path):
    platform, _ = load_platform(write(tmp_path, THREE_LEVELS))
    mapping = Mapping.on_nodes([0, 2, 1, 3])  # a0, b0, a1, b1: 0->1 and 2->3 cross clusters on tcp
    src, dst = np.array([0, 2, 0]), np.array([1, 3, 3])
    channel = platform.channel_indices(mapping, src, dst)
    domains = platform.contention_domains(mapping, src, channel)
    assert domains[0] != domains[1] and domains[0] == domains[2]


@pytest.mark.parametrize("edit, message", [
    (("count = 2\ncluster = \"A\"", "count = \"two\"\ncluster = \"A\""),
     "line 12: nodes[0].count: expected an integer >= 1, got a string 'two'"),
    (("cores = 4", "cores = 4\ncorez = 2"), "line 8: node_types[0].corez: unknown field 'corez'"),
    (("type = \"small\"\ncount = 2\ncluster = \"B\"", "type = \"big\"\ncount = 2\ncluster = \"B\""),
     "line 18: nodes[1].type: unknown node type 'big'"),
    (("contention = \"node\"", "contention = \"socket\""),
     "line 43: channels[2].contention: expected one of ['channel', 'node', 'receiver-node'], got 'socket'"),
    (("level = \"site\"", "level = \"planet\""), "channel 'tcp' has level 'planet'"),
    (("name = \"c0\"", "name = \"c{i}\"\ncount = 2"), ""),  # a pattern with a count is fine
    (("name = \"a{i}\"", "name = \"a\""), "nodes[0].name: count = 2 needs a name pattern with {i}"),
    (("site = \"south\"", ""), "line 23: nodes[2]: missing field 'site'"),
    (("levels = [\"cluster\", \"site\"]", "levels = [\"cluster\", \"site\""), "line 5: not valid TOML"),
    (("name = \"ib\"", "name = \"shm\""),
     "line 35: channels[1].name: channel name 'shm' is used twice; expected unique channel names"),
    (("cores = 4", "cores = 4\nmemory_bytes = 0"), "line 8: node_types[0].memory_bytes: expected an integer >= 1"),
    (("cores = 4", "cores = 4\nmemory_bytes = \"256GiB\""),
     "node_types[0].memory_bytes: expected an integer >= 1, got a string"),
    (("cores = 4", "cores = 4\nmemory_bytes = 1e12"), "node_types[0].memory_bytes: expected an integer >= 1"),
    (("cores = 4", "cores = 4\nmemory_bytes = 9223372036854775807"),
     "node_types[0].memory_bytes: expected at most 1 PiB"),
    (("cores = 4", "cores = 4\nmemory_bytes = 274877906944"), ""),
    (("cores = 4", "cores = 4\ncores_per_cache = 5"),
     "line 8: node_types[0].cores_per_cache: 5 is more than the node type's 4 cores"),
    (("cores = 4", "cores = 4\ncores_per_cache = 0"), "node_types[0].cores_per_cache: expected an integer >= 1"),
    (("name = \"wan\"\nlevel = \"world\"", "name = \"wan\"\nlevel = \"cache\""),
     "channel 'wan' serves level 'cache' but no node type states cores_per_cache"),
    (("cores = 4", "cores = 4\ncores_per_cache = 2"), ""),  # groups without a cache channel: the node's
])
def test_bad_platforms_name_file_line_and_field(tmp_path, edit, message):
    old, new = edit
    assert old in THREE_LEVELS
    path = write(tmp_path, THREE_LEVELS.replace(old, new, 1))
    if not message:
        load_platform(path)
        return
    with pytest.raises(InputError) as info:
        load_platform(path)
    assert str(info.value).startswith(f"{path}:")
    assert message in str(info.value)


CORE_PAIRS = THREE_LEVELS.replace("cores = 4", "cores = 4\ncores_per_cache = 2", 1) + """
[[channels]]
name = "pair"
level = "cache"
transfers = ["shm", "shm"]
"""


def test_ranks_on_cores_that_share_a_cache_use_the_cache_channel(tmp_path):
    platform, _ = load_platform(write(tmp_path, CORE_PAIRS))
    assert platform.cache_channel.name == "pair" and platform.nodes[0].type.cores_per_cache == 2
    # a0 holds ranks 0, 1, 2 and 5 (cores 0, 1, 2, 3 in rank order); rank 3 on a1, rank 4 on a0 too
    mapping = Mapping.on_nodes([0, 0, 0, 1, 0])
    src, dst = np.array([0, 1, 0, 2, 2, 3]), np.array([1, 0, 2, 4, 3, 0])
    names = [platform.channels[i].name for i in platform.channel_indices(mapping, src, dst)]
    # cores: rank 0 -> 0, 1 -> 1, 2 -> 2, 4 -> 3: pairs (0, 1) and (2, 3)
    assert names == ["pair", "pair", "shm", "pair", "ib", "ib"]
    plain, _ = load_platform(write(tmp_path, THREE_LEVELS))  # no cache channel: the node's for every pair
    assert [plain.channels[i].name for i in plain.channel_indices(mapping, src, dst)] == \
        ["shm", "shm", "shm", "shm", "ib", "ib"]


def test_a_rank_of_several_cores_takes_its_first_core_and_pushes_the_next_ranks_on():
    from commcost.platform.platform import first_cores

    mapping = Mapping(np.array([0, 1, 0, 0, 1]), np.zeros(5, np.int8), np.array([3, 1, 1, 2, 4]))
    assert first_cores(mapping).tolist() == [0, 0, 3, 4, 1]


def test_a_missing_channel_is_reported_when_a_mapping_needs_it(tmp_path):
    text = THREE_LEVELS.split("[[channels]]\nname = \"wan\"")[0]
    platform, _ = load_platform(write(tmp_path, text))
    with pytest.raises(InputError, match="no channel serves level.*world"):
        platform.channel_indices(Mapping.on_nodes([0, 4]), np.array([0]), np.array([1]))


@pytest.mark.parametrize("mapping, message", [
    ('kind = "sequential"', "mapping: missing field 'ppn'"),
    ('kind = "sequential"\nppm = 3', "mapping.ppm: unknown field 'ppm'"),
    ('kind = "spiral"', "mapping.kind: expected one of"),
])
def test_bad_mapping_sections(tmp_path, mapping, message):
    path = write(tmp_path, THREE_LEVELS + f"\n[mapping]\n{mapping}\n")
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        load_platform(path)


def test_a_node_types_memory_bounds_the_buffer_each_of_its_ranks_can_hold(tmp_path):
    """memory_bytes: the least of memory // ranks over the nodes used that state it (a select past it is
    refused); None where no node used states its memory."""
    from commcost.platform.mapping import largest_buffer

    text = THREE_LEVELS.replace("cores = 4", "cores = 4\nmemory_bytes = 1000", 1)
    platform, _ = load_platform(write(tmp_path, text))
    assert platform.nodes[0].type.memory_bytes == 1000
    assert largest_buffer(platform, Mapping.on_nodes([0, 0, 0, 1])) == (333, 0, 3)
    assert largest_buffer(platform, Mapping.on_nodes([0, 1])) == (1000, 0, 1)
    plain, _ = load_platform(write(tmp_path, THREE_LEVELS))
    assert largest_buffer(plain, Mapping.on_nodes([0, 0, 0, 1])) is None


def test_ranks_on_one_socket_use_the_socket_channel(tmp_path):
    """A channel of level "socket" joins ranks of one node whose first cores are in one socket (the node type's
    cores split in order into ``sockets`` runs; paper 001's on-socket against on-node, off-socket); the cache
    channel still wins inside a socket, and without a socket channel nothing changes."""
    text = (EX / "peak" / "platform-sockets.toml").read_text()
    platform, _ = load_platform(write(tmp_path, text))
    assert platform.socket_channel.name == "socket" and platform.nodes[0].type.sockets == 2
    mapping = Mapping.sequential(platform, 50, 42)  # ranks 0-41 on p0 (cores 0-20: socket 0), 42-49 on p1
    src, dst = np.array([0, 0, 0, 20, 21, 0, 42]), np.array([1, 2, 20, 21, 41, 42, 49])
    names = [platform.channels[i].name for i in platform.channel_indices(mapping, src, dst)]
    # cores 20 and 21: one pair of the node's cores in order, on two sockets (21 cores each): the pair's channel
    assert names == ["pair", "socket", "socket", "pair", "socket", "ib", "socket"]
    caches, _ = load_platform(EX / "peak" / "platform-caches.toml")
    assert caches.socket_channel is None
    assert [caches.channels[i].name for i in caches.channel_indices(mapping, src, dst)] == \
        ["pair", "shm", "shm", "pair", "shm", "ib", "shm"]
    one = text.replace("sockets = 2", "sockets = 1")  # one socket: every rank of a node is on it
    single, _ = load_platform(write(tmp_path, one))
    assert {single.channels[i].name for i in single.channel_indices(mapping, src[:5], dst[:5])} == {"pair", "socket"}
