"""Paper 002 (issue 15, second part): MPDATA's halo exchange as a schedule priced under the models, what
`commcost arrange --out` writes for a user to deploy (rankfiles, reorder file, PNG, JSON), and the rankfile
run for real by the embedded mpirun (`--measure`)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from commcost.workflows.arrange import _disagreements
from commcost.cli.main import main
from commcost.io.mapping_file import reorder_text
from commcost.kernels.mpdata import cart_neighbours, halo_schedule
from commcost.models import MODELS, PlacedSchedule
from commcost.partition.arrangement import Arrangement, mpdata_volumes
from commcost.platform import Channel, Mapping, Node, NodeType, Platform
from real_mpi import needs_mpi

HERE = Path(__file__).resolve().parent
EX = HERE.parent / "examples" / "grid5000"
GRID5000 = ["--platform", str(EX / "platform.toml"), "--bandwidths", str(EX / "bandwidths.toml"),
            "--domain", "512x512x64"]


def test_cart_neighbours_are_row_major_and_periodic():
    left, right, up, down = cart_neighbours(2, 3)  # rank i * 3 + j
    assert left.tolist() == [2, 0, 1, 5, 3, 4] and right.tolist() == [1, 2, 0, 4, 5, 3]
    assert up.tolist() == [3, 4, 5, 0, 1, 2] and down.tolist() == up.tolist()


def test_halo_schedule_sends_what_the_cost_function_counts():
    """Two posted phases; every rank sends h left and right, then w up and down: 2 p (h + w) bytes a step,
    and no exchange along a single row."""
    h, w = mpdata_volumes((512, 512, 64), (1, 1), 3, 4)
    s = halo_schedule(3, 4, h, w)
    assert s.phase_names == ("horizontal", "vertical") and s.posted.all()
    assert s.nbytes.sum() == pytest.approx(2 * 12 * (h + w))
    assert not np.any(s.src == s.dst)
    assert halo_schedule(1, 4, h, w).phase_names == ("horizontal",)
    assert halo_schedule(2, 2, h, w, steps=3).nphases == 6


def test_hockney_prices_a_step_as_its_two_directions_one_after_the_other():
    """A 2 x 2 grid on two nodes. Columns on nodes: the horizontal messages cross (alpha_t + h beta_t, two
    per rank one after the other, Hockney's sender), the vertical ones stay inside (alpha_s + w beta_s);
    rows on nodes: the other way round. The step is the horizontal phase then the vertical one."""
    from commcost.io.params_file import load_params

    kind = NodeType("n", 4)
    platform = Platform("two", (kind,), (Node("a", kind), Node("b", kind)),
                        (Channel("shm", 0, "node", ("shm", "shm")),
                         Channel("trunk", 1, "world", ("shm", "tcp", "shm"))))
    hockney = MODELS["hockney"](load_params(HERE / "data" / "netns_arrange_params.toml").for_model("hockney"))
    h, w = 4096.0, 512.0
    shm, trunk = (1e-6, 1e-10), (100e-6, 4e-7)  # the file's alpha, beta

    def t(channel, nbytes):
        return channel[0] + nbytes * channel[1]

    columns = hockney.price(PlacedSchedule.of(halo_schedule(2, 2, h, w), platform, Mapping.on_nodes([0, 1, 0, 1])))
    rows = hockney.price(PlacedSchedule.of(halo_schedule(2, 2, h, w), platform, Mapping.on_nodes([0, 0, 1, 1])))
    assert columns.time_s == pytest.approx(2 * t(trunk, h) + 2 * t(shm, w))
    assert rows.time_s == pytest.approx(2 * t(shm, h) + 2 * t(trunk, w))


def _run(args, capsys) -> dict:
    assert main(["arrange", "mpdata", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_out_writes_rankfiles_reorder_file_png_and_json(tmp_path, capsys):
    out = _run([*GRID5000, "--out", str(tmp_path), "--exhaustive"], capsys)
    files = out["files"]
    assert set(files) == {"initial rankfile", "heuristic rankfile", "optimum rankfile", "reorder file", "plot",
                          "json"}
    assert json.loads((tmp_path / "arrangement.json").read_text())["ratio"] == pytest.approx(out["ratio"])
    assert (tmp_path / "arrangement.png").read_bytes()[:4] == b"\x89PNG"
    # rank i * c + j of the rankfile is the node at cell (i, j) of the heuristic's grid, row-major
    hosts = [line.split("=")[1].split()[0] for line in (tmp_path / "heuristic.rankfile").read_text().splitlines()]
    assert hosts == sum(out["heuristic"]["grid"], [])
    # the reorder file's key of launched rank q is the cart rank of process q (the q-th node, one per node)
    keys = [int(x) for x in (tmp_path / "heuristic.order").read_text().split("\n")[1:] if x]
    nodes = [f"{c}-{i}" for c, n in (("grimoire", 3), ("parasilo", 4), ("grisou", 2), ("paravance", 3))
             for i in range(n)]
    assert [hosts[keys[q]] for q in range(12)] == nodes


def test_reorder_text_inverts_the_arrangement():
    assert reorder_text(np.array([2, 0, 1])).splitlines()[1:] == ["1", "2", "0"]
    with pytest.raises(ValueError):
        reorder_text(np.array([0, 0, 1]))


def test_params_price_each_arrangement_under_each_model(capsys):
    """Illustrative Hockney from Table 1's contiguous bandwidths agrees that the heuristic's 6 x 2 beats the
    3 x 4 initial arrangement, by less than the bandwidth cost says (it cannot see the slow bars, and it
    takes the slowest rank of a step where eq. 1-2 sum every pair)."""
    out = _run([*GRID5000, "--params", str(EX / "params.toml")], capsys)
    times = out["models"]["hockney"]
    assert times["initial"] > times["heuristic"] > 0
    assert 1 < times["initial"] / times["heuristic"] < out["ratio"]
    assert out["disagreements"] == []


def test_disagreements_name_the_model_and_both_arrangements():
    grid = np.arange(4).reshape(2, 2)
    arrangements = {"initial": Arrangement(grid, 2.0, 0.0), "heuristic": Arrangement(grid, 1.0, 0.0)}
    lines = _disagreements(arrangements, {"hockney": {"initial": 0.5, "heuristic": 0.9},
                                          "taulop": {"initial": 0.9, "heuristic": 0.5}})
    assert len(lines) == 1
    assert lines[0].startswith("hockney ranks the initial arrangement ahead of the heuristic one")


def test_measure_needs_out(capsys):
    assert main(["arrange", "mpdata", *GRID5000, "--measure"]) == 2
    assert "expected --out DIR" in capsys.readouterr().err


@needs_mpi
def test_embedded_mpirun_runs_the_written_rankfile_and_every_rank_lands_where_it_says(tmp_path, capsys):
    """One node named after this machine, four ranks: the rankfiles written by `arrange` go to the embedded
    mpirun (--map-by rankfile:file=...), the halo exchange runs on a periodic MPI_Cart with checked halos,
    every rank reports the host its rankfile line names, and the results are reused by a second run."""
    host = socket.gethostname()
    (tmp_path / "platform.toml").write_text(
        f'name = "here"\n[[node_types]]\nname = "t"\ncores = 4\n[[nodes]]\nname = "{host}"\ntype = "t"\n'
        '[[channels]]\nname = "shm"\nlevel = "node"\ntransfers = ["shm", "shm"]\n')
    (tmp_path / "bw.toml").write_text(f'groups = ["{host}"]\nhorizontal = [[1.0]]\nvertical = [[4.0]]\n')
    args = ["--platform", str(tmp_path / "platform.toml"), "--bandwidths", str(tmp_path / "bw.toml"), "--ppn", "4",
            "--domain", "64x32x4", "--out", str(tmp_path / "out"), "--measure", "--steps", "2", "--repeat", "3"]
    out = _run(args, capsys)
    runs = out["measured"]["runs"]
    assert set(runs) == {"initial", "heuristic"}
    assert all(r["hosts"] == [host] * 4 and r["time_s"] > 0 for r in runs.values())
    assert (tmp_path / "out" / "initial.rankfile").read_text().splitlines()[0] == f"rank 0={host} slot=0"
    assert main(["arrange", "mpdata", *args]) == 0
    assert "reused" in capsys.readouterr().err
