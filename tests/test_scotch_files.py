"""Scotch's text files for the mapping-library comparison (issue 15 item 3, paper 002 eq. 1-3): the grid source
graph, the target graph of distances, mappings read back; and one real amk_grf + scotch_gmap run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from commcost.errors import InputError
from commcost.io.scotch_files import grid_adjacency, grid_graph_text, mapping_text, read_mapping, target_graph_text
from commcost.partition.arrangement import cost, exhaustive

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_grid_graph_2x3_by_hand():
    """2 x 3, h = 3, w = 1 (scale 3: weights 3 and 1). Vertex k = j * 2 + i: column 0 holds 0, 1; column 1
    holds 2, 3; column 2 holds 4, 5. Two rows: the top and bottom neighbour are one cell (weight 2 w = 2);
    three columns: left and right differ (weight 3 each). Neighbours in increasing order."""
    assert grid_graph_text(2, 3, 3.0, 1.0, scale=3) == (
        "0\n6 18\n0 010\n"
        "3 2 1 3 2 3 4\n"   # (0,0): below (1,0) = 1; right (0,1) = 2; left (0,2) = 4
        "3 2 0 3 3 3 5\n"   # (1,0): above 0; right 3; left 5
        "3 3 0 2 3 3 4\n"   # (0,1): left 0; below 3; right 4
        "3 3 1 2 2 3 5\n"
        "3 3 0 3 2 2 5\n"   # (0,2): right (wraps) 0; left 2; below 5
        "3 3 1 3 3 2 4\n")


def test_duplicate_edges_merge_and_single_rows_have_no_self_edge():
    # 2 x 2: left = right and top = bottom; one edge each, twice the weight
    assert grid_graph_text(2, 2, 1.0, 1.0, scale=5) == "0\n4 8\n0 010\n2 10 1 10 2\n2 10 0 10 3\n2 10 0 10 3\n" \
                                                        "2 10 1 10 2\n"
    # one row of three: a ring of horizontal edges only, no vertical self-edge
    assert grid_graph_text(1, 3, 2.0, 1.0, scale=2) == "0\n3 6\n0 010\n2 2 1 2 2\n2 2 0 2 2\n2 2 0 2 1\n"
    # 1 x 1: no edge at all
    assert grid_graph_text(1, 1, 1.0, 1.0) == "0\n1 0\n0 010\n0\n"


def test_numbering_is_the_arrangement_s_column_major_fill():
    """Vertex k sits where ``order.reshape(c, r).T`` puts k: its neighbours are that grid's ring neighbours."""
    r, c = 3, 4
    grid = np.arange(r * c).reshape(c, r).T
    xadj, adjncy, weights = grid_adjacency(r, c, 5.0, 2.0, scale=5)
    for i in range(r):
        for j in range(c):
            k = grid[i, j]
            got = dict(zip(adjncy[xadj[k]:xadj[k + 1]].tolist(), weights[xadj[k]:xadj[k + 1]].tolist()))
            want = {int(grid[i, (j + 1) % c]): 5, int(grid[i, (j - 1) % c]): 5,
                    int(grid[(i + 1) % r, j]): 2, int(grid[(i - 1) % r, j]): 2}
            assert got == want


def test_weights_keep_the_ratio():
    _, _, weights = grid_adjacency(3, 4, 87381.3, 66560.0, scale=1000)
    assert set(weights.tolist()) == {1000, 762}
    with pytest.raises(InputError, match="volumes"):
        grid_adjacency(2, 2, 0.0, 0.0)


def test_target_graph_by_hand_and_symmetrized():
    d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 4.0], [2.0, 4.0, 0.0]])
    assert target_graph_text(d, scale=4) == "0\n3 6\n0 010\n2 1 1 2 2\n2 1 0 4 2\n2 2 0 4 1\n"
    asym = np.array([[9.0, 0.5, 2.0], [1.5, 9.0, 4.0], [2.0, 4.0, 9.0]])  # mean of 0.5 and 1.5 is 1; diagonal ignored
    assert target_graph_text(asym, scale=4) == target_graph_text(d, scale=4)
    with pytest.raises(InputError, match="between 0 and 1"):
        target_graph_text(np.array([[0.0, 0.0], [0.0, 0.0]]))


