"""Paper 001 (issue 14): the node-aware max-rate model with queue search and network contention, the torus
routing behind it, sparse-matrix patterns, and predict --pattern."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

from commcost.cli.main import main
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.kernels.sparse import partition_rows, pattern_levels, spgemm_schedule, spmv_schedule
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping
from commcost.platform.network import Torus3D, cube_link_bytes
from commcost.schedule import Schedule

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "examples" / "params" / "bluewaters.toml"
PLATFORM = ROOT / "examples" / "bluewaters" / "platform.toml"
MATRIX = ROOT / "examples" / "sparse" / "poisson3d_16.mtx"


@pytest.fixture(scope="module")
def bluewaters():
    return load_platform(PLATFORM)[0], load_params(PARAMS).for_model("maxrate")


def _one_phase(nprocs, src, dst, nbytes):
    n = len(src)
    return Schedule(nprocs, np.asarray(src), np.asarray(dst), np.asarray(nbytes, dtype=float), np.zeros(n, int),
                    np.ones(n, bool), ("exchange",))


def _price(platform, params, schedule, ppn=32, **settings):
    model = MODELS["maxrate"](replace(params, **settings))
    placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, schedule.nprocs, ppn))
    return model, placed


def test_models_lists_maxrate(capsys):
    assert main(["models"]) == 0
    assert "maxrate" in capsys.readouterr().out


@pytest.mark.parametrize("src, dst, locality", [(0, 1, "intra_socket"), (0, 16, "intra_node"),
                                                (0, 32, "inter_node")])
@pytest.mark.parametrize("nbytes, protocol", [(8, "short"), (500, "short"), (501, "eager"), (8192, "eager"),
                                              (8193, "rend"), (1 << 20, "rend")])
def test_a_ping_pong_takes_table_1_row_of_its_locality_and_protocol(bluewaters, src, dst, locality, nbytes,
                                                                      protocol):
    """Table 1 loads from examples/params/bluewaters.toml; one message costs its row's alpha + s / R_b
    (one active rank: R_N never binds), thresholds 500 and 8192 bytes; no queue search or contention."""
    platform, params = bluewaters
    row = params.rows[(locality, protocol)]
    model, placed = _price(platform, params, _one_phase(64, [src], [dst], [nbytes]), queue_search="none",
                           contention="none")
    assert model.total_time_s(placed) == pytest.approx(row.alpha_s + nbytes / row.rate_bytes_per_s, rel=1e-12)


def test_table_1_values(bluewaters):
    _, params = bluewaters
    assert params.rows[("intra_socket", "short")].alpha_s == 4.4e-07
    assert params.rows[("inter_node", "rend")].node_rate_bytes_per_s == 6.6e09
    assert math.isinf(params.rows[("inter_node", "eager")].node_rate_bytes_per_s)
    assert params.queue_gamma_s == 8.4e-9 and params.contention_delta_s_per_byte == 1.0e-10


@pytest.mark.parametrize("ppn", [1, 2, 3, 8, 16])
def test_the_node_rate_binds_only_when_ppn_rb_exceeds_rn(bluewaters, ppn):
    """ppn ranks of node 0 each send 1 MiB (rendezvous) to node 1: eq. 2, T = alpha + ppn s / min(R_N,
    ppn R_b); R_b = 2.9e9, R_N = 6.6e9, so the node binds from ppn = 3 (8.7e9 > 6.6e9)."""
    platform, params = bluewaters
    s = 1 << 20
    model, placed = _price(platform, params, _one_phase(64, list(range(ppn)), [32 + r for r in range(ppn)],
                                                        [s] * ppn), queue_search="none", contention="none")
    row = params.rows[("inter_node", "rend")]
    expected = row.alpha_s + (s / row.rate_bytes_per_s if ppn * 2.9e9 <= 6.6e9 else ppn * s / 6.6e9)
    assert model.total_time_s(placed) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("search, factor", [("upper", 1.0), ("measured", 1 / 3), ("none", 0.0)])
def test_queue_search_is_gamma_n_squared_at_the_receiver(bluewaters, search, factor):
    """n = 10 ranks of one socket send 8 B to rank 0: the receiver's queue search gamma n^2 (eq. 3, upper),
    n^2 / 3 (measured) or nothing, on top of the max-rate times: the receiver takes the 10 messages one at a
    time, each its max-rate time (one reception alone would cost what one send does)."""
    platform, params = bluewaters
    model, placed = _price(platform, params, _one_phase(64, list(range(1, 11)), [0] * 10, [8] * 10),
                           queue_search=search, contention="none")
    row = params.rows[("intra_socket", "short")]
    terms = model.terms(placed)[0]
    assert terms.queue_s == pytest.approx(factor * 8.4e-9 * 100)
    assert terms.maxrate_s == pytest.approx(10 * (row.alpha_s + 8 / row.rate_bytes_per_s))
    assert model.total_time_s(placed) == pytest.approx(terms.time_s)


def test_torus_routes_dimension_order_and_counts_link_bytes():
    """A 4 x 1 x 1 ring, one node per router: 0 -> 2 goes +x over links 0+ and 1+; 3 -> 1 goes the
    shorter way round... a tie (2 hops either way) goes +: 3+ (wrap to 0) and 0+; so link 0+ carries both."""
    torus = Torus3D((4, 1, 1), 1)
    load = torus.link_bytes(np.array([0, 3]), np.array([2, 1]), np.array([100.0, 10.0]))
    plus = lambda r: r * 6  # noqa: E731  (router r's +x link)
    assert load[plus(0)] == 110 and load[plus(1)] == 100 and load[plus(3)] == 10 and load.sum() == 220
    assert list(torus.hops(np.array([0, 3, 1]), np.array([2, 1, 0]))) == [2, 2, 1]
    # 3D: (0,0,0) -> (1,1,1) on 2 x 2 x 2: x first, then y, then z
    cube = Torus3D((2, 2, 2), 2)  # nodes 0, 1 on router 0; node 14 on router 7
    load = cube.link_bytes(np.array([1]), np.array([14]), np.array([5.0]))
    assert load[0 * 6 + 0] == 5 and load[1 * 6 + 2] == 5 and load[3 * 6 + 4] == 5 and load.sum() == 15


def test_cube_contention_is_eq_7():
    """l = 2 h^3 b ppn: 4 senders on 2 nodes (ppn 2), 3 hops each, 1,000 B each (b = 1,000): 2 * 27 * 1000 * 2."""
    hops = np.array([3, 3, 3, 3])
    assert cube_link_bytes(hops, np.full(4, 1000.0), senders=4, nodes=2, per_router=2) == 2 * 27 * 1000 * 2


def test_contention_over_the_torus_is_delta_times_the_busiest_link(bluewaters):
    """Ranks of node 0 and node 2 (routers 0 and 1) send to nodes 4 and 6 (routers 2 and 3) on an 8-router
    x ring: router 0 -> 2 and 1 -> 3 both cross the link 1 -> 2 (paper 001 Fig. 6's middle link)."""
    platform, params = bluewaters
    src = [0, 64]  # node 0 (router 0), node 2 (router 1)
    dst = [128, 192]  # node 4 (router 2), node 6 (router 3)
    model, placed = _price(platform, params, _one_phase(256, src, dst, [1000, 3000]), contention="topology")
    assert model.terms(placed)[0].contention_s == pytest.approx(1e-10 * 4000)


def test_topology_contention_needs_a_platform_network(bluewaters, tmp_path):
    from commcost.errors import InputError

    platform, params = bluewaters
    flat = replace(platform, network=None)
    model, placed = _price(flat, params, _one_phase(64, [0], [32], [100]), contention="topology")
    with pytest.raises(InputError, match="platform has none"):
        model.total_time_s(placed)


def test_spmv_and_spgemm_patterns_of_a_small_matrix():
    """A tridiagonal 8 x 8 over 4 ranks (2 rows each): SpMV sends one value each way across each boundary
    (6 messages of 8 B); SpGEMM sends the boundary rows of B = A, nnz 3 each, 12 B per entry."""
    a = scipy.sparse.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(8, 8), format="csr")
    owner = partition_rows(a, 4)
    assert list(owner) == [0, 0, 1, 1, 2, 2, 3, 3]
    spmv = spmv_schedule(a, owner, 4)
    assert sorted(zip(spmv.src.tolist(), spmv.dst.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]
    assert set(spmv.nbytes.tolist()) == {8.0}
    spgemm = spgemm_schedule(a, owner, 4)
    assert set(spgemm.nbytes.tolist()) == {36.0}


def test_amg_levels_give_one_pattern_per_level():
    from commcost.kernels.sparse import read_matrix

    levels = pattern_levels(read_matrix(MATRIX), "spmv", 64, "contiguous", amg=True)
    assert len(levels) >= 3 and levels[0].rows == 4096 and all(b.rows < a.rows for a, b in zip(levels, levels[1:]))
    metis = pattern_levels(read_matrix(MATRIX), "spmv", 64, "metis")
    assert metis[0].schedule.nbytes.sum() < levels[0].schedule.nbytes.sum()  # METIS cuts fewer edges


def test_predict_pattern_json_splits_every_level(capsys, tmp_path):
    """The must-show: per level maxrate_s, queue_s, contention_s and time_s (their sum), postal beside."""
    png = tmp_path / "levels.png"
    assert main(["predict", "--pattern", "spmv", "--matrix", str(MATRIX), "--amg-levels", "--procs", "64",
                 "--ppn", "16", "--platform", str(PLATFORM), "--params", str(PARAMS), "--model", "maxrate",
                 "--format", "json", "--plot", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["levels"]) >= 3 and png.stat().st_size > 1000
    for level in out["levels"]:
        assert level["time_s"] == pytest.approx(level["maxrate_s"] + level["queue_s"] + level["contention_s"])
        assert level["time_s"] >= level["postal_s"] > 0
    assert any(level["queue_s"] > 0 for level in out["levels"])


def test_predict_pattern_under_another_model(capsys, tmp_path):
    params = tmp_path / "h.toml"
    params.write_text("[hockney.shm]\nalpha_s = 1e-6\nbeta_s_per_byte = 1e-10\n"
                      "[hockney.gemini]\nalpha_s = 2e-6\nbeta_s_per_byte = 3e-10\n")
    assert main(["predict", "--pattern", "spgemm", "--matrix", str(MATRIX), "--procs", "8", "--ppn", "4",
                 "--platform", str(PLATFORM), "--params", str(params), "--model", "hockney"]) == 0
    assert "spgemm of" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--matrix", "missing.mtx"], "missing.mtx: no such file"),
    (["--matrix", str(PARAMS)], "expected a Matrix Market file"),
])
def test_bad_pattern_input_is_one_line(capsys, args, message):
    code = main(["predict", "--pattern", "spmv", *args, "--procs", "4", "--ppn", "2", "--platform", str(PLATFORM),
                 "--params", str(PARAMS), "--model", "maxrate"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_maxrate_params_name_the_field(tmp_path, capsys):
    text = PARAMS.read_text().replace("rate_bytes_per_s = 2.2e09", "rate_bytes_per_s = -1", 1)
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    code = main(["predict", "--pattern", "spmv", "--matrix", str(MATRIX), "--procs", "4", "--ppn", "2",
                 "--platform", str(PLATFORM), "--params", str(bad), "--model", "maxrate"])
    err = capsys.readouterr().err
    assert code == 2 and "maxrate.intra_socket.short.rate_bytes_per_s" in err and "Traceback" not in err
