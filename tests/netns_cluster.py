"""Two (or more) "nodes" on one machine with Linux network namespaces, for real multi-node MPI runs in tests.

Layout (all private, nothing in the root namespace changes)::

    netns <prefix>h   ("head": runs mpirun; holds the bridge <prefix>br, 10.77.0.254/24)
      |-- veth <prefix>h0 ==== veth eth0 in netns <prefix>n0  (10.77.0.1/24, hostname <prefix>n0)
      |-- veth <prefix>h1 ==== veth eth0 in netns <prefix>n1  (10.77.0.2/24, hostname <prefix>n1)

mpirun runs inside the head namespace (``ip netns exec <prefix>h mpirun ...``)
and PRRTE starts one daemon per node through ``--prtemca plm_ssh_agent
AGENT``, where AGENT (a script written here) runs the daemon's command as
``ip netns exec NODE unshare --uts sh -c 'hostname NODE; COMMAND'``: Open MPI
tells nodes apart by host name, so each node gets its own UTS namespace.
Ranks on one node talk over shared memory, ranks on two nodes over TCP on
the veth pair; ``rate`` caps each node's outgoing link with ``tc tbf``
(netem is not available on every kernel). The bridge and its subnet live in
the head namespace, so two clusters with different prefixes do not clash
and the root namespace's routes are untouched; removing the namespaces
removes every link. Needs root, ``ip`` (iproute2), ``unshare`` and ``tc``.

Use :func:`netns_cluster` (a context manager that tears everything down,
also on errors) or :func:`netns_available` to skip when it cannot run.
From a shell, ``python tests/netns_cluster.py [--rate 20mbit] -- COMMAND...``
builds a cluster, runs COMMAND with ``CC_MPIRUN`` (an mpirun line for the
cluster, without ``-np`` or program), ``CC_NODES``, ``CC_HEAD``,
``CC_HOSTFILE`` and ``CC_AGENT`` in its environment, tears the cluster down
and exits with COMMAND's status (docs/two-nodes.md).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

SUBNET = "10.77.0"  # private /24 used only inside the cluster's own namespaces
HEAD_HOST = 254


def netns_missing() -> str | None:
    """Why a namespace cluster cannot be built here, from checks that create nothing: root, ip, unshare, tc."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "unshare", "tc"):
        if shutil.which(tool) is None:
            return f"needs {tool!r} on PATH"
    return None


def netns_available() -> str | None:
    """Why a namespace cluster cannot be built here (``None`` when it can): :func:`netns_missing`, then a probe."""
    missing = netns_missing()
    if missing:
        return missing
    probe = f"ccprobe{os.getpid()}"
    try:
        _sh(["ip", "netns", "add", probe])
    except RuntimeError as exc:
        return f"cannot create a network namespace: {exc}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


def _sh(cmd: Sequence[str], timeout: float = 20.0) -> str:
    """Run a command, raising RuntimeError with its stderr on failure; its stdout."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


@dataclass
class NetnsCluster:
    """A built cluster: namespaces, files, and the mpirun line that launches on it."""

    prefix: str
    nodes: list[str]
    head: str
    slots: int
    workdir: Path
    hostfile: Path
    agent: Path
    addresses: dict[str, str] = field(default_factory=dict)
    rate: str | None = None

    def in_head(self, cmd: Sequence[str]) -> list[str]:
        """``cmd`` run inside the head namespace (where mpirun must run)."""
        return ["ip", "netns", "exec", self.head, *cmd]

    def in_node(self, node: str, cmd: Sequence[str]) -> list[str]:
        """``cmd`` run inside one node's namespace."""
        return ["ip", "netns", "exec", node, *cmd]

    def mpirun(self, np: int | None, mpirun: str | None = None, extra: Sequence[str] = ()) -> list[str]:
        """An mpirun line for ``np`` ranks on the cluster's nodes (run in the head namespace); no ``-np`` if None.

        ``extra`` goes before the program: ``--map-by node`` for round-robin,
        ``--map-by slot`` (default) for sequential, ``--mca btl tcp,self``, ...
        """
        mpirun = mpirun or str(Path(sys.executable).parent / "mpirun")
        line = [mpirun, *(["-np", str(np)] if np else []), "--hostfile", str(self.hostfile),
                "--prtemca", "plm_ssh_agent", str(self.agent), "--bind-to", "none",
                "--mca", "btl_tcp_if_include", f"{SUBNET}.0/24", "--mca", "oob_tcp_if_include", f"{SUBNET}.0/24"]
        if os.geteuid() == 0:
            line.append("--allow-run-as-root")
        return self.in_head([*line, *extra])


def _agent_script(path: Path) -> None:
    """The ssh stand-in PRRTE calls as ``AGENT [ssh options] HOST COMMAND...``."""
    path.write_text(
        "#!/bin/sh\n"
        "# commcost netns cluster: PRRTE's plm_ssh_agent; runs COMMAND inside node HOST's namespace\n"
        "while [ $# -gt 0 ]; do case \"$1\" in -*) shift ;; *) break ;; esac; done\n"
        "host=\"$1\"; shift\n"
        "exec ip netns exec \"$host\" unshare --uts sh -c \"hostname $host; $*\"\n")
    path.chmod(0o755)


def _teardown(names: Sequence[str]) -> None:
    """Delete namespaces (their links, bridge and qdiscs go with them); ignores the missing ones."""
    for name in names:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=10).stdout
        for pid in pids.split():  # only processes inside our own namespaces (left-over ranks)
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