def test_read_mapping_round_trip_and_any_order():
    target = np.array([3, 0, 2, 1, 1])
    assert read_mapping(mapping_text(target), 5).tolist() == target.tolist()
    assert read_mapping("3\n2\t7\n0\t5\n1\t6\n", 3).tolist() == [5, 6, 7]


@pytest.mark.parametrize("text, n, where", [
    ("", 2, "empty"),
    ("two\n0 1\n", 2, "line 1"),
    ("3\n0 1\n1 2\n2 0\n", 2, "line 1"),  # the count says 3, 2 vertices asked for
    ("2\n0 1\n1 x\n", 2, "line 3"),
    ("2\n0 1\n0 2\n", 2, "line 3"),        # vertex 0 twice
    ("2\n0 1\n5 2\n", 2, "line 3"),        # vertex out of range
    ("2\n0 1\n", 2, "line 2"),             # a line missing
])
def test_read_mapping_rejects_bad_files(text, n, where):
    with pytest.raises(InputError, match=where) as caught:
        read_mapping(text, n, source="grid.map")
    assert str(caught.value).startswith("grid.map")


@pytest.mark.skipif(shutil.which("scotch_gmap") is None or shutil.which("amk_grf") is None,
                    reason="Scotch's scotch_gmap and amk_grf are not installed (Debian: apt-get install scotch)")
@pytest.mark.parametrize("group", [[0, 1, 0, 1], [0, 0, 1, 1]])
@pytest.mark.parametrize("options", [("-Cd",), ("-Cd", "-b1")])
def test_scotch_maps_a_2x2_grid_to_the_known_optimum(group, options):
    """2 x 2 grid, 4 nodes in two groups, b_H = b_V = 4 inside a group and 1 across, h = 1, w = 10: the
    optimum puts one group per column (cost_H 2 rows x h x 2 / 1 = 4, cost_V 2 columns x w x 2 / 4 = 10:
    14), and Scotch's symmetrized objective agrees, so with its default 5 % balance Scotch finds it. Its
    labels must be the target graph's vertex numbers: read as cell numbers (identity) the interleaved
    groups would mix, read one off the two-by-two groups would. A 100 % imbalance (-b1) lets Scotch pile
    cells on a node; the repair makes the mapping one per node, priced as the bench prices it."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_mapping_libraries as bench
    finally:
        sys.path.remove(str(BENCH))
    group = np.array(group)
    b = np.array([[4.0, 1.0], [1.0, 4.0]])

    def vols(r: int, c: int) -> tuple[float, float]:
        return 1.0, 10.0

    def price(x: np.ndarray) -> float:
        return bench.eq_cost(x, 2, 2, group, b, b, vols)

    mapping, moved = bench.run_scotch(2, 2, 1.0, 10.0, bench.node_distance(group, b, b, 1.0, 10.0), price,
                                      options)
    assert sorted(mapping.tolist()) == [0, 1, 2, 3]
    assert price(mapping) == pytest.approx(sum(cost(bench.grid_of(mapping, 2, 2), group, b, b, 1.0, 10.0)))
    if "-b1" not in options:
        assert moved == 0
        assert price(mapping) == pytest.approx(exhaustive(group, b, b, vols).cost) == pytest.approx(14.0)


def test_rebalance_moves_surplus_cells_to_empty_nodes():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_mapping_libraries as bench
    finally:
        sys.path.remove(str(BENCH))
    # node 0 holds cells 0 and 1, node 3 none; moving cell 1 costs 1, cell 0 costs 2
    labels, moved = bench.rebalance(np.array([0, 0, 1, 2]), np.ones(4, dtype=np.int64),
                                    lambda x: 1.0 if x[1] == 3 else 2.0)
    assert labels.tolist() == [0, 3, 1, 2] and moved == 1
    labels, moved = bench.rebalance(np.array([1, 0, 2, 3]), np.ones(4, dtype=np.int64), lambda x: 0.0)
    assert labels.tolist() == [1, 0, 2, 3] and moved == 0
