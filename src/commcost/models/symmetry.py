"""Folding a dependency schedule by a symmetry of ranks: price one node's share, exactly.

A ring allgather on 1,024 ranks of 32 per node is a million transmissions,
but on identical nodes with a sequential mapping every node does the same
thing at the same times: shifting every rank by q = 32 (mod P) maps the
placed schedule onto itself. When that holds, a deterministic model
(tau-Lop's event engine) gives every transmission the end time of its image,
so it suffices to run the transmissions of ranks 0..q-1 (the
*representatives*), each waiting for the representatives of what it waited
for, and to read every other transmission's times off its representative's.

:func:`rank_shift_fold` checks the symmetry on the data instead of assuming
it, and returns None (price the whole schedule) unless all of this holds,
with sigma the shift of ranks by q:

* every transmission t has an image sigma(t): same phase, sender and
  receiver shifted by q, same occurrence among that pair's transmissions
  of the phase; with the same size, channel and the same per-transmission
  values the caller gives (``same``: combine flags);
* what sigma(t) waits for is the image of what t waits for (same counts,
  every image edge present);
* sigma maps contention domains one to one (domain(sigma(t)) is a function
  of domain(t), and injective); and a domain holding a representative holds
  only representatives, so the folded run sees each domain's whole
  concurrency;
* where receivers' work matters (``receivers=True``: receptions queue at
  the receiver), a transmission's sender and receiver differ modulo q
  (folded ranks stay distinct, so "a wait for an own send" stays told apart
  from "a wait for a reception", and each folded rank receives what rank
  r < q did); without it the folded ranks only label transmissions;
* the receive order (``recv_prev``) maps onto itself: the reception taken
  before sigma(t) is the image of the one taken before t;
* the folded waits still point backwards (no cycle).

Exactness: the model is deterministic and sees only sizes, channels,
domains, waits and these values; the whole schedule is invariant under
sigma, so its run is too, and the end time of t equals that of sigma(t).
The folded run is the whole run restricted to representatives, each wait
on another transmission replaced by its representative's, of equal end
time. tests/test_symmetry_fold.py compares folded and whole runs.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


class Fold(NamedTuple):
    """A schedule folded by a shift of ranks: run ``keep`` only, with these arrays."""

    keep: np.ndarray  # the representatives (transmissions of ranks 0..q-1), in schedule order
    rep: np.ndarray  # for every transmission, the position in ``keep`` of its representative
    src: np.ndarray  # folded sender of each kept transmission (mod q)
    dst: np.ndarray  # folded receiver (mod q)
    nprocs: int  # q
    after_ptr: np.ndarray  # folded waits of each kept transmission, as rows
    after_idx: np.ndarray  # positions in ``keep``
    recv_prev: np.ndarray  # the reception each kept one's folded receiver takes before it (position in keep), -1


MIN_TRANSMISSIONS = 20_000  # below this the whole run is cheaper than the checks


def node_period(node_of_rank: np.ndarray) -> int:
    """The number of ranks on rank 0's node: the shift to try for a mapping that fills nodes in turn."""
    node = np.asarray(node_of_rank)
    return int(np.count_nonzero(node == node[0])) if len(node) else 0


def fold_shift(node_of_rank: np.ndarray) -> int:
    """The shift of ranks a schedule built folded tries (:func:`commcost.collectives.build_folded`): one
    node's ranks (:func:`node_period`), or two nodes' where a node holds one rank (a shift by one rank
    would fold every transmission onto its own receiver; by two, a ring's neighbours stay apart)."""
    q = node_period(node_of_rank)
    return 2 if q == 1 else q


