"""Issue 15 item 6: `commcost map`, the rank-to-node placement that minimizes a schedule's predicted time under
any model (local search from sequential / round-robin / METIS / the kernel's own start), what it writes, and
its rankfile run by the embedded mpirun."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.launch.rankfile_runs import safe_rankfile_name
from commcost.collectives import Case, Collective, build, find
from commcost.io.platform_file import load_platform
from commcost.mapping import graph_start, group_swaps, improve
from commcost.mapping.local_search import node_classes, schedule_pricer
from commcost.mapping.starts import traffic_matrix
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Channel, Mapping, Node, NodeType, Platform
from commcost.schedule import ScheduleBuilder, SendMode
from real_mpi import needs_mpi

HERE = Path(__file__).resolve().parent
EX = HERE.parent / "examples"
GRID5000 = ["--platform", str(EX / "grid5000" / "platform.toml"), "--params", str(EX / "grid5000" / "params.toml"),
            "--model", "hockney"]


def _flat(nnodes: int, cores: int = 4) -> Platform:
    t = NodeType("t", cores)
    return Platform("flat", (t,), tuple(Node(f"n{i}", t) for i in range(nnodes)),
                    (Channel("shm", 0, "node", ("shm", "shm")), Channel("net", 1, "world", ("net",))))


def _sequential(nprocs: int, ppn: int, nnodes: int) -> np.ndarray:
    """map's sequential start: Mapping.sequential's nodes."""
    return Mapping.sequential(_flat(nnodes), nprocs, ppn).node_of_rank


def _hockney():
    from commcost.models.hockney import HockneyParams

    return MODELS["hockney"](HockneyParams.from_dict({"shm": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-10},
                                                      "net": {"alpha_s": 1e-5, "beta_s_per_byte": 1e-8}}))


def _run(args: list[str], capsys) -> dict:
    assert main(["map", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_group_swaps_leave_out_relabelings_and_keep_swaps_across_clusters():
    platform, _ = load_platform(EX / "grid5000" / "platform.toml")
    moves = list(group_swaps(platform))
    cluster = {n.name: n.groups[0] for n in platform.nodes}
    # sites have 5 and 7 nodes: no site swap; Grimoire (3, Nancy) and Paravance (3, Rennes) trade places
    assert [(m.a, m.b) for m in moves if m.level == "cluster"] == [("Grimoire", "Paravance")]
    assert not [m for m in moves if m.level == "site"]
    node_swaps = [m for m in moves if m.level == "node"]
    assert node_swaps and all(cluster[m.a] != cluster[m.b] for m in node_swaps)  # same cluster: relabeling
    assert len(node_swaps) == (12 * 11 - (3 * 2 + 4 * 3 + 2 * 1 + 3 * 2)) // 2


def test_node_classes_group_interchangeable_empty_nodes():
    platform, _ = load_platform(EX / "grid5000" / "platform.toml")
    classes = node_classes(platform)
    assert len(set(classes.tolist())) == 4
    assert len(set(node_classes(_flat(5)).tolist())) == 1


def test_starts_fill_nodes_as_mpirun_does_and_refuse_too_few_nodes():
    assert _sequential(6, 4, 2).tolist() == [0, 0, 0, 0, 1, 1]
    assert Mapping.round_robin(_flat(2), 6, 2).node_of_rank.tolist() == [0, 1, 0, 1, 0, 1]
    with pytest.raises(Exception, match="needs 3 nodes"):
        _sequential(9, 4, 2)


def _two_cliques(p: int = 8):
    """Ranks 0, 2, 4, 6 exchange 1 MiB with each other, the others 1 MiB among themselves; 1 KiB between."""
    b = ScheduleBuilder(p, "two cliques")
    b.phase("exchange", SendMode.POSTED)
    for i in range(p):
        for j in range(p):
            if i != j:
                b.send(i, j, 1 << 20 if i % 2 == j % 2 else 1 << 10)
    return b.build()


def test_graph_start_puts_each_clique_on_one_node_within_the_slots():
    schedule = _two_cliques()
    traffic = traffic_matrix(schedule)
    assert traffic[0, 2] == 2 * (1 << 20) and traffic[0, 1] == 2 * (1 << 10) and traffic[0, 0] == 0
    part = graph_start(schedule, np.array([4, 4]))
    assert np.bincount(part).tolist() == [4, 4]
    assert len(set(part[::2].tolist())) == 1 and len(set(part[1::2].tolist())) == 1


def test_local_search_improves_sequential_and_keeps_the_clique_placement_of_the_graph_start():
    """From sequential each node holds half of each clique: the busiest ranks send and receive two 1 MiB
    messages across the network. Swaps bring the cliques together (each rank takes its receptions one at a
    time, so fewer network receptions shorten the slowest rank); the METIS start has each clique on one node
    already, and no move improves it: both end at the same price, the graph start with fewer evaluations."""
    schedule, platform = _two_cliques(), _flat(2)
    price = schedule_pricer(schedule, platform, _hockney(), Mapping.on_nodes(np.zeros(8, dtype=np.int64)))
    capacity = np.array([4, 4])
    walked = improve(price, _sequential(8, 4, 2), capacity, group_swaps(platform), time_limit_s=30)
    assert walked.converged and walked.time_s < walked.start_time_s / 2
    graph = improve(price, graph_start(schedule, capacity), capacity, group_swaps(platform), time_limit_s=30)
    assert graph.converged and np.bincount(graph.node_of_rank).tolist() == [4, 4]
    assert len(set(graph.node_of_rank[::2].tolist())) == 1  # the 1 MiB clique shares a node
    assert graph.time_s == graph.start_time_s and graph.time_s == pytest.approx(walked.time_s, rel=1e-12)
    assert graph.evaluations < walked.evaluations


def test_local_search_from_random_starts_reaches_the_heuristic_arrangement_on_grid5000(capsys):
    """MPDATA 6 x 2 on paper 002's four clusters under Hockney: from five random placements the swaps reach
    the price of paper 002's heuristic arrangement."""
    for seed in range(1, 6):
        out = _run(["--kernel", "mpdata", *GRID5000, "--bandwidths", str(EX / "grid5000" / "bandwidths.toml"),
                    "--dims", "6x2", "--start", f"random:{seed}", "--start", "heuristic", "--time-limit", "10"],
                   capsys)
        starts = out["starts"]
        assert starts[f"random:{seed}"]["optimized_s"] == pytest.approx(starts["heuristic"]["start_s"], rel=1e-9)


