"""Open MPI's MPI_Barrier algorithms as schedules of zero-byte transmissions, and the library's choice among them.

A benchmark that times each rank's call between barriers (OSU) starts each
rank's clock when the barrier before let it go
(:mod:`commcost.models.barrier_start`); these are the barriers that do it.
Sources: ``ompi/mca/coll/base/coll_base_barrier.c`` and the fixed decision
``ompi_coll_tuned_barrier_intra_dec_fixed`` (``coll_tuned_decision_fixed.c``),
read at v4.0.5 and v5.0.10. Every message carries 0 bytes; a step of a rank
is a ``sendrecv_zero`` (irecv, blocking send, wait) or blocking sends and
receives, and its next step waits for them
(:func:`commcost.schedule.program_order.program_order`).

* ``linear`` (1): every rank but 0 sends to rank 0, which receives them all
  (any order), then sends to 1, 2, ..., P-1 one after another.
* ``double_ring`` (2): a token twice around 0 -> 1 -> ... -> P-1 -> 0.
* ``recursive_doubling`` (3): with a = the largest power of two <= P, the
  ranks from a send to r - a first; ranks below a exchange with r XOR 2^k,
  k = 0 .. log2 a - 1; then r < P - a releases r + a.
* ``bruck`` (4): in round k every rank sends to r + 2^k and receives from
  r - 2^k (mod P), ceil(log2 P) rounds.
* ``two_proc`` (5): the two ranks exchange once (P = 2 only).
* ``tree`` (6): a binomial fan-in to rank 0, then the mirrored fan-out.

Not modelled: a synchronous send's acknowledgement (the last step of the
double ring and of recursive doubling with extra ranks), and coll/han's
barrier (Open MPI 5 on several nodes: a barrier per node, one among the
nodes' leaders, a barrier per node again).
"""

from __future__ import annotations

import numpy as np

from commcost.schedule.program_order import program_order
from commcost.schedule.schedule import Schedule, dependency_rows

ALGORITHMS = {1: "linear", 2: "double_ring", 3: "recursive_doubling", 4: "bruck", 5: "two_proc", 6: "tree"}
DECISIONS = ("ompi5", "ompi4")  # Open MPI 4.1 - 6 (the table of May 2020), Open MPI 4.0
SKEW_CHOICES = (*DECISIONS, "auto")  # --barrier-skew: a decision, or the fit of least loss of none and each


def fixed_decision(nprocs: int, decision: str = "ompi5") -> str:
    """The algorithm Open MPI's coll/tuned runs for a barrier of ``nprocs`` ranks when none is forced:
    ``ompi5`` (4.1.0 on): recursive doubling below 4 and from 8 to 63 ranks, linear from 4 to 7, Bruck from
    64 to 255, from 512 to 1,023 and from 4,096 on, the tree from 256 to 511 and from 1,024 to 4,095;
    ``ompi4`` (4.0.x): two_proc on 2, recursive doubling on a power of two, Bruck otherwise."""
    p = int(nprocs)
    if decision == "ompi4":
        if p == 2:
            return "two_proc"
        return "recursive_doubling" if p & (p - 1) == 0 else "bruck"
    if decision != "ompi5":
        raise ValueError(f"unknown barrier decision {decision!r}; expected one of {DECISIONS}")
    for below, name in ((4, "recursive_doubling"), (8, "linear"), (64, "recursive_doubling"), (256, "bruck"),
                        (512, "tree"), (1024, "bruck"), (4096, "tree")):
        if p < below:
            return name
    return "bruck"


def _steps(nprocs: int, algorithm: str) -> tuple[list[int], list[int], list[int], list[bool]]:
    """(src, dst, step, posted) of every transmission, in step order."""
    p = nprocs
    src: list[int] = []
    dst: list[int] = []
    step: list[int] = []
    posted: list[bool] = []

    def add(s: int, d: int, k: int, post: bool = True) -> None:
        src.append(s)
        dst.append(d)
        step.append(k)
        posted.append(post)

    if algorithm == "linear":
        for r in range(1, p):
            add(r, 0, 0)
        for r in range(1, p):
            add(0, r, 1, False)  # blocking sends, one after another
    elif algorithm == "double_ring":
        for k in range(2):
            for r in range(p):
                add(r, (r + 1) % p, k * p + r)
    elif algorithm in ("recursive_doubling", "two_proc"):
        if algorithm == "two_proc" and p != 2:
            raise ValueError(f"Open MPI's two_proc barrier runs on 2 ranks only, not {p}")
        a = 1 << (p.bit_length() - 1)
        for r in range(a, p):
            add(r, r - a, 0)
        k, mask = 1, 1
        while mask < a:
            for r in range(a):
                add(r, r ^ mask, k)
            k, mask = k + 1, mask << 1
        for r in range(p - a):
            add(r, r + a, k)
    elif algorithm == "bruck":
        k, distance = 0, 1
        while distance < p:
            for r in range(p):
                add(r, (r + distance) % p, k)
            k, distance = k + 1, distance << 1
    elif algorithm == "tree":
        depth = 1
        while depth < p:
            depth <<= 1
        jumps = []
        jump = 1
        while jump < depth:
            jumps.append(jump)
            jump <<= 1
        for k, jump in enumerate(jumps):  # fan-in: r = j (mod 2j) sends to r - j
            for r in range(jump, p, 2 * jump):
                add(r, r - jump, k)
        for k, jump in enumerate(reversed(jumps), start=len(jumps)):  # fan-out from rank 0
            for r in range(0, p - jump, 2 * jump):
                add(r, r + jump, k)
    else:
        raise ValueError(f"unknown barrier algorithm {algorithm!r}; expected one of {sorted(ALGORITHMS.values())}")
    return src, dst, step, posted


def barrier_schedule(nprocs: int, algorithm: str | None = None, decision: str = "ompi5") -> Schedule:
    """The dependency schedule of a barrier of ``nprocs`` ranks (module docstring): ``algorithm`` by name,
    or None for :func:`fixed_decision`'s choice. One rank: no transmission."""
    name = fixed_decision(nprocs, decision) if algorithm is None else algorithm
    if nprocs < 1:
        raise ValueError(f"a barrier needs at least one rank, not {nprocs}")
    src, dst, step, posted = _steps(nprocs, name) if nprocs > 1 else ([], [], [], [])
    n = len(src)
    phase = np.asarray(step, np.int64)
    waiter, waited = program_order(phase, np.asarray(posted, bool), np.asarray(src, np.int64),
                                   np.asarray(dst, np.int64), n)
    after_ptr, after_idx = dependency_rows(n, waiter, waited)
    nphases = int(phase.max()) + 1 if n else 0
    return Schedule(nprocs=nprocs, src=np.asarray(src, np.int64), dst=np.asarray(dst, np.int64), nbytes=np.zeros(n),
                    phase=phase, posted=np.asarray(posted, bool),
                    phase_names=tuple(f"step {k}" for k in range(nphases)), name=f"barrier {name}",
                    after_ptr=after_ptr, after_idx=after_idx)
