"""Whether a batch of transmissions maps onto itself when every rank is shifted by one node's ranks.

A ring on 1,024 ranks of 4 per node is a million transmissions per pass,
but on identical nodes every node does what the one before it does: the
shift sigma(r) = r + q (mod P) maps the schedule onto itself. The models
without contention price such a schedule from the transmissions of ranks
0..q-1 alone, each receiver taken modulo q
(:mod:`commcost.models.symmetry`). A recorder in fold mode
(:class:`~commcost.collectives.recorder.Recorder` with ``fold=q``) builds
just that share, checking each batch an algorithm records with
:func:`shift_invariant`: when every batch is invariant, so is the whole
recording, and the waits that program order derives from each rank's
sequence of steps are too. An algorithm that states its waits explicitly
or orders receptions (trees, pipelines) is not folded this way
(:class:`NotFoldable`).
"""

from __future__ import annotations

import numpy as np


class NotFoldable(Exception):
    """The recording is not invariant under the shift, or uses what a fold mode cannot check."""


def shift_invariant(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, combine: np.ndarray,
                    phase: np.ndarray, nprocs: int, shift: int) -> bool:
    """Whether the batch (transmission i: ``src[i]`` to ``dst[i]``, ``nbytes[i]``, ``combine[i]``, in
    ``phase[i]``) maps onto itself under r -> r + ``shift`` (mod ``nprocs``), each sender's transmissions
    in the same order as its image's, and no transmission's sender and receiver alike modulo ``shift``
    (folded, a rank would send to itself)."""
    p, q = int(nprocs), int(shift)
    n = len(src)
    if q < 2 or p % q or q >= p:
        return False
    blocks = p // q
    if n == 0:
        return True
    if n % blocks:
        return False
    offset = (dst - src) % p
    if np.any(offset % q == 0):
        return False
    rows = n // blocks
    if n % p == 0 and np.array_equal(src.reshape(-1, p), np.broadcast_to(np.arange(p), (n // p, p))):
        # every rank once per step, in order (a ring's steps): compare each step's blocks of q ranks
        table = np.stack([offset, nbytes, combine, phase]).astype(np.float64, copy=False).reshape(4, -1, blocks, q)
        return bool(np.all(table == table[:, :, :1]))
    order = np.argsort(src, kind="stable")
    by_block = src[order].reshape(blocks, rows)
    if np.any(by_block - by_block[:1] != (np.arange(blocks, dtype=np.int64) * q)[:, None]):
        return False
    table = np.stack([offset, nbytes, combine, phase]).astype(np.float64, copy=False)[:, order]  # exact below 2**53
    table = table.reshape(4, blocks, rows)
    return bool(np.all(table == table[:, :1]))


def shift_periodic(values: np.ndarray, shift: int) -> bool:
    """Whether ``values`` (one per rank or per block, as many as ranks) repeat with period ``shift``."""
    values = np.asarray(values)
    return len(values) % shift == 0 and bool(np.all(values.reshape(-1, shift) == values[:shift]))
