"""Wave2D's communication as a schedule (paper 000 section 4.2, eq. 12-14).

The five-point stencil of eq. 12 reads Cur one element beyond a rectangle's
edge, so in every time step each process sends the elements of its
perimeter to every neighbour whose rectangle shares a stretch of edge with
it (corners alone need nothing): the length of the shared stretch in
blocks times b doubles. All sends of a step are non-blocking and posted at
once, so the step costs Theta = ||_i Theta_i with Theta_i = ||_{j in eta_i}
T^{c(j)}(m(j)) (eq. 13, 14), and T steps cost T x Theta.
"""

from __future__ import annotations

import numpy as np

from commcost.kernels.partition2d import Partition2D, overlap
from commcost.kernels.summa import DOUBLE_BYTES
from commcost.schedule import Schedule, ScheduleBuilder, SendMode, SizeUnit


def neighbours(part: Partition2D, rank: int) -> list[tuple[int, int]]:
    """(neighbour, shared edge in blocks) of ``rank``: eta_i of paper 000 section 4.2, by rank."""
    x, y, w, h = part.x, part.y, part.w, part.h
    side = (x == x[rank] + w[rank]) | (x + w == x[rank])
    vertical = (y == y[rank] + h[rank]) | (y + h == y[rank])
    shared = np.where(side, overlap(y[rank], h[rank], y, h), 0) + np.where(
        vertical, overlap(x[rank], w[rank], x, w), 0)
    shared[rank] = 0
    return [(int(j), int(shared[j])) for j in np.flatnonzero(shared > 0)]


def wave2d(part: Partition2D, steps: int = 1) -> Schedule:
    """``steps`` time steps of Wave2D's halo exchange: one posted phase, repeated (Theta_w2D = T x Theta)."""
    b = ScheduleBuilder(part.nprocs, f"Wave2D N={part.n} P={part.nprocs} T={steps}",
                        SizeUnit("double", DOUBLE_BYTES))
    b.phase("halo", SendMode.POSTED, repeat=steps)
    for rank in range(part.nprocs):
        for dst, blocks in neighbours(part, rank):
            b.send(rank, dst, blocks * part.block)
    return b.build()
