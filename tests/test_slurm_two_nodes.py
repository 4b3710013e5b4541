"""Issue 12 item 5 on a real Slurm: ``commcost tune --nodes 2 --ppn 2`` inside a two-node Slurm cluster builds
its srun lines, calibrates shm on one node and the network across two, and times the files on 2 nodes x 2.

The cluster is the two-node network-namespace harness (tests/netns_cluster.py) with Debian's Slurm on it:
slurmctld in the head namespace, one slurmd per node namespace (each under its own host name), munge for
authentication, and Slurm's PMIx plugin launching the embedded Open MPI's ranks (``MpiDefault=pmix``).
Skipped without root, ip, unshare, Slurm's daemons, srun, munged, libpmix or mpi4py (CI installs them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns_cluster import HEAD_HOST, SUBNET, NetnsCluster, netns_available, netns_cluster, netns_missing  # noqa: E402
from withdrawal_helpers import check_two_node_point  # noqa: E402

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
PMIX = Path("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so")  # what Debian's mpi_pmix plugin opens


def _missing() -> str | None:
    missing = netns_missing()
    if missing:
        return missing
    for tool in ("slurmctld", "slurmd", "srun", "sinfo", "munged"):
        if shutil.which(tool) is None:
            return f"needs {tool} (Debian: slurmctld slurmd slurm-client munge)"
    if not PMIX.exists():
        return f"needs {PMIX} (Debian: libpmix-dev) for Slurm's PMIx plugin"
    if importlib.util.find_spec("mpi4py") is None:
        return "needs mpi4py"
    return None


needs_slurm = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def _conf(cluster: NetnsCluster, work: Path) -> str:
    nodes = "\n".join(f"NodeName={n} NodeAddr={cluster.addresses[n]} CPUs={cluster.slots} State=UNKNOWN"
                      for n in cluster.nodes)
    return f"""ClusterName=commcost
SlurmctldHost={cluster.head}({SUBNET}.{HEAD_HOST})
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool-%n
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd-%n.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
ReturnToService=2
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
"""


@contextmanager
def slurm_on(cluster: NetnsCluster, work: Path) -> Iterator[dict[str, str]]:
    """Slurm's daemons on the cluster's namespaces; yields the environment a job submitter needs. Each node
    reads its own copy of the configuration (the same slurm.conf) with an mpi.conf of its own: PMIx's
    per-step directories go under a folder per node (the nodes share this machine's /tmp). The daemons die
    with the namespaces."""
    conf_text = _conf(cluster, work)
    (work / "state").mkdir(parents=True, exist_ok=True)
    folders = {}
    for name in (cluster.head, *cluster.nodes):
        folder = work / name
        folder.mkdir(exist_ok=True)
        (folder / "slurm.conf").write_text(conf_text)
        # /sys/fs/cgroup here is a v1 hierarchy on tmpfs, which slurmd's autodetection refuses
        (folder / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupAutomount=yes\n")
        (work / f"pmix-{name}").mkdir(exist_ok=True)
        (folder / "mpi.conf").write_text(f"PMIxCliTmpDirBase={work / f'pmix-{name}'}\n")
        folders[name] = folder
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode != 0:
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        subprocess.run(["munged", "--force"], check=True, timeout=30)
    env = dict(os.environ, SLURM_CONF=str(folders[cluster.head] / "slurm.conf"))

    def start(ns: str, line: str) -> None:
        subprocess.run(["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c", f"hostname {ns}; {line}"],
                       check=True, timeout=60, env=env)

    start(cluster.head, f"slurmctld -f {folders[cluster.head] / 'slurm.conf'}")
    for node in cluster.nodes:
        conf = folders[node] / "slurm.conf"
        start(node, f"SLURM_CONF={conf} slurmd -N {node} -f {conf}")
    deadline = time.monotonic() + 60
    state = ""
    while time.monotonic() < deadline:
        state = subprocess.run(["ip", "netns", "exec", cluster.head, "sinfo", "-h", "-o", "%T %D"], env=env,
                               capture_output=True, text=True, timeout=30).stdout.strip()
        if state == f"idle {len(cluster.nodes)}":
            break
        time.sleep(1)
    else:
        log = (work / "slurmctld.log").read_text()[-2000:] if (work / "slurmctld.log").exists() else ""
        pytest.fail(f"Slurm did not come up: sinfo says {state!r}\n{log}")
    yield env


@needs_slurm
def test_tune_nodes_form_on_a_two_node_slurm(tmp_path):
    """``tune --nodes 2 --ppn 2`` builds srun lines from Slurm's own view of the allocation, and the rows it
    measures are what their channels say: shm with both ranks on one node, tcp with the two ranks on two
    nodes, and the measured check (with and without the files) on 2 nodes x 2 ranks, han's default on one
    side and what the written files say on the other."""
    from commcost.collectives import Collective
    from commcost.io.deployed_rules import DeployedRules, open_mpi_default
    from commcost.io.measurements import read_measurements

    reason = netns_available()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "run"
    with netns_cluster(tmp_path / "cluster", nnodes=2, slots=2, prefix=f"sl{os.getpid() % 10000}") as cluster:
        with slurm_on(cluster, tmp_path / "slurm") as env:
            env = dict(env, PYTHONPATH=str(SRC) + os.pathsep + env.get("PYTHONPATH", ""),
                       OMPI_MCA_btl_tcp_if_include=f"{SUBNET}.0/24", OMPI_MCA_oob_tcp_if_include=f"{SUBNET}.0/24",
                       OMPI_MCA_mpi_yield_when_idle="1")  # srun passes the environment on to the ranks
            line = ["ip", "netns", "exec", cluster.head, sys.executable, "-m", "commcost", "tune", "--nodes", "2",
                    "--ppn", "2", "--procs", "2", "--budget", "80", "--select-procs", "2..16", "--sizes", "1..1MiB",
                    "--out", str(out), "--quiet", "--html", str(tmp_path / "report.html")]
            proc = subprocess.run(line, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "srun -N 1 -n 2" in proc.stdout and "srun -N 2 -n 2 --distribution=cyclic" in proc.stdout
    rows = read_measurements(out / "measurements.csv")
    assert {m.nnodes for m in rows if m.channel == "shm"} == {1} and {m.nnodes for m in rows if m.channel == "tcp"} == {2}
    report = json.loads((out / "report.json").read_text())
    deployed = DeployedRules.load(out / "mca-params.conf")
    points = report["verify"]["points"]
    assert points and all(p["nprocs"] == 4 and p["nnodes"] == 2 and p["default_s"] > 0 and p["rules_s"] > 0
                          for p in points)
    for p in points:
        assert p["default_runs"] == open_mpi_default(Collective.BCAST, 4, p["nbytes"], 2).label == "han default: han"
        check_two_node_point(report, p, deployed.runs(Collective.BCAST, 4, p["nbytes"], 2), deployed.han_tunables)
    assert report["selections"]["bcast.ompi"]["grid"] and report["converged_share"] is not None
    # the page an admin reads on two nodes: self-contained, with the measured gains of the check beside the
    # predicted ones, and (where a browser runs) loading without an error
    from browser import available, external_references, load

    text = (tmp_path / "report.html").read_text()
    assert external_references(text) == [] and "Measured gains" in text and "han default: han" in text
    if available():
        seen = load(tmp_path / "report.html")
        assert seen.errors == [] and seen.images and all(complete and width > 100
                                                         for complete, width, _ in seen.images)
    print(proc.stdout[-2500:])  # the measured check, for the issue note (pytest -s)
