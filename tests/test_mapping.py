"""Mappings: sequential, round-robin, seeded random, node-per-line files, --mapping strings, rankfiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.errors import InputError
from commcost.io.layout_file import read_layout_table
from commcost.io.mapping_file import load_mapping_file, rankfile_text, write_node_names
from commcost.io.mapping_spec import MappingKind, MappingSpec, parse_mapping_option
from commcost.io.platform_file import load_platform
from commcost.platform import Mapping
from commcost.platform.layout import place_layout

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def fermi():
    return load_platform(EX / "fermi" / "platform.toml")[0]


def test_sequential_fills_a_node_before_the_next(fermi):
    assert Mapping.sequential(fermi, 7, 3).node_of_rank.tolist() == [0, 0, 0, 1, 1, 1, 2]


def test_round_robin_deals_ranks_over_nodes(fermi):
    assert Mapping.round_robin(fermi, 7, 3).node_of_rank.tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert Mapping.round_robin(fermi, 17).node_of_rank.tolist() == list(range(16)) + [0]


def test_random_is_seeded_and_keeps_ranks_per_node(fermi):
    a = Mapping.random(fermi, 24, 4, seed=7)
    assert a.node_of_rank.tolist() == Mapping.random(fermi, 24, 4, seed=7).node_of_rank.tolist()
    assert a.node_of_rank.tolist() != Mapping.random(fermi, 24, 4, seed=8).node_of_rank.tolist()
    assert np.bincount(a.node_of_rank).tolist() == [4] * 6


def test_placements_that_need_more_nodes_are_errors(fermi):
    with pytest.raises(InputError, match="needs 17 nodes; the platform has 16"):
        Mapping.sequential(fermi, 17, 1)
    with pytest.raises(InputError, match="ppn must be >= 1"):
        Mapping.sequential(fermi, 4, 0)


def test_mapping_file_round_trip_and_bad_node_line(fermi, tmp_path):
    mapping = Mapping.random(fermi, 10, 2, seed=1)
    path = tmp_path / "ranks.txt"
    write_node_names(mapping, fermi, path)
    assert load_mapping_file(path, fermi).node_of_rank.tolist() == mapping.node_of_rank.tolist()
    path.write_text("# placement\nfermi0\n\nfermi1  # second rank\nnode7\n")
    with pytest.raises(InputError) as info:
        load_mapping_file(path, fermi)
    assert str(info.value).startswith(f"{path}:line 5: rank 2 is placed on node 'node7'")


@pytest.mark.parametrize("text, expected", [
    ("sequential:3", MappingSpec(MappingKind.SEQUENTIAL, ppn=3)),
    ("round-robin", MappingSpec(MappingKind.ROUND_ROBIN)),
    ("round-robin:4", MappingSpec(MappingKind.ROUND_ROBIN, nodes=4)),
    ("random:2", MappingSpec(MappingKind.RANDOM, ppn=2)),
    ("random:2:seed=9", MappingSpec(MappingKind.RANDOM, ppn=2, seed=9)),
    ("file:some/ranks.txt", MappingSpec(MappingKind.FILE, path="some/ranks.txt")),
    ("layout:table1.txt:M10", MappingSpec(MappingKind.LAYOUT, path="table1.txt", row="M10")),
])
def test_mapping_option_forms(text, expected):
    assert parse_mapping_option(text) == expected


@pytest.mark.parametrize("text, message", [
    ("spiral:3", "unknown mapping 'spiral'"),
    ("sequential", "cannot read mapping 'sequential'"),
    ("sequential:x", "expected PPN as an integer >= 1, got 'x'"),
    ("random:2:7", "expected seed=N"),
    ("layout:table1.txt", "cannot read mapping"),
])
def test_bad_mapping_options(text, message):
    with pytest.raises(InputError, match=message):
        parse_mapping_option(text)


def test_layout_spec_builds_and_checks_the_rank_count(fermi):
    spec = parse_mapping_option("layout:table1.txt:M4")
    mapping = spec.build(fermi, 11, EX / "fermi")
    assert mapping.nprocs == 11
    with pytest.raises(InputError, match="places 11 ranks; the schedule has 12"):
        spec.build(fermi, 12, EX / "fermi")
    with pytest.raises(InputError, match="no layout row 'M99'"):
        parse_mapping_option("layout:table1.txt:M99").build(fermi, 11, EX / "fermi")


def test_rankfile_gives_each_rank_its_cores(fermi):
    mapping = place_layout(fermi, read_layout_table(EX / "fermi" / "table1.txt")["M2"])
    lines = rankfile_text(mapping, fermi).splitlines()
    assert lines == [
        "rank 0=fermi0 slot=0-5", "rank 1=fermi0 slot=6-10", "rank 2=fermi0 slot=11",
        "rank 3=fermi1 slot=0-5", "rank 4=fermi1 slot=6-11",
    ]


def test_rankfile_refuses_an_oversubscribed_node(fermi):
    with pytest.raises(InputError, match="oversubscribes"):
        rankfile_text(Mapping.sequential(fermi, 13, 13), fermi)
