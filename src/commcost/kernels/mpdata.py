"""MPDATA's halo exchange on an r x c process grid as a schedule (paper 002 section 3).

Each time step, every process first exchanges with its left and right
neighbours (ring neighbours along its row, ``(j +- 1) mod c``) the
non-contiguous bars of ``h`` bytes, then with its upper and lower ones
(``(i +- 1) mod r``) the contiguous slices of ``w`` bytes
(:func:`commcost.partition.arrangement.mpdata_volumes` gives h and w). Both
exchanges are non-blocking (all sends of a direction posted at once, then
waited for), so a step is two posted phases; ``steps`` repeats them.

Ranks are the MPI_Cart ranks of the grid, row-major as ``MPI_Cart_create``
numbers them (rank ``i * c + j`` holds cell (i, j)); which process (node)
sits at each cell is the arrangement's business, not the schedule's. A
single row (column) has no horizontal (vertical) exchange: a process would
send to itself.
"""

from __future__ import annotations

import numpy as np

from commcost.schedule import Schedule, ScheduleBuilder, SendMode


def cart_neighbours(r: int, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, up, down) MPI_Cart ranks of every rank of a periodic r x c grid, row-major."""
    rank = np.arange(r * c)
    i, j = rank // c, rank % c
    return (i * c + (j - 1) % c, i * c + (j + 1) % c, ((i - 1) % r) * c + j, ((i + 1) % r) * c + j)


def halo_schedule(r: int, c: int, h: float, w: float, steps: int = 1) -> Schedule:
    """``steps`` time steps of MPDATA's halo exchange on an r x c grid: a posted horizontal phase (h bytes
    to the left and to the right neighbour) then a posted vertical one (w bytes up and down)."""
    left, right, up, down = cart_neighbours(r, c)
    b = ScheduleBuilder(r * c, f"MPDATA halo exchange {r}x{c}, {steps} step{'s' if steps != 1 else ''}")
    for step in range(steps):
        for name, size, pair, live in (("horizontal", h, (left, right), c > 1), ("vertical", w, (up, down), r > 1)):
            if not live:
                continue
            b.phase(f"{name} {step}" if steps > 1 else name, SendMode.POSTED)
            for rank in range(r * c):
                for dst in pair:
                    b.send(rank, int(dst[rank]), size)
    return b.build()
