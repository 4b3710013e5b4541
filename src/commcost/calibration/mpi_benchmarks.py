"""Benchmarks run under an MPI launcher (mpirun, mpiexec, srun); the only module that imports mpi4py.

Every function takes a communicator, returns plain data and never prints.
Each times its samples at the root with ``MPI.Wtime`` and repeats them by
the rule of :func:`commcost.calibration.repetitions.adaptive_repetitions`
(a warm-up, barriers, until the mean's 95% confidence interval is narrow
enough or the point's time budget is spent).

* :func:`pingpong`: one-way time between ranks 0 and 1 (Hockney, LogGP);
* :func:`ring_tau`: tau concurrent transmissions around a ring, paper 000
  section 5.2 (tau-Lop's L^c(m, tau));
* :func:`high_volume_pingpong`: n messages each way, receives in order or
  reversed, paper 001 Algorithm 1 (max-rate, queue search);
* :func:`nbft`: one non-blocking flat tree, paper 004 section 5.1
  (gamma^c(P) eq. 14, Q(m) eq. 15);
* :func:`bcast_gather`: MPI_Bcast then a flat gather, paper 004 section 5.2
  (o, L per algorithm, eq. 16-19);
* :func:`reduce_local`: one ``MPI_Reduce_local`` per operation and datatype,
  no message (tau-Lop's gamma(m, op), issue 7 item 2);
* :func:`collective`: one collective (allreduce, reduce, allgather,
  alltoall, scatter, gather, bcast) with whatever algorithm the launcher
  forced or the MPI's own selection picks, between barriers (issue 7 item 3,
  paper 004 section 5.2's method; ``commcost verify``);
* :func:`mpdata_halo`: MPDATA's halo exchange on a periodic MPI_Cart grid,
  non-contiguous bars left/right then contiguous slices up/down (paper 002
  section 3; ``commcost arrange --measure``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from commcost.calibration.buffers import message_buffer as _buffer
from commcost.calibration.plan import TIMED_COLLECTIVES
from commcost.calibration.repetitions import adaptive_repetitions

TAG = 17


def world() -> Any:
    """``MPI.COMM_WORLD``."""
    return MPI.COMM_WORLD


def processor_names(comm: Any) -> list[str] | None:
    """Each rank's processor name (the host it runs on), gathered at rank 0; None on the other ranks."""
    return comm.gather(MPI.Get_processor_name(), root=0)


def library_version() -> str:
    """The first line of ``MPI.Get_library_version()``, e.g. ``Open MPI v5.0.11, package: ...``."""
    text = MPI.Get_library_version().strip().strip("\x00").strip()
    return text.splitlines()[0].strip() if text else ""


# ---------------------------------------------------------------- point-to-point