@contextmanager
def netns_cluster(workdir: Path, nnodes: int = 2, slots: int = 2, rate: str | None = None,
                  prefix: str | None = None, trunk: str | None = None) -> Iterator[NetnsCluster]:
    """Build ``nnodes`` namespace nodes joined by a bridge; yield the cluster; tear it all down.

    ``rate`` (e.g. ``"200mbit"``) caps each node's outgoing link with a
    ``tc tbf`` qdisc. ``trunk`` (e.g. ``"50mbit"``) puts the upper half of the
    nodes on a second bridge, joined to the first by one veth pair capped at
    that rate each way: every message between the halves shares that link
    (paper 001 Fig. 6). ``prefix`` names everything (default ``cc`` + pid,
    so concurrent clusters do not clash; at most 8 characters).
    """
    prefix = prefix or f"cc{os.getpid() % 100000}"
    if len(prefix) > 8:
        raise ValueError(f"prefix {prefix!r}: at most 8 characters (interface names are at most 15)")
    head = f"{prefix}h"
    nodes = [f"{prefix}n{i}" for i in range(nnodes)]
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    hostfile, agent = workdir / "hostfile", workdir / "agent.sh"
    hostfile.write_text("".join(f"{n} slots={slots}\n" for n in nodes))
    _agent_script(agent)
    _teardown([head, *nodes])  # a previous run with the same prefix that was killed
    made: list[str] = []
    try:
        bridge = f"{prefix}br"
        for name in (head, *nodes):
            _sh(["ip", "netns", "add", name])
            made.append(name)
            _sh(["ip", "-n", name, "link", "set", "lo", "up"])
        _sh(["ip", "-n", head, "link", "add", bridge, "type", "bridge"])
        _sh(["ip", "-n", head, "addr", "add", f"{SUBNET}.{HEAD_HOST}/24", "dev", bridge])
        _sh(["ip", "-n", head, "link", "set", bridge, "up"])
        second = bridge
        if trunk:  # the upper half's bridge, and the one capped link between the halves
            second = f"{prefix}bb"
            _sh(["ip", "-n", head, "link", "add", second, "type", "bridge"])
            _sh(["ip", "-n", head, "link", "set", second, "up"])
            _sh(["ip", "-n", head, "link", "add", f"{prefix}ta", "type", "veth", "peer", "name", f"{prefix}tb"])
            for end, br in ((f"{prefix}ta", bridge), (f"{prefix}tb", second)):
                _sh(["ip", "-n", head, "link", "set", end, "master", br])
                _sh(["ip", "-n", head, "link", "set", end, "up"])
                _sh(["ip", "netns", "exec", head, "tc", "qdisc", "add", "dev", end, "root", "tbf", "rate", trunk,
                     "burst", "64kb", "latency", "1s"])
        addresses = {}
        for i, node in enumerate(nodes):
            outside = f"{prefix}h{i}"
            _sh(["ip", "-n", head, "link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", node])
            _sh(["ip", "-n", head, "link", "set", outside, "master", second if i >= nnodes // 2 else bridge])
            _sh(["ip", "-n", head, "link", "set", outside, "up"])
            addresses[node] = f"{SUBNET}.{i + 1}"
            _sh(["ip", "-n", node, "addr", "add", f"{addresses[node]}/24", "dev", "eth0"])
            _sh(["ip", "-n", node, "link", "set", "eth0", "up"])
            if rate:  # each node's egress; the bridge side caps what the node receives
                for ns, dev in ((node, "eth0"), (head, outside)):
                    _sh(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                         "rate", rate, "burst", "64kb", "latency", "1s"])
        yield NetnsCluster(prefix=prefix, nodes=nodes, head=head, slots=slots, workdir=workdir,
                           hostfile=hostfile, agent=agent, addresses=addresses, rate=rate)
    finally:
        _teardown(made)


def main(argv: Sequence[str] | None = None) -> int:
    """``python tests/netns_cluster.py [options] -- COMMAND...``: COMMAND's exit status, run on a fresh cluster."""
    import argparse

    p = argparse.ArgumentParser(prog="netns_cluster.py", description=main.__doc__)
    p.add_argument("--nodes", type=int, default=2, help="number of nodes (default 2)")
    p.add_argument("--slots", type=int, default=2, help="slots per node in the hostfile (default 2)")
    p.add_argument("--rate", help="cap each node's link with tc tbf, e.g. 20mbit (default: no cap)")
    p.add_argument("--trunk", help="put the upper half of the nodes behind one link capped at this rate, e.g. "
                                    "50mbit (paper 001 Fig. 6)")
    p.add_argument("--prefix", help="name prefix of namespaces and links (default cc + pid)")
    p.add_argument("--workdir", type=Path, default=Path("netns-cluster"), help="hostfile and agent go here")
    p.add_argument("command", nargs=argparse.REMAINDER, help="command to run (after --)")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("expected a command after --")
    reason = netns_available()
    if reason:
        print(f"netns_cluster: {reason}", file=sys.stderr)
        return 2
    with netns_cluster(args.workdir, nnodes=args.nodes, slots=args.slots, rate=args.rate,
                       prefix=args.prefix, trunk=args.trunk) as cluster:
        env = dict(os.environ, CC_MPIRUN=shlex.join(cluster.mpirun(None)), CC_NODES=" ".join(cluster.nodes),
                   CC_HEAD=cluster.head, CC_HOSTFILE=str(cluster.hostfile), CC_AGENT=str(cluster.agent))
        return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