def test_the_tie_breaker_walks_a_ring_off_the_plateau_of_its_slowest_link():
    """Round-robin puts every ring link between nodes; one swap cannot end a phase sooner (the slowest link
    stays a net link), so without the tie-breaker the search stops where it started. With it (the sum of the
    ranks' busy times) it gathers neighbours onto nodes, as the sequential placement has them."""
    case = Case(Collective.ALLGATHER, 16, 65536, 0)
    schedule = build(find(Collective.ALLGATHER, "ring"), case, {}).schedule
    platform = _flat(4)
    base = Mapping.on_nodes(np.zeros(16, dtype=np.int64))
    model = _hockney()
    start = Mapping.round_robin(_flat(4), 16, 4).node_of_rank
    plain = improve(schedule_pricer(schedule, platform, model, base, tie_break=False), start, np.full(4, 4),
                    time_limit_s=30)
    assert plain.accepted == {} and plain.converged
    walked = improve(schedule_pricer(schedule, platform, model, base), start, np.full(4, 4), time_limit_s=30)
    busy = {label: model.price(PlacedSchedule.of(schedule, platform, Mapping.on_nodes(n))).rank_time_s.sum()
            for label, n in (("start", start), ("walked", walked.node_of_rank),
                             ("sequential", _sequential(16, 4, 4)))}
    assert busy["walked"] <= busy["sequential"] * (1 + 1e-9) < busy["start"]


