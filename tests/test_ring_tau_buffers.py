"""Ring_tau's buffers (calibration/mpi_benchmarks.ring_tau): at tau = 1 a rank sends back the buffer it
received into, as the ping-pong and a broadcast's ranks do; tau >= 2 sends and receives at once from two.

With a separate send buffer the tau = 1 cell at 4 MiB measured 2-3x the ping-pong in every calibration on
this project's VM, and tau-Lop priced a one-node 4 MiB broadcast that much too slow (the docstring's
numbers). The calls are recorded through a stand-in communicator, so no MPI runs here.
"""

from __future__ import annotations

import importlib.util
import types

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="needs mpi4py")


class _Comm:
    """Rank ``rank`` of 2: records the arrays each point-to-point call passes; one batch, then stop."""

    def __init__(self, rank: int):
        self.rank, self.calls = rank, []

    def Get_size(self) -> int:
        return 2

    def Get_rank(self) -> int:
        return self.rank

    def Barrier(self) -> None:
        pass

    def bcast(self, value, root=0):
        return False, 0

    def _record(self, kind, buf, **_):
        self.calls.append((kind, buf[0]))
        return kind

    def Send(self, buf, dest, tag):
        return self._record("send", buf)

    def Recv(self, buf, source, tag):
        return self._record("recv", buf)

    def Isend(self, buf, dest, tag):
        return self._record("send", buf)

    def Irecv(self, buf, source, tag):
        return self._record("recv", buf)


@pytest.fixture
def bench(monkeypatch):
    from commcost.calibration import mpi_benchmarks

    fake = types.SimpleNamespace(BYTE="byte", Wtime=lambda: 0.0,
                                 Request=types.SimpleNamespace(Waitall=lambda requests: None))
    monkeypatch.setattr(mpi_benchmarks, "MPI", fake)
    return mpi_benchmarks


@pytest.mark.parametrize("rank", [0, 1])
def test_tau_1_sends_back_the_buffer_it_received_into(bench, rank):
    comm = _Comm(rank)
    bench.ring_tau(comm, 4096, 1, min_reps=1, warmup=1)
    sent = {id(buf) for kind, buf in comm.calls if kind == "send"}
    received = {id(buf) for kind, buf in comm.calls if kind == "recv"}
    assert comm.calls and sent == received and len(sent) == 1
    assert all(buf.size == 4096 and buf.min() == buf.max() == 0xA5 for _, buf in comm.calls)  # written pages


def test_tau_2_sends_and_receives_at_once_from_two_buffers(bench):
    comm = _Comm(0)
    bench.ring_tau(comm, 4096, 2, min_reps=1, warmup=1)
    sent = {id(buf) for kind, buf in comm.calls if kind == "send"}
    received = {id(buf) for kind, buf in comm.calls if kind == "recv"}
    assert len(sent) == len(received) == 1 and sent.isdisjoint(received)
