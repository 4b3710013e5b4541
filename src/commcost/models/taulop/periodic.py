"""A dependency schedule that ends in many identical steps, priced from its first steps: exact, not sampled.

A ring allgather (Open MPI's scatter_allgather_ring bcast, allgather ring)
is P - 1 steps of P transmissions that differ only in which step they
belong to: same senders, receivers, sizes and contention domains, each step
waiting for the one before it as that one waited for its own predecessor.
On 2,048 ranks that is 4.2 million transmissions, and the event engine
(:mod:`.dependency_engine`) took 12 s of the 2,079-case selection grid for
them (bench/bench_collectives.py). After a transient of a few dozen steps
every step runs as the one before it, shifted by a constant time c.

*The blocks* (:func:`periodic_blocks`). The schedule's last N blocks of B
transmissions (B: the size of its last phase) with block j the image of
block j - 1: equal senders, receivers, sizes, domains (and reduction times),
and the waits of block j those of block j - 1 shifted by B. Checked on the
data, not assumed.

*The argument* (:func:`extrapolated_total`). Let F_M be the schedule cut
after its first M blocks, run by the engine with its pieces traced.

1. F_M and the whole schedule F_N run alike until the first release of a
   transmission F_M lacks, at t* (computed from F_M: the earliest release
   of block M, whose waits are block M - 1's shifted by B): a transmission
   can only change what runs with it, and nothing of blocks >= M runs
   before t*.
2. R_k, the first release of block k or later, with R_k < t*. The engine's
   state at R_k: the remaining bytes of the transmissions in flight, each
   domain's running piece, which waits of pending transmissions have
   completed, the receivers' queues. It follows from the transmissions X_k
   of blocks < k that complete after T_k - u (T_k: the earliest start of
   one in flight at R_k; u: the largest hold of a message on its receiver)
   and the pieces that start in [T_k, R_k): every transmission in flight
   at R_k started at or after T_k, so its bytes moved are the pieces since
   its start; a reception taken later arrives after T_k, and a receiver's
   earlier reception delays it only if it was done after its arrival minus
   its hold, so after T_k - u.
3. If X_k is X_{k-1} shifted by one block (all in blocks >= 1) with start,
   end and completion times, cut at R, shifted by c = R_k - R_{k-1}, and
   the pieces of the two windows agree in domain and concurrency, with
   their times shifted by c and equal bytes, then F_N's state at R_k is
   F_{N-1}'s at R_{k-1} shifted by c, and what is left to run (blocks >= k
   of F_N, blocks >= k - 1 of F_{N-1}) is the same schedule: the engine,
   deterministic and blind to absolute time, runs the rest alike, and the
   last completion (not in the transmissions completed before T_k) moves
   by c. So total(F_N) = total(F_{N-1}) + c for every N > M, and

       total(F_N) = total(F_M) + (N - M) c.

Times are compared to 1e-12 of R_k (the engine's own rounding is about
1e-16); any mismatch, in time, membership or pieces, means no
extrapolation and the caller runs the whole schedule. The engine's
tolerances (a mark passed within 1e-12 of its domain's byte counter) are
the only part of it that sees absolute values; they act at the level of
rounding. tests/test_periodic_tail.py compares with whole runs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from commcost.models.group_max import group_max

MIN_BLOCKS = 64  # fewer identical blocks than this: the whole run is cheap enough
TIME_RTOL = 1e-12  # of R_k: two times are equal
BYTES_RTOL = 1e-9  # two pieces' bytes are equal


class Blocks(NamedTuple):
    """The schedule's transmissions ``first + j * size .. first + (j + 1) * size - 1`` for j < count are
    identical steps (module docstring); everything before ``first`` is the prefix."""

    first: int
    size: int
    count: int

    def repeat(self, values: np.ndarray) -> bool:
        """Whether ``values`` (one per transmission) are the same in every block."""
        grid = np.asarray(values)[self.first:].reshape(self.count, self.size)
        return bool((grid[1:] == grid[:-1]).all())


def _last_run_true(ok: np.ndarray) -> int:
    """The first index of the final run of True in ``ok`` (len(ok) when it ends with False)."""
    bad = np.flatnonzero(~ok)
    return int(bad[-1]) + 1 if len(bad) else 0


def periodic_blocks(phase: np.ndarray, arrays: tuple[np.ndarray, ...], after_ptr: np.ndarray,
                    after_idx: np.ndarray, min_blocks: int = MIN_BLOCKS) -> Blocks | None:
    """The schedule's final run of identical blocks, B its last phase's size; ``arrays``: what must be
    equal block to block (senders, receivers, sizes, domains...). None when fewer than ``min_blocks``."""
    n = len(phase)
    if n == 0:
        return None
    size = n - int(np.searchsorted(phase, phase[-1]))  # phases are contiguous and numbered in order
    rows = n // size
    if size <= 0 or rows < min_blocks or np.any(np.diff(phase) < 0):
        return None
    lo = n - rows * size
    start_row = 0  # rows[start_row:] are images of each other, so far
    counts = np.diff(after_ptr)
    for a in arrays + (counts,):
        grid = np.asarray(a)[lo:].reshape(rows, size)
        same = (grid[1:] == grid[:-1]).all(axis=1)
        start_row = max(start_row, _last_run_true(same[start_row:]) + start_row)
        if rows - start_row < min_blocks:
            return None
    first = lo + start_row * size
    nrows = rows - start_row
    per_row = int(after_ptr[first + size] - after_ptr[first])
    if per_row:
        deps = after_idx[after_ptr[first]:after_ptr[n]].reshape(nrows, per_row)
        same = (deps[1:] == deps[:-1] + size).all(axis=1)
        skip = _last_run_true(same)
        first += skip * size
        nrows -= skip
        deps = deps[skip:]
        owner = first + np.arange(nrows * size).reshape(nrows, size)
        owner = np.repeat(owner.ravel(), counts[first:])
        if nrows and np.any(deps.ravel() >= owner):  # a wait pointing forward: cutting would break it
            return None
    return Blocks(first, size, nrows) if nrows >= min_blocks else None


def release_times(src: np.ndarray, dst: np.ndarray, after_ptr: np.ndarray, after_idx: np.ndarray,
                  end: np.ndarray, done: np.ndarray) -> np.ndarray:
    """When each transmission started, as the engine releases it: the latest of what it waits for, an own
    send's end or a reception's completion (reduction included); 0 for no waits."""
    n = len(after_ptr) - 1
    owner = np.repeat(np.arange(n), np.diff(after_ptr))
    return wait_release(n, owner, after_idx[:after_ptr[n]], src[owner], dst, end, done)


def wait_release(n: int, waiter: np.ndarray, waited: np.ndarray, waiter_src: np.ndarray, dst: np.ndarray,
                 end: np.ndarray, done: np.ndarray) -> np.ndarray:
    """For each of ``n`` transmissions, the latest time its waits (pairs ``waiter[i]`` waits for
    ``waited[i]``, the waiter sent by ``waiter_src[i]``) let it start: a wait for a reception sees its
    completion (reduction included), a wait for an own send its end; 0 where it has none of them."""
    return group_max(n, waiter, np.where(dst[waited] == waiter_src, done[waited], end[waited]))


def _first_cut_release(blocks: Blocks, m: int, src, dst, after_ptr, after_idx, end, done) -> float:
    """t*: the earliest release of block m of the whole schedule, from the run of its first m blocks (the
    waits of block m are block m - 1's shifted by one block; waits inside block m are left out, which can
    only make t* earlier)."""
    first, size = blocks.first, blocks.size
    stop = first + m * size
    lo, hi = after_ptr[stop - size], after_ptr[stop]
    counts = np.diff(after_ptr[stop - size:stop + 1])
    if np.any(counts == 0):
        return 0.0
    owner = np.repeat(np.arange(size), counts)
    dep = after_idx[lo:hi] + size
    inside = dep < stop
    owner = owner[inside]
    latest = wait_release(size, owner, dep[inside], src[stop - size + owner], dst, end, done)
    known = np.bincount(owner, minlength=size) > 0
    return float(latest[known].min()) if known.any() else 0.0


def extrapolated_total(blocks: Blocks, m: int, src: np.ndarray, dst: np.ndarray, after_ptr: np.ndarray,
                       after_idx: np.ndarray, end: np.ndarray, done: np.ndarray,
                       pieces: dict[str, np.ndarray], hold_s: float = 0.0,
                       port: np.ndarray | None = None) -> float | None:
    """The last completion of the whole schedule from a traced run (``end``, ``done``, ``pieces``; ``port``:
    when each receiver's port let the transmission in, None: at its end) of its first ``m`` blocks, or None
    when no block k < m passes the checks of the module docstring; ``hold_s``: the largest hold of a message
    on its receiver (u)."""
    first, size = blocks.first, blocks.size
    stop = first + m * size
    start = release_times(src[:stop], dst[:stop], after_ptr[:stop + 1], after_idx, end, done)
    t_cut = _first_cut_release(blocks, m, src, dst, after_ptr, after_idx, end, done)
    block_min = start[first:stop].reshape(m, size).min(axis=1)
    r = np.minimum.accumulate(block_min[::-1])[::-1]  # R_j: first release of block j or later
    blk = np.full(stop, -1, np.int64)
    blk[first:] = np.arange(stop - first) // size
    port = end if port is None else port
    rows = np.stack([start, end, done, port])[:, first:stop].reshape(4, m, size)
    shift = rows[:, 1:] - rows[:, :-1]
    steady = np.all(np.abs(shift - shift[0, :, :1][None]).max(axis=2) <= TIME_RTOL * r[1:][None], axis=0)
    for k in range(3, m):
        if not (steady[k - 2] and r[k] < t_cut and r[k] > r[k - 1]):  # steady[k - 2]: block k - 1 vs k - 2
            continue
        c = float(r[k] - r[k - 1])
        if _same_state(k, c, r, blk, (start, end, done, port), pieces, size, hold_s):
            return float(done.max()) + (blocks.count - m) * c
    return None


def _window(k: int, r: np.ndarray, blk, start, end, done, hold_s: float = 0.0) -> tuple[float, np.ndarray]:
    """T_k and X_k (module docstring)."""
    rk = r[k]
    flying = (start < rk) & (end > rk)
    t_k = min(float(rk), float(start[flying].min())) if flying.any() else float(rk)
    return t_k, np.flatnonzero((blk < k) & (done > t_k - hold_s))


def _same_state(k, c, r, blk, times, pieces, size, hold_s=0.0) -> bool:
    """The engine's state at R_k is its state at R_{k-1} shifted by c and one block (module docstring);
    ``times``: (start, end, done, port) of every transmission."""
    tol = TIME_RTOL * float(r[k])
    start, end, done, _ = times
    t_k, x_k = _window(k, r, blk, start, end, done, hold_s)
    t_j, x_j = _window(k - 1, r, blk, start, end, done, hold_s)
    if abs(t_k - c - t_j) > tol or len(x_k) != len(x_j) or (len(x_k) and blk[x_k].min() < 1):
        return False
    if not np.array_equal(x_k - size, x_j):
        return False
    for a in times:
        if np.abs(np.minimum(a[x_k], r[k]) - c - np.minimum(a[x_j], r[k - 1])).max(initial=0.0) > tol:
            return False
    return _same_pieces(pieces, t_k, float(r[k]), t_j, float(r[k - 1]), c, tol)


def _same_pieces(pieces, t_k, r_k, t_j, r_j, c, tol) -> bool:
    """The pieces starting in [T_k, R_k) are those starting in [T_{k-1}, R_{k-1}) shifted by c."""
    t0, t1 = pieces["start_s"], pieces["end_s"]
    sides = []
    for lo, hi in ((t_k, r_k), (t_j, r_j)):
        sel = np.flatnonzero((t0 >= lo) & (t0 < hi))
        sel = sel[np.lexsort((t0[sel], pieces["domain"][sel]))]
        sides.append((sel, hi))
    (a, ra), (b, rb) = sides
    if len(a) != len(b):
        return False
    if not (np.array_equal(pieces["domain"][a], pieces["domain"][b]) and np.array_equal(pieces["tau"][a],
                                                                                        pieces["tau"][b])):
        return False
    if np.abs(t0[a] - c - t0[b]).max(initial=0.0) > tol:
        return False
    whole_a, whole_b = t1[a] <= ra, t1[b] <= rb
    if not np.array_equal(whole_a, whole_b):
        return False
    if np.abs(np.minimum(t1[a], ra) - c - np.minimum(t1[b], rb)).max(initial=0.0) > tol:
        return False
    ba, bb = pieces["nbytes"][a][whole_a], pieces["nbytes"][b][whole_b]
    return bool(np.all(np.abs(ba - bb) <= BYTES_RTOL * np.maximum(1.0, np.abs(ba))))