def test_the_search_stops_at_its_evaluation_budget():
    schedule, platform = _two_cliques(), _flat(2)
    price = schedule_pricer(schedule, platform, _hockney(), Mapping.on_nodes(np.zeros(8, dtype=np.int64)))
    result = improve(price, _sequential(8, 4, 2), np.array([4, 4]), max_evaluations=3)
    assert result.evaluations == 3 and not result.converged


def test_map_mpdata_on_grid5000_starts_from_the_heuristic_and_beats_sequential(capsys):
    out = _run(["--kernel", "mpdata", *GRID5000, "--bandwidths", str(EX / "grid5000" / "bandwidths.toml"),
                "--time-limit", "5"], capsys)
    assert set(out["starts"]) == {"sequential", "round-robin", "graph", "heuristic"}
    heuristic = out["starts"]["heuristic"]
    assert out["optimized_s"] <= heuristic["start_s"] * (1 + 1e-12)
    assert out["optimized_s"] == min(r["optimized_s"] for r in out["starts"].values())
    assert out["gain_vs_sequential"] > 1.5  # Hockney sees 649 ms -> 408 ms per step
    assert len(out["nodes"]) == 12 and len(set(out["nodes"])) == 12  # one rank per node


def test_map_writes_rankfiles_node_files_schedule_and_json(tmp_path, capsys):
    out = _run(["--collective", "allgather", "--algorithm", "ring", "--procs", "16", "--nbytes", "64KiB",
                "--platform", str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"),
                "--model", "hockney", "--ppn", "4", "--start", "round-robin", "--time-limit", "5",
                "--out", str(tmp_path / "out")], capsys)
    assert out["nodes_allocated"] == 4
    lines = (tmp_path / "out" / "optimized.rankfile").read_text().splitlines()
    assert len(lines) == 16 and all(line.startswith(f"rank {k}=n") for k, line in enumerate(lines))
    assert (tmp_path / "out" / "optimized.nodes").read_text().split() == out["nodes"]
    assert json.loads((tmp_path / "out" / "map.json").read_text())["optimized_s"] == out["optimized_s"]
    assert set(out["other_models"]) >= {"taulop", "loggp", "maxrate"}
    # the node file is a --mapping for predict, which prices it as map did
    assert main(["predict", "--collective", "allgather", "--algorithm", "ring", "--procs", "16", "--nbytes",
                 "64KiB", "--platform", str(EX / "cluster" / "platform.toml"), "--params",
                 str(EX / "params" / "illustrative.toml"), "--model", "hockney", "--mapping",
                 f"file:{tmp_path / 'out' / 'optimized.nodes'}", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_s"] == pytest.approx(out["optimized_s"])


@pytest.mark.parametrize("extra, message", [
    (["--start", "nowhere"], "expected sequential, round-robin"),
    (["--start", "heuristic"], "needs --kernel mpdata and --bandwidths"),
    (["--ppn", "0"], "--ppn"),
    (["--nodes", "99"], "--nodes"),
    (["--time-limit", "0"], "--time-limit"),
    (["--measure"], "expected --out DIR"),
])
def test_bad_options_give_one_line_and_exit_2(extra, message, capsys):
    try:
        code = main(["map", "--kernel", "mpdata", *GRID5000, *extra])
    except SystemExit as exc:  # a value its argparse type refuses (--time-limit)
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_han_is_refused_because_its_schedule_follows_the_placement(capsys):
    assert main(["map", "--collective", "bcast", "--algorithm", "han", "--procs", "8", "--nbytes", "1KiB",
                 "--platform", str(EX / "cluster" / "platform.toml"), "--params",
                 str(EX / "params" / "illustrative.toml"), "--model", "hockney", "--ppn", "4"]) == 2
    assert "sub-communicators" in capsys.readouterr().err


def test_measure_refuses_dependency_schedules(tmp_path, capsys):
    assert main(["map", "--collective", "allgather", "--algorithm", "ring", "--procs", "8", "--nbytes", "1KiB",
                 "--platform", str(EX / "cluster" / "platform.toml"), "--params",
                 str(EX / "params" / "illustrative.toml"), "--model", "hockney", "--ppn", "4", "--time-limit", "1",
                 "--out", str(tmp_path), "--measure"]) == 2
    assert "schedules of phases" in capsys.readouterr().err


def test_rankfile_names_with_pe_get_a_copy_open_mpi_can_read(tmp_path):
    """Open MPI 5.0.11 refuses `--map-by rankfile:file=PATH` when PATH holds 'pe' (its PE= modifier)."""
    plain = tmp_path / "sequential.rankfile"
    plain.write_text("rank 0=a slot=0\n")
    assert safe_rankfile_name(plain) == "sequential.rankfile"
    tricky = tmp_path / "mapped.rankfile"
    tricky.write_text("rank 0=b slot=0\n")
    name = safe_rankfile_name(tricky)
    assert "pe" not in name.lower() and (tmp_path / name).read_text() == "rank 0=b slot=0\n"


@needs_mpi
def test_embedded_mpirun_runs_map_s_rankfiles_and_every_rank_lands_where_it_says(tmp_path, capsys):
    """One node named after this machine, four ranks: `map --measure` writes the schedule and the rankfiles
    (into a folder whose path holds 'pe', which Open MPI 5.0 misreads unless the launcher is given the file
    name alone), runs the schedule under each with the embedded mpirun, checks every rank's host, and reuses
    the results on a second run."""
    host = socket.gethostname()
    (tmp_path / "platform.toml").write_text(
        f'name = "here"\n[[node_types]]\nname = "t"\ncores = 4\n[[nodes]]\nname = "{host}"\ntype = "t"\n'
        '[[channels]]\nname = "shm"\nlevel = "node"\ntransfers = ["shm", "shm"]\n')
    (tmp_path / "params.toml").write_text("[hockney.shm]\nalpha_s = 1e-6\nbeta_s_per_byte = 1e-10\n")
    args = ["--schedule", str(HERE / "data" / "netns_map_schedule.json"), "--platform",
            str(tmp_path / "platform.toml"), "--params", str(tmp_path / "params.toml"), "--model", "hockney",
            "--ppn", "4", "--time-limit", "1", "--out", str(tmp_path / "pe-runs"), "--measure", "--repeat", "2"]
    out = _run(args, capsys)
    runs = out["measured"]["runs"]
    assert set(runs) == {"sequential", "optimized"}
    assert all(r["hosts"] == [host] * 4 and r["time_s"] > 0 for r in runs.values())
    assert (tmp_path / "pe-runs" / "optimized.rankfile").read_text().splitlines()[0] == f"rank 0={host} slot=0"
    assert main(["map", *args]) == 0
    assert "reused" in capsys.readouterr().err


def test_map_places_a_sparse_pattern_and_no_start_beats_the_result(capsys):
    """Paper 001's SpMV halo exchange of a 3D Poisson matrix on 64 ranks (4 nodes of Blue Waters) under
    max-rate: the result is the best of the starts and at least as fast as the sequential placement."""
    out = _run(["--pattern", "spmv", "--matrix", str(EX / "sparse" / "poisson3d_16.mtx"), "--procs", "64",
                "--ppn", "16", "--platform", str(EX / "bluewaters" / "platform.toml"), "--params",
                str(EX / "params" / "bluewaters.toml"), "--model", "maxrate", "--time-limit", "2"], capsys)
    assert out["schedule"].startswith("spmv level 0 of poisson3d_16.mtx")
    assert out["optimized_s"] <= min(r["start_s"] for r in out["starts"].values())
    assert out["optimized_s"] <= out["sequential_s"] and len(out["nodes"]) == 64
    assert main(["map", "--pattern", "spmv", "--matrix", str(EX / "sparse" / "poisson3d_16.mtx"), "--procs", "64",
                 "--amg-level", "9", *GRID5000]) == 2
    assert "--amg-level" in capsys.readouterr().err
