"""Paper 000 Table 1: the sixteen Fermi layouts pack onto their nodes, and bad tables are named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.errors import InputError
from commcost.io.layout_file import read_layout_table
from commcost.io.platform_file import load_platform
from commcost.platform import RankKind
from commcost.platform.layout import LayoutRow, _first_fit, place_layout

FERMI = Path(__file__).resolve().parent.parent / "examples" / "fermi"

# (name, 12-core nodes, 8-core nodes, P) as printed in Table 1.
TABLE1 = [("M1", 1, 0, 2), ("M2", 2, 0, 5), ("M3", 2, 1, 7), ("M4", 3, 1, 11), ("M5", 3, 2, 14),
          ("M6", 3, 3, 18), ("M7", 4, 3, 20), ("M8", 8, 0, 23), ("M9", 9, 0, 27), ("M10", 9, 1, 29),
          ("M11", 9, 2, 32), ("M12", 9, 3, 36), ("M13", 9, 4, 38), ("M14", 9, 5, 41), ("M15", 9, 6, 45),
          ("M16", 9, 7, 47)]


@pytest.fixture(scope="module")
def fermi():
    platform, _ = load_platform(FERMI / "platform.toml")
    return platform


@pytest.fixture(scope="module")
def table():
    return read_layout_table(FERMI / "table1.txt")


def test_fermi_has_164_cores_and_32_gpus(fermi):
    assert sum(n.type.cores for n in fermi.nodes) == 108 + 56
    assert sum(n.type.gpus for n in fermi.nodes) == 32


@pytest.mark.parametrize("name, big, small, nprocs", TABLE1)
def test_every_table1_layout_packs_onto_its_nodes(fermi, table, name, big, small, nprocs):
    row = table[name]
    assert row.nprocs == nprocs and row.nodes_per_type == (big, small)
    mapping = place_layout(fermi, row)
    assert mapping.nprocs == nprocs
    used = np.unique(mapping.node_of_rank)
    types = [fermi.nodes[i].type.cores for i in used]
    assert types.count(12) == big and types.count(8) == small
    cores = np.bincount(mapping.node_of_rank, weights=mapping.cores, minlength=len(fermi.nodes))
    gpus = np.bincount(mapping.node_of_rank, weights=mapping.kind == RankKind.GPU, minlength=len(fermi.nodes))
    for i, node in enumerate(fermi.nodes):
        assert cores[i] <= node.type.cores and gpus[i] <= node.type.gpus
    # Table 1's layouts occupy every core of the nodes they use (e.g. M16: 72+15+52+6+4+15 = 164).
    assert cores[used].sum() == sum(types)
    assert int((mapping.kind == RankKind.GPU).sum()) == row.gpu_processes
    cpu = sorted(int(c) for c, k in zip(mapping.cores, mapping.kind) if k == RankKind.CPU)
    assert cpu == sorted(c for c, n in row.cpu_processes for _ in range(n))


def test_ranks_are_numbered_node_by_node(fermi, table):
    mapping = place_layout(fermi, table["M10"])
    assert np.all(np.diff(mapping.node_of_rank) >= 0)


def test_first_fit_failure_falls_back_to_search(fermi):
    # First-fit puts 5+5 on one node and strands a 3 (4+4+3 on the other); 5+4+3 twice fits.
    items = [(5, 0), (5, 0), (4, 0), (4, 0), (3, 0), (3, 0)]
    assert not _first_fit(items, [12, 12], [2, 2], [-1] * 6)
    mapping = place_layout(fermi, LayoutRow("tight", (2, 0), ((5, 2), (4, 2), (3, 2)), 0))
    assert sorted(np.bincount(mapping.node_of_rank, weights=mapping.cores)) == [12, 12]


def test_a_layout_that_cannot_fit_is_an_error(fermi):
    with pytest.raises(InputError, match="needs 26 cores"):
        place_layout(fermi, LayoutRow("big", (2, 0), ((6, 4), (1, 2)), 0))
    with pytest.raises(InputError, match="do not fit"):
        place_layout(fermi, LayoutRow("odd", (2, 0), ((7, 3),), 0))
    with pytest.raises(InputError, match="wants 10 nodes"):
        place_layout(fermi, LayoutRow("many", (10, 0), ((1, 1),), 0))


@pytest.mark.parametrize("text, message", [
    ("Name M c=6 P\nA 1+0 2 3\n", "line 2: column 'P' is 3, but the process columns sum to 2"),
    ("Name M c=6\nA 1+0 two\n", "line 2: column 'c=6': expected an integer >= 0, got 'two'"),
    ("Name M c=6\nA one 2\n", "line 2: column 'M': expected node counts"),
    ("Name M cores=6\n", "line 1: unknown column 'cores=6'"),
    ("# only a comment\nName M c=6\nA 1+0 2 7\n", "line 3: expected 3 columns"),
    ("Name M c=6\nA 1+0 2\nA 1+0 1\n", "line 3: layout 'A' is defined twice"),
])
def test_bad_layout_tables_name_the_line_and_column(tmp_path, text, message):
    path = tmp_path / "layouts.txt"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_layout_table(path)
    assert str(info.value).startswith(f"{path}:") and message in str(info.value)
