"""A ring's P - 1 steps recorded in one batch, or only one node's share of them when folding.

Open MPI's ring allreduce, segmented ring, ring allgather and ring
reduce-scatter all pass blocks around the ring: at step k rank r sends
block (r + lag - k) mod P to rank r + 1. Recording the P - 1 steps as one
batch (each its own phase) keeps a 2,048-rank ring's build in numpy; a
recorder in fold mode (:mod:`.rank_shift`) gets ranks 0..q-1's sends
alone, which is exact when the blocks' sizes repeat with period q (every
block meets every rank): checked here, else :class:`.rank_shift.NotFoldable`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from commcost.collectives.rank_shift import NotFoldable, shift_periodic
from commcost.collectives.recorder import Recorder
from commcost.schedule.schedule import SendMode


@lru_cache(maxsize=8)
def _numbers(first: int, count: int) -> tuple[str, ...]:
    """The step numbers first, first + 1, ... as text, made once per ring size: a segmented ring names
    P - 1 steps per round, thousands of rounds on a thousand ranks."""
    return tuple(str(k) for k in range(first, first + count))


def ring_pass(rec: Recorder, p: int, start: np.ndarray, stop: np.ndarray, lag: int, name: str,
              mode: SendMode, combine: bool, first: int = 0) -> None:
    """P - 1 ring steps, step k named ``name`` followed by k + ``first``: rank r sends ``[start[b], stop[b])``
    of block b = (r + lag - k) mod P to rank r + 1 (``mode``: posted, or one after another; ``combine``: the
    receiver reduces it into its own)."""
    rec.reserve(p * (p - 1), "a ring of P - 1 steps", whole=False)  # before its arrays (folded: one node's share)
    ranks = np.arange(p if rec.fold is None else rec.fold, dtype=np.int64)
    if rec.fold is not None and not shift_periodic(stop - start, rec.fold):
        raise NotFoldable("ring blocks whose sizes do not repeat with the shift")
    step = np.repeat(np.arange(p - 1, dtype=np.int64), len(ranks))
    src = np.tile(ranks, p - 1)
    block = (src + lag - step) % p
    rec.staged_sends(step, src, (src + 1) % p, start[block], stop[block], "ring", mode, combine=combine,
                     names=[name + k for k in _numbers(first, p - 1)], representatives=rec.fold is not None)