def rank_shift_fold(src: np.ndarray, dst: np.ndarray, phase: np.ndarray, nbytes: np.ndarray,
                    channel: np.ndarray, domain: np.ndarray, after_ptr: np.ndarray, after_idx: np.ndarray,
                    nprocs: int, shift: int, same: Sequence[np.ndarray] = (), receivers: bool = True,
                    min_transmissions: int = MIN_TRANSMISSIONS, recv_prev: np.ndarray | None = None) -> Fold | None:
    """The schedule folded by the shift of ranks by ``shift`` (module docstring), or None where that is
    not a symmetry, or the schedule has fewer than ``min_transmissions``. ``recv_prev``: the receive order
    (None: every reception in order of arrival)."""
    p, q, n = int(nprocs), int(shift), len(src)
    if n < max(min_transmissions, 1) or q < 2 or q >= p or p % q:
        return None
    src, dst, phase = (np.asarray(a, np.int64) for a in (src, dst, phase))
    # cheap refusals first: every block of q ranks sends and receives as much
    for who in (src, dst):
        counts = np.bincount(who, minlength=p).reshape(p // q, q)
        if np.any(counts != counts[0]):
            return None
    if receivers and np.any((src - dst) % q == 0):
        return None
    if (int(phase.max()) + 1) * p * p >= 2 ** 62:
        return None
    key = (phase * p + src) * p + dst
    order = np.arange(n, dtype=np.int64) if np.all(key[1:] >= key[:-1]) else np.argsort(key, kind="stable")
    skey = key[order]
    occurrence = np.empty(n, np.int64)
    occurrence[order] = np.arange(n, dtype=np.int64) - np.searchsorted(skey, skey, side="left")

    def find(new_src: np.ndarray, new_dst: np.ndarray) -> np.ndarray | None:
        """The transmission of the same phase and occurrence between these ranks (None if one lacks)."""
        k = (phase * p + new_src % p) * p + new_dst % p
        at = np.searchsorted(skey, k, side="left") + occurrence
        if np.any(at >= n):
            return None
        hit = order[at]
        return hit if np.array_equal(key[hit], k) else None

    image = find(src + q, dst + q)
    if image is None:
        return None
    for values in (nbytes, channel, *same):
        values = np.asarray(values)
        if not np.array_equal(values[image], values):
            return None
    # contention domains: a one-to-one map
    dom = np.asarray(domain, np.int64)
    to = np.full(int(dom.max()) + 1, -1, np.int64)
    to[dom] = dom[image]
    if not np.array_equal(to[dom], dom[image]):
        return None
    used = to[to >= 0]
    if len(used) and int(np.bincount(used).max()) > 1:  # (a count, not np.unique: 2 s on 2 M domains)
        return None
    # waits: the image of every edge is an edge, and rows have equal lengths
    after_ptr, after_idx = np.asarray(after_ptr, np.int64), np.asarray(after_idx, np.int64)
    counts = np.diff(after_ptr)
    if not np.array_equal(counts[image], counts):
        return None
    waiter = np.repeat(np.arange(n, dtype=np.int64), counts)
    if len(waiter):
        edges = waiter * n + after_idx
        if np.any(edges[1:] < edges[:-1]):
            edges = np.sort(edges)
        mapped = image[waiter] * n + image[after_idx]
        at = np.minimum(np.searchsorted(edges, mapped), len(edges) - 1)
        if not np.array_equal(edges[at], mapped):
            return None
    # the receive order: the image of "j before t" is "image(j) before image(t)"
    rprev = np.full(n, -1, np.int64) if recv_prev is None else np.asarray(recv_prev, np.int64)
    ordered = rprev >= 0
    if ordered.any():
        mapped = np.where(ordered, image[np.maximum(rprev, 0)], -1)
        if not np.array_equal(rprev[image], mapped):
            return None
    # representatives: senders 0..q-1; a domain holding one holds only such
    kept = src < q
    has_kept = np.zeros(len(to), bool)
    has_kept[dom[kept]] = True
    if np.any(has_kept[dom[~kept]]):
        return None
    keep = np.flatnonzero(kept)
    position = np.full(n, -1, np.int64)
    position[keep] = np.arange(len(keep), dtype=np.int64)
    block = src // q
    representative = find(src - block * q, dst - block * q)
    if representative is None:
        return None
    rep = position[representative]
    if np.any(rep < 0):
        return None
    rows = np.repeat(kept, counts)
    f_waiter = position[waiter[rows]]
    f_waited = rep[after_idx[rows]]
    if np.any(f_waited >= f_waiter):
        return None
    f_ptr = np.zeros(len(keep) + 1, np.int64)
    np.cumsum(counts[keep], out=f_ptr[1:])
    kept_prev = rprev[keep]
    f_prev = np.where(kept_prev >= 0, rep[np.maximum(kept_prev, 0)], -1)
    return Fold(keep, rep, src[keep] % q, dst[keep] % q, q, f_ptr, f_waited, f_prev)


class NodeFold:
    """A placed schedule's fold by one node's ranks, for the point-to-point models' timelines
    (:func:`placed_fold`); it also keeps the folded run's derived structure (``__dict__``) from one pricing
    to the next."""

    def __init__(self, fold: Fold) -> None:
        self.fold = fold


FOLD_KEY = "_node_fold"  # where a placed schedule keeps its fold (or None) once looked for
PRICED_KEY = "_priced_once"  # set at a placed schedule's first pricing


def placed_fold(placed, min_transmissions: int = MIN_TRANSMISSIONS) -> NodeFold | None:
    """The fold of a placed dependency schedule by the shift of ranks by one node's ranks, for a model whose
    every per-transmission time is a function of the transmission's size, channel and combine flag (Hockney,
    LogGP and the others priced by :mod:`commcost.models.dependency_timeline`: no contention, so each
    transmission is its own domain), or None where the shift is no symmetry (module docstring).

    Looked for at a placed schedule's second pricing, then kept: the search (1-3 s on 2-4 M transmissions)
    costs more than one whole run (0.2-1 s), and a fit prices the same schedules hundreds of times, each
    folded run 7-30x faster than a whole one (rings on 1,024-2,048 ranks of 4-32 per node)."""
    if FOLD_KEY in placed.__dict__:
        return placed.__dict__[FOLD_KEY]
    if not placed.__dict__.get(PRICED_KEY):
        placed.__dict__[PRICED_KEY] = True  # (a frozen dataclass: its fields stay as they are)
        return None
    s = placed.schedule
    fold = None
    if s.has_dependencies and s.ntransmissions >= min_transmissions:
        found = rank_shift_fold(s.src, s.dst, s.phase, s.nbytes, placed.channel,
                                np.arange(s.ntransmissions, dtype=np.int64), s.after_ptr, s.after_idx, s.nprocs,
                                node_period(placed.mapping.node_of_rank), same=(s.combine,), receivers=True,
                                min_transmissions=min_transmissions, recv_prev=s.recv_prev)
        fold = None if found is None else NodeFold(found)
    placed.__dict__[FOLD_KEY] = fold  # (a frozen dataclass: its fields stay as they are)
    return fold


def repeat_fold(fold: Fold, first: int, size: int, count: int) -> Fold | None:
    """The fold of a schedule of a prefix (``first`` transmissions) and ``count`` identical blocks of
    ``size`` (block j + 1 the image of block j: same senders, receivers, sizes and domains, its waits block
    j's shifted by ``size``; :func:`commcost.models.taulop.periodic.periodic_blocks`), from ``fold``, the fold
    of its prefix and first two blocks. The checks of :func:`rank_shift_fold` look at one block at a time
    and at the waits between a block and the one before it, which are the same for every block; so the
    fold of the whole is block 0's repeated, each block's waits shifted by its representatives. None
    when block 1's fold is not block 0's shifted (then fold the whole schedule)."""
    keep = fold.keep
    k0 = keep[keep < first]
    k1 = keep[(keep >= first) & (keep < first + size)] - first
    k2 = keep[keep >= first + size] - first - size
    nf, nb = len(k0), len(k1)
    rep = fold.rep
    ptr, idx = fold.after_ptr, fold.after_idx
    rows1 = idx[ptr[nf]:ptr[nf + nb]]
    rows2 = idx[ptr[nf + nb]:ptr[nf + 2 * nb]]
    inside = rep[first:first + size]
    if (not np.array_equal(k1, k2) or np.any(rep[:first] >= nf) or np.any((inside < nf) | (inside >= nf + nb))
            or not np.array_equal(rep[first + size:], inside + nb)
            or not np.array_equal(rows2, rows1 + nb)
            or not np.array_equal(np.diff(ptr[nf + nb:]), np.diff(ptr[nf:nf + nb + 1]))):
        return None
    shifts = np.arange(count, dtype=np.int64)[:, None]
    keep = np.concatenate([k0, (first + shifts * size + k1[None, :]).ravel()])
    rep = np.concatenate([rep[:first], (rep[first:first + size][None, :] + shifts * nb).ravel()])
    counts = np.concatenate([np.diff(ptr[:nf + 1]), np.tile(np.diff(ptr[nf:nf + nb + 1]), count)])
    after_ptr = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=after_ptr[1:])
    after_idx = np.concatenate([idx[:ptr[nf]], (rows1[None, :] + shifts * nb).ravel()])
    src = np.concatenate([fold.src[:nf], np.tile(fold.src[nf:nf + nb], count)])
    dst = np.concatenate([fold.dst[:nf], np.tile(fold.dst[nf:nf + nb], count)])
    prev1, prev2 = fold.recv_prev[nf:nf + nb], fold.recv_prev[nf + nb:nf + 2 * nb]
    if not np.array_equal(prev2, np.where(prev1 >= 0, prev1 + nb, -1)) or np.any(prev1[prev1 >= 0] < nf - nb):
        return None
    recv_prev = np.concatenate([fold.recv_prev[:nf],
                                np.where(prev1[None, :] >= 0, prev1[None, :] + shifts * nb, -1).ravel()])
    return Fold(keep, rep, src, dst, fold.nprocs, after_ptr, after_idx, recv_prev)