def pingpong(comm: Any, nbytes: int, *, min_reps: int = 20, max_reps: int = 100_000,
             time_budget_s: float = 1.0, target_ci_rel: float = 0.025, warmup: int = 10) -> dict[str, Any] | None:
    """One ping-pong point between ranks 0 and 1 (other ranks idle); every rank must call it.

    A sample is one round trip of ``nbytes`` divided by 2, timed at rank 0:
    the one-way time T(m) that Hockney's alpha + beta m models. Repetition
    rule: :func:`~commcost.calibration.repetitions.adaptive_repetitions`.
    Returns the statistics at rank 0 (see
    :func:`~commcost.calibration.repetitions.summarize`), None elsewhere.
    """
    if comm.Get_size() < 2:
        raise ValueError("ping-pong needs at least 2 ranks")
    rank = comm.Get_rank()
    msg = [_buffer(nbytes), MPI.BYTE]
    peer = 1 - rank if rank < 2 else None

    def round_trips(count: int, out: list[float] | None) -> None:
        if rank == 0:
            for _ in range(count):
                t0 = MPI.Wtime()
                comm.Send(msg, dest=peer, tag=TAG)
                comm.Recv(msg, source=peer, tag=TAG)
                t1 = MPI.Wtime()
                if out is not None:
                    out.append((t1 - t0) / 2)
        elif rank == 1:
            for _ in range(count):
                comm.Recv(msg, source=peer, tag=TAG)
                comm.Send(msg, dest=peer, tag=TAG)

    return adaptive_repetitions(comm, round_trips, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


def ring_tau(comm: Any, nbytes: int, tau: int, *, min_reps: int = 20, max_reps: int = 100_000,
             time_budget_s: float = 1.0, target_ci_rel: float = 0.025, warmup: int = 10) -> dict[str, Any] | None:
    """One Ring_tau point: ``tau`` concurrent transmissions of ``nbytes`` (paper 000 section 5.2).

    Ranks 0..tau-1 form a ring; each sends ``nbytes`` to its successor and
    receives from its predecessor at once (MPI_Isend/MPI_Irecv, MPI_Waitall),
    so tau transmissions share the channel; then the same in the opposite
    direction. A sample is the time of both rounds divided by 2, timed at
    rank 0: tau || T^c(m) = o^c(m) + k L^c(m, tau) (paper 000 eq. 1-3), from
    which :func:`commcost.calibration.fit_taulop.fit_taulop_channel` takes
    L^c(m, tau). tau = 1 is one transmission 0 -> 1 and back, the ping-pong:
    each rank sends back the buffer it received into, as :func:`pingpong`
    does and as a broadcast's ranks hold one buffer. With a separate send
    buffer (two buffers a rank, 16 MiB touched a round at 4 MiB) the cell
    measured 2-3x the ping-pong on this project's 2-core VM in every
    calibration (477-875 us against 224-314 us; tau = 2 298 us), and tau-Lop
    priced a one-node 4 MiB broadcast 2.3x too slow. tau >= 2 sends and
    receives at once, so it needs both buffers.
    Needs ``max(tau, 2)`` ranks; the others idle. Statistics at rank 0.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    if tau < 1 or max(tau, 2) > size:
        raise ValueError(f"Ring_tau with tau = {tau} needs {max(tau, 2)} ranks, have {size}")
    sbuf = _buffer(nbytes)
    rbuf = sbuf if tau == 1 else _buffer(nbytes)
    send, recv = [sbuf, MPI.BYTE], [rbuf, MPI.BYTE]
    width = max(tau, 2)
    nxt, prv = (rank + 1) % width, (rank - 1) % width

    def one_direction(to: int, frm: int, out: bool) -> None:
        if tau == 1:  # a single transmission: rank 0 sends on the way out, rank 1 on the way back
            if (rank == 0) == out:
                comm.Send(send, dest=to, tag=TAG)
            else:
                comm.Recv(recv, source=frm, tag=TAG)
            return
        MPI.Request.Waitall([comm.Irecv(recv, source=frm, tag=TAG), comm.Isend(send, dest=to, tag=TAG)])

    def rounds(count: int, out: list[float] | None) -> None:
        if rank >= width:
            return
        for _ in range(count):
            t0 = MPI.Wtime()
            one_direction(nxt, prv, True)
            one_direction(prv, nxt, False)
            t1 = MPI.Wtime()
            if out is not None:
                out.append((t1 - t0) / 2)

    return adaptive_repetitions(comm, rounds, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


def high_volume_pingpong(comm: Any, nbytes: int, count: int, *, reverse: bool = False, min_reps: int = 20,
                         max_reps: int = 100_000, time_budget_s: float = 1.0, target_ci_rel: float = 0.025,
                         warmup: int = 5) -> dict[str, Any] | None:
    """HighVolumePingPong (paper 001 Algorithm 1): ``count`` messages of ``nbytes`` each way between ranks 0 and 1.

    Rank 0 posts ``count`` MPI_Isend (tags 0..n-1) and waits, then posts
    ``count`` MPI_Irecv and waits; rank 1 does the reverse. Receives are
    posted with tags 0..n-1 (in order: no queue search) or, with
    ``reverse``, n-1..0 (the worst case: every arrival walks the whole
    posted-receive queue, the gamma n^2 term of paper 001 eq. 3). A sample
    is the round trip divided by 2, timed at rank 0. Statistics at rank 0.
    """
    if comm.Get_size() < 2:
        raise ValueError("HighVolumePingPong needs at least 2 ranks")
    if count < 1:
        raise ValueError(f"expected at least 1 message, got {count}")
    rank = comm.Get_rank()
    sbuf = _buffer(nbytes * count).reshape(count, nbytes) if nbytes else np.zeros((count, 0), np.uint8)
    rbuf = np.zeros_like(sbuf)
    peer = 1 - rank if rank < 2 else None
    recv_tags = list(range(count - 1, -1, -1)) if reverse else list(range(count))

    def sends() -> None:
        MPI.Request.Waitall([comm.Isend([sbuf[i], MPI.BYTE], dest=peer, tag=i) for i in range(count)])

    def recvs() -> None:
        MPI.Request.Waitall([comm.Irecv([rbuf[i], MPI.BYTE], source=peer, tag=recv_tags[i]) for i in range(count)])

    def round_trips(reps: int, out: list[float] | None) -> None:
        if peer is None:
            return
        for _ in range(reps):
            t0 = MPI.Wtime()
            if rank == 0:
                sends()
                recvs()
            else:
                recvs()
                sends()
            t1 = MPI.Wtime()
            if out is not None:
                out.append((t1 - t0) / 2)

    return adaptive_repetitions(comm, round_trips, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


def crossing(comm: Any, nbytes: int, pairs: int, *, min_reps: int = 20, max_reps: int = 100_000,
             time_budget_s: float = 1.0, target_ci_rel: float = 0.025, warmup: int = 10) -> dict[str, Any] | None:
    """Paper 001 Fig. 6's contention test: ``pairs`` ranks of the lower half (rank i) exchange ``nbytes`` with
    their partners i + P/2 in the upper half, all at once (MPI_Isend/MPI_Irecv, MPI_Waitall), one way then
    back. Launched with the halves on different nodes (sequential placement), every message crosses the
    links between them. A sample is both rounds divided by 2, timed at rank 0; the other ranks idle.
    Statistics at rank 0."""
    size, rank = comm.Get_size(), comm.Get_rank()
    half = size // 2
    if not 1 <= pairs <= half:
        raise ValueError(f"crossing with {pairs} pairs needs {2 * pairs} ranks, have {size}")
    buf = _buffer(nbytes)
    active = rank < pairs or half <= rank < half + pairs
    partner = rank + half if rank < half else rank - half

    def one_way(lower_sends: bool) -> None:
        if (rank < half) == lower_sends:
            comm.Send([buf, MPI.BYTE], dest=partner, tag=TAG)
        else:
            comm.Recv([buf, MPI.BYTE], source=partner, tag=TAG)

    def rounds(count: int, out: list[float] | None) -> None:
        if not active:
            return
        for _ in range(count):
            t0 = MPI.Wtime()
            one_way(True)
            one_way(False)
            t1 = MPI.Wtime()
            if out is not None:
                out.append((t1 - t0) / 2)

    return adaptive_repetitions(comm, rounds, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


# ---------------------------------------------------------------- paper 004's experiments


def nbft(comm: Any, nprocs: int, nbytes: int, *, min_reps: int = 20, max_reps: int = 100_000,
         time_budget_s: float = 1.0, target_ci_rel: float = 0.025, warmup: int = 10) -> dict[str, Any] | None:
    """One non-blocking flat tree (NBFT) of ``nprocs`` ranks broadcasting ``nbytes`` (paper 004 section 5.1).

    Rank 0 posts MPI_Isend of ``nbytes`` to ranks 1..P-1 and waits for them
    all; those post MPI_Irecv and wait. Every call is preceded by a barrier
    and timed on the root: T_NBFT^c(P, m_s) = theta^c(P, N) / N. Then
    gamma^c(P) = T_NBFT^c(P, m_s) / T_NBFT^c(2, m_s) (eq. 14) and
    Q(m_s) = T_NBFT^1(2, m_s) / T_NBFT^0(2, m_s) (eq. 15). Ranks from
    ``nprocs`` on take part in the barriers only. Statistics at rank 0.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    if not 2 <= nprocs <= size:
        raise ValueError(f"an NBFT of {nprocs} ranks needs 2 <= P <= {size}")
    sbuf, rbuf = _buffer(nbytes), _buffer(nbytes)

    def calls(count: int, out: list[float] | None) -> None:
        for _ in range(count):
            comm.Barrier()
            t0 = MPI.Wtime()
            if rank == 0:
                MPI.Request.Waitall([comm.Isend([sbuf, MPI.BYTE], dest=i, tag=TAG) for i in range(1, nprocs)])
            elif rank < nprocs:
                comm.Irecv([rbuf, MPI.BYTE], source=0, tag=TAG).Wait()
            t1 = MPI.Wtime()
            if out is not None:
                out.append(t1 - t0)

    return adaptive_repetitions(comm, calls, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


def bcast_gather(comm: Any, nbytes: int, segsize: int, *, min_reps: int = 10, max_reps: int = 100_000,
                 time_budget_s: float = 1.0, target_ci_rel: float = 0.025, warmup: int = 3) -> dict[str, Any] | None:
    """Paper 004's experiment of section 5.2: MPI_Bcast of ``nbytes`` then a flat gather of ``segsize``.

    T_experiment(P, m) = T_bcast(P, m) + T_flat_gather(P, m_s) (eq. 16-17):
    a barrier, MPI_Bcast from rank 0 (with whatever algorithm the MPI was
    told to use, e.g. Open MPI's ``coll_tuned_bcast_algorithm``), a barrier,
    then every other rank sends ``segsize`` bytes to rank 0, which receives
    them with MPI_Irecv from each and waits (the flat gather without
    synchronization). Timed on the root from just before the broadcast to
    the last receive (paper 004 section 6). Statistics at rank 0.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    buf = _buffer(nbytes)
    seg = _buffer(segsize)
    gathered = np.zeros((max(size - 1, 1), segsize), dtype=np.uint8)

    def experiments(count: int, out: list[float] | None) -> None:
        for _ in range(count):
            comm.Barrier()
            t0 = MPI.Wtime()
            comm.Bcast([buf, MPI.BYTE], root=0)
            comm.Barrier()
            if rank == 0:
                MPI.Request.Waitall([comm.Irecv([gathered[i - 1], MPI.BYTE], source=i, tag=TAG)
                                     for i in range(1, size)])
            else:
                comm.Send([seg, MPI.BYTE], dest=0, tag=TAG)
            t1 = MPI.Wtime()
            if out is not None:
                out.append(t1 - t0)

    return adaptive_repetitions(comm, experiments, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


# ---------------------------------------------------------------- computation and whole collectives

# (operation, datatype) names of the reduction benchmark -> mpi4py objects and numpy dtypes
REDUCTION_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "prod": "PROD"}
REDUCTION_TYPES = {"double": np.float64, "float": np.float32, "int": np.int32, "long": np.int64}


def reduce_local(comm: Any, op: str, dtype: str, nbytes: int, *, min_reps: int = 20, max_reps: int = 100_000,
                 time_budget_s: float = 1.0, target_ci_rel: float = 0.025,
                 warmup: int = 5) -> dict[str, Any] | None:
    """One local reduction point: ``MPI_Reduce_local`` of ``nbytes`` of ``dtype`` with ``op`` at rank 0.

    What for: tau-Lop prices the computation inside a reducing collective as
    gamma(m, op), the time one rank takes to combine m received bytes into
    its own (issue 7 item 2). A sample is one
    ``op.Reduce_local(inbuf, inoutbuf)`` (inoutbuf = inbuf op inoutbuf) of
    ``nbytes // itemsize`` elements (0 elements: the call's overhead alone), timed with ``MPI.Wtime`` on rank 0;
    the other ranks (if any) only take part in the repetition rule
    (:func:`~commcost.calibration.repetitions.adaptive_repetitions`). Buffers are set once (ones, so SUM and PROD stay
    finite and MAX/MIN compare real values). Statistics at rank 0.
    """
    if op not in REDUCTION_OPS or dtype not in REDUCTION_TYPES:
        raise ValueError(f"unknown reduction {op}_{dtype}; expected an operation of {sorted(REDUCTION_OPS)} "
                         f"and a datatype of {sorted(REDUCTION_TYPES)}")
    mpi_op = getattr(MPI, REDUCTION_OPS[op])
    kind = np.dtype(REDUCTION_TYPES[dtype])
    count = max(int(nbytes), 0) // kind.itemsize  # 0: the call's own overhead
    inbuf = np.ones(count, dtype=kind)
    inout = np.ones(count, dtype=kind)
    rank = comm.Get_rank()

    def reductions(reps: int, out: list[float] | None) -> None:
        if rank != 0:
            return
        for _ in range(reps):
            t0 = MPI.Wtime()
            mpi_op.Reduce_local(inbuf, inout)
            t1 = MPI.Wtime()
            if out is not None:
                out.append(t1 - t0)

    return adaptive_repetitions(comm, reductions, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


COLLECTIVES = TIMED_COLLECTIVES


def collective(comm: Any, name: str, nbytes: int, *, min_reps: int = 10, max_reps: int = 100_000,
               time_budget_s: float = 1.0, target_ci_rel: float = 0.025,
               warmup: int = 3) -> dict[str, Any] | None:
    """One collective point: ``name`` on every rank with a message or block of ``nbytes``, root 0.

    What for: paper 004 section 5.2's method for any collective (issue 7
    item 3): the launcher forces one Open MPI algorithm
    (``coll_tuned_<name>_algorithm``), and this times it; ``commcost
    verify`` times the MPI's own pick with and without a rules file.
    ``nbytes`` is commcost's Case.nbytes: the message for bcast (bytes),
    reduce and allreduce (doubles, MPI_SUM, so the reduction is the
    ``sum_double`` one), one rank's block for scatter, gather, allgather
    and alltoall (bytes). A sample is
    barrier, t0, the collective, barrier, t1 at rank 0: the second barrier
    makes the sample the slowest rank's completion (the max over ranks)
    plus one barrier, a constant the per-algorithm fit's intercept
    a absorbs (T = a + b T_model). Statistics at rank 0.
    """
    if name not in COLLECTIVES:
        raise ValueError(f"unknown collective {name!r}; expected one of {', '.join(COLLECTIVES)}")
    size = comm.Get_size()
    n = int(nbytes)
    if name in ("reduce", "allreduce"):
        count = max(n // 8, 1)
        send, recv = np.ones(count, np.float64), np.zeros(count, np.float64)
        if name == "reduce":
            def call() -> None:
                comm.Reduce([send, MPI.DOUBLE], [recv, MPI.DOUBLE], op=MPI.SUM, root=0)
        else:
            def call() -> None:
                comm.Allreduce([send, MPI.DOUBLE], [recv, MPI.DOUBLE], op=MPI.SUM)
    elif name == "bcast":
        message = _buffer(n)

        def call() -> None:
            comm.Bcast([message, MPI.BYTE], root=0)
    else:
        block, whole = _buffer(n), _buffer(n * size)
        if name == "allgather":
            def call() -> None:
                comm.Allgather([block, MPI.BYTE], [whole, MPI.BYTE])
        elif name == "alltoall":
            other = _buffer(n * size)

            def call() -> None:
                comm.Alltoall([whole, MPI.BYTE], [other, MPI.BYTE])
        elif name == "scatter":
            def call() -> None:
                comm.Scatter([whole, MPI.BYTE], [block, MPI.BYTE], root=0)
        else:
            def call() -> None:
                comm.Gather([block, MPI.BYTE], [whole, MPI.BYTE], root=0)

    def samples(count: int, out: list[float] | None) -> None:
        for _ in range(count):
            comm.Barrier()
            t0 = MPI.Wtime()
            call()
            comm.Barrier()
            t1 = MPI.Wtime()
            if out is not None:
                out.append(t1 - t0)

    return adaptive_repetitions(comm, samples, min_reps=min_reps, max_reps=max_reps, time_budget_s=time_budget_s,
                                target_ci_rel=target_ci_rel, warmup=warmup)


# ---------------------------------------------------------------- paper 002's experiment


def mpdata_halo(comm: Any, dims: tuple[int, int], local: tuple[int, int, int], halo: tuple[int, int], *,
                steps: int = 10, repeat: int = 5, warmup: int = 2) -> dict[str, Any] | None:
    """MPDATA's halo exchange (paper 002 section 3) on a periodic ``dims`` = (r, c) MPI_Cart grid made without
    reordering (cart rank = world rank, row-major), as an application placed by a rankfile runs it.

    Each rank holds a C-ordered ``float64`` array of (nB + 2 ihalo) x (mB + 2 jhalo) x l, ``local`` =
    (nB, mB, l). A step sends the bars ``nB x jhalo x l`` (non-contiguous: an MPI subarray type) to the left
    and right neighbours, waits, then the slices ``ihalo x (jhalo + mB + jhalo) x l`` (contiguous) up and
    down, waits; neighbours along a single row or column are skipped (they would be the rank itself). A
    sample is ``steps`` steps after a barrier, divided by ``steps``; a run's time is the slowest rank's.
    At rank 0: ``runs_s`` (per sample), ``time_s`` (their median), ``hosts`` (each rank's processor name,
    by rank), ``h_nbytes`` and ``w_nbytes``; None elsewhere."""
    r, c = dims
    if comm.Get_size() != r * c:
        raise ValueError(f"a {r} x {c} grid needs {r * c} ranks, this run has {comm.Get_size()}")
    nb, mb, depth = local
    ih, jh = halo
    cart = comm.Create_cart([r, c], periods=[True, True], reorder=False)
    shape = [nb + 2 * ih, mb + 2 * jh, depth]
    field = np.zeros(shape, dtype=np.float64)

    def sub(sizes: list[int], starts: list[int]) -> Any:
        return MPI.DOUBLE.Create_subarray(shape, sizes, starts, order=MPI.ORDER_C).Commit()

    bar, slab = [nb, jh, depth], [ih, mb + 2 * jh, depth]
    # (send region, receive region, neighbour) for left, right, up, down
    left, right = cart.Shift(1, 1)
    up, down = cart.Shift(0, 1)
    horizontal = [(sub(bar, [ih, jh, 0]), sub(bar, [ih, 0, 0]), left),
                  (sub(bar, [ih, mb, 0]), sub(bar, [ih, mb + jh, 0]), right)] if c > 1 else []
    vertical = [(sub(slab, [ih, 0, 0]), sub(slab, [0, 0, 0]), up),
                (sub(slab, [nb, 0, 0]), sub(slab, [nb + ih, 0, 0]), down)] if r > 1 else []

    def exchange(plan: list) -> None:
        """Entry k sends toward its peer tagged k and fills its halo from the same peer with what that peer
        sent the other way (tag 1 - k): with two columns (rows) both peers are one rank, the tags tell the
        two messages apart."""
        if not plan:
            return
        requests = [cart.Irecv([field, 1, recv_type], source=peer, tag=TAG + 1 - k)
                    for k, (_, recv_type, peer) in enumerate(plan)]
        requests += [cart.Isend([field, 1, send_type], dest=peer, tag=TAG + k)
                     for k, (send_type, _, peer) in enumerate(plan)]
        MPI.Request.Waitall(requests)

    def samples(count: int, out: list[float] | None) -> None:
        for _ in range(count):
            cart.Barrier()
            t0 = MPI.Wtime()
            for _ in range(steps):
                exchange(horizontal)
                exchange(vertical)
            t1 = MPI.Wtime()
            if out is not None:
                out.append((t1 - t0) / steps)

    # one checked step first: every halo holds the neighbour the grid says (each rank's interior is its rank)
    field[ih:ih + nb, jh:jh + mb, :] = cart.Get_rank()
    exchange(horizontal)
    exchange(vertical)
    checks = [(field[ih:ih + nb, :jh], left), (field[ih:ih + nb, mb + jh:], right)] if c > 1 else []
    checks += [(field[:ih, jh:jh + mb], up), (field[nb + ih:, jh:jh + mb], down)] if r > 1 else []
    for halo_values, peer in checks:
        if not np.all(halo_values == peer):
            raise RuntimeError(f"rank {cart.Get_rank()}: a halo from rank {peer} holds other data")
    samples(warmup, None)
    local_runs: list[float] = []
    samples(repeat, local_runs)
    runs = cart.gather(local_runs, root=0)
    hosts = cart.gather(MPI.Get_processor_name(), root=0)
    for plan in (horizontal, vertical):
        for send_type, recv_type, _ in plan:
            send_type.Free()
            recv_type.Free()
    cart.Free()
    if comm.Get_rank() != 0:
        return None
    worst = np.max(np.array(runs, dtype=np.float64), axis=0)
    return {"runs_s": worst.tolist(), "time_s": float(np.median(worst)), "hosts": hosts,
            "h_nbytes": nb * jh * depth * 8, "w_nbytes": ih * (mb + 2 * jh) * depth * 8}
