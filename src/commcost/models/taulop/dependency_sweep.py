"""One dependency schedule priced under tau-Lop at many message sizes, with the exact shortcuts for large ones.

A size sweep (every size a multiple of one built schedule, as
:func:`commcost.selection.grid.price_sizes` asks) runs the event engine
of :mod:`.dependency_engine` once per size, domains, laws and successors
prepared once, the sizes on all cores (the compiled loop releases the GIL).

Large schedules are mostly long runs of identical steps: a ring allgather
on P ranks is P - 1 steps of P transmissions, 4.2 million on 2,048 ranks.
Two shortcuts give the engine's own last completion, each applied only
where checks on the data prove it exact, the whole run otherwise:

* **A prefix run apart, the rest folded.** When the schedule is a prefix
  (scatter_allgather_ring's binomial scatter) and then identical blocks
  (:func:`.periodic.periodic_blocks`), the prefix runs alone. If every
  transmission of the prefix has completed (bytes, latency, its receiver's
  taking and reduction) before the first transmission after it can start,
  the prefix and the rest never share a domain at the same time and the
  rest runs alone as well, each transmission released no earlier than
  what it waits for in the prefix allows (the engine's ``release``), each
  receiver's port starting from its last reception of the prefix where
  that can delay a reception of the rest (no earlier than the rest's
  first start plus the reception's shortest duration,
  :func:`.floor.law_floor`, minus its hold). The rest is then a ring on its own: where shifting ranks by
  one node's ranks maps it onto itself, release times included, it is
  folded to one node's share (:mod:`commcost.models.symmetry`, the same
  argument as for whole schedules; the fold of its first two blocks,
  repeated, :func:`~commcost.models.symmetry.repeat_fold`, instead of
  checking millions of transmissions).
* **A periodic tail** (:mod:`.periodic`): blocks that settle into a steady
  state are priced from a run of their first few dozen blocks.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple

import numpy as np

from commcost.models.symmetry import Fold, rank_shift_fold, repeat_fold
from commcost.models.taulop.dependency_engine import Prepared, first_transmissions, prepare, run_prepared
from commcost.models.taulop.floor import law_floor
from commcost.models.taulop.params import TransmissionLaw
from commcost.models.taulop.periodic import Blocks, extrapolated_total, periodic_blocks, wait_release

PARALLEL_FROM = 500_000  # transmissions x factors from which a size sweep runs its factors on several cores
PERIODIC_FROM = 20_000  # transmissions from which a sweep looks for a prefix and a periodic tail
PERIODIC_TRIES = (24, 96)  # blocks run to find the steady state (a third of the blocks at most)
SPLIT_SHARE = 8  # a prefix runs apart when it is at most this share of the transmissions


class _Rest(NamedTuple):
    """What follows a schedule's prefix, as a schedule of its own (waits into the prefix left out)."""

    first: int  # the prefix: transmissions 0..first-1
    head: Prepared | None  # the prefix, to run alone (None: a prefix transmission waits for a later one)
    prep: Prepared  # the rest
    owner: np.ndarray  # each wait into the prefix: the waiting transmission (numbered in the rest) ...
    waited: np.ndarray  # ... and the prefix transmission it waits for
    roots: np.ndarray  # transmissions of the rest that wait for nothing in the rest
    blocks: Blocks | None  # the identical blocks of the rest
    fold: Fold | None  # the rest folded by a rank shift, if that is a symmetry of its structure, sizes and
    folded: Prepared | None  # of which transmissions wait in the prefix (then only the release times and the
    folded_blocks: Blocks | None  # receivers' states are left to check, at the transmissions that wait there)
    waiting: np.ndarray  # the transmissions of the rest that wait in the prefix


def _prefix_end(phase: np.ndarray, blocks: Blocks | None) -> int:
    """Where the prefix ends: before the blocks and the phases of one block's size just before them (the
    first ring step waits for the scatter, not for a ring step, so it is not one of the identical blocks)."""
    if blocks is None:
        return 0
    split, size = blocks.first, blocks.size
    while split >= size and phase[split - size] == phase[split - 1] and (split == size or
                                                                         phase[split - size - 1] != phase[split - 1]):
        split -= size
    return split


def _ordered(recv_prev: np.ndarray) -> tuple[np.ndarray, ...]:
    """What the receive order adds to the values identical blocks share: how far back each transmission's
    ordered predecessor is (-1: none); nothing when every reception is taken in order of arrival."""
    if not np.any(recv_prev >= 0):
        return ()
    return (np.where(recv_prev >= 0, np.arange(len(recv_prev)) - recv_prev, -1),)


def _rest_after(whole: Prepared, first: int, phase: np.ndarray, shift: int | None, receivers: bool,
                nbytes: np.ndarray) -> _Rest:
    """The schedule after its first ``first`` transmissions, prepared to run alone, folded where it can be."""
    n = len(whole.src)
    lo = int(whole.after_ptr[first])
    owner = np.repeat(np.arange(n - first), np.diff(whole.after_ptr[first:]))
    idx = whole.after_idx[lo:]
    outside = idx < first
    inner = np.bincount(owner[~outside], minlength=n - first)
    ptr = np.zeros(n - first + 1, np.int64)
    np.cumsum(inner, out=ptr[1:])
    rprev = whole.recv_prev[first:] - first
    rprev[rprev < 0] = -1  # a reception ordered after one of the prefix, which was taken before the rest began
    rest = Prepared(whole.dom[first:], whole.chan_of_dom, whole.laws, ptr, idx[~outside] - first,
                    whole.src[first:], whole.dst[first:], whole.nprocs, rprev)
    phase = phase[first:]
    blocks = periodic_blocks(phase, (rest.dom, rest.src, rest.dst) + _ordered(rprev), rest.after_ptr,
                             rest.after_idx)
    fold = None
    if shift and blocks is not None:  # fold the rest's prefix and first two blocks, and repeat (cheap)
        head = first_transmissions(rest, blocks.first + 2 * blocks.size)
        small = None if head is None else rank_shift_fold(
            head.src, head.dst, phase[:len(head.src)], np.zeros(len(head.src)), whole.chan_of_dom[head.dom],
            head.dom, head.after_ptr, head.after_idx, whole.nprocs, shift, receivers=receivers, min_transmissions=0,
            recv_prev=head.recv_prev)
        fold = None if small is None else repeat_fold(small, blocks.first, blocks.size, blocks.count)
    waiting = np.unique(owner[outside])
    if fold is not None:
        waits_there = np.zeros(n - first, bool)
        waits_there[waiting] = True
        if not (_symmetric(nbytes[first:], fold) and _symmetric(waits_there, fold)):  # (holds follow sizes)
            fold = None
    folded, folded_blocks = None, None
    if fold is not None:
        folded = Prepared(rest.dom[fold.keep], whole.chan_of_dom, whole.laws, fold.after_ptr, fold.after_idx,
                          fold.src, fold.dst, fold.nprocs, fold.recv_prev)
        nf = int(np.count_nonzero(fold.keep < blocks.first))
        folded_blocks = Blocks(nf, (len(fold.keep) - nf) // blocks.count, blocks.count)
    return _Rest(first, first_transmissions(whole, first), rest, owner[outside], idx[outside],
                 np.flatnonzero(inner == 0), blocks, fold, folded, folded_blocks, waiting)


def _symmetric(values: np.ndarray, fold: Fold) -> bool:
    """Whether every transmission's value is its representative's (the fold's shift keeps them)."""
    return np.array_equal(values, values[fold.keep][fold.rep])


class Holds:
    """Each transmission's hold on its receiver's port, a function of its channel and size (``law(channel,
    sizes)``), read at any size factor for any part of the schedule, with the two extremes the shortcuts
    need found on the distinct (channel, size) pairs alone (a ring's million transmissions have a few)."""

    def __init__(self, law: Callable[[np.ndarray, np.ndarray], np.ndarray] | None, channel: np.ndarray,
                 nbytes: np.ndarray, least: tuple[np.ndarray, np.ndarray]) -> None:
        self.law, self.channel, self.nbytes, self.least = law, channel, nbytes, least
        pairs_c, pairs_s = [], []
        for c in np.flatnonzero(np.bincount(channel)).tolist():
            mine = nbytes[channel == c]
            sizes = mine[:1] if np.all(mine == mine[0]) else np.unique(mine)
            pairs_c.append(np.full(len(sizes), c, np.int64))
            pairs_s.append(sizes)
        self._c = np.concatenate(pairs_c) if pairs_c else np.zeros(0, np.int64)
        self._s = np.concatenate(pairs_s) if pairs_s else np.zeros(0)

    def at(self, factor: float, part=slice(None)) -> np.ndarray:
        """The holds of transmissions ``part`` with every size times ``factor``."""
        channel = self.channel[part]
        if self.law is None:
            return np.zeros(len(channel))
        return self.law(channel, self.nbytes[part] * factor)

    def most(self, factor: float) -> float:
        """The longest hold."""
        return 0.0 if self.law is None else float(self.law(self._c, self._s * factor).max(initial=0.0))

    def margin(self, factor: float) -> float:
        """The least of a transmission's shortest duration (:func:`.floor.law_floor`) less its hold: a reception
        arrives at least this long after it starts and after its port could first have taken it."""
        sizes = self._s * factor
        shortest = self.least[0][self._c] + self.least[1][self._c] * sizes
        holds = 0.0 if self.law is None else self.law(self._c, sizes)
        return float(np.min(shortest - holds, initial=np.inf))


def _rest_last_end(whole: Prepared, rest: _Rest, nbytes: np.ndarray, service: np.ndarray | None,
                   holds: Holds, factor: float = 1.0) -> float | None:
    """The last completion with the prefix run apart (module docstring), or None where it overlaps the rest.
    ``holds``: the receivers' ports' holds (at ``factor``), also what tells the receivers' states the prefix
    leaves that cannot delay the rest."""
    first = rest.first
    if rest.head is None:
        return None
    hold_of = lambda part: holds.at(factor, part)  # noqa: E731
    out = run_prepared(rest.head, nbytes[:first], None if service is None else service[:first], False,
                       occupancy_s=hold_of(slice(0, first)))
    done, end = out.done, out.end
    release = wait_release(len(rest.prep.src), rest.owner, rest.waited, whole.src[first + rest.owner], whole.dst,
                           end, done)
    head_done = float(done.max(initial=0.0))
    soonest = float(release[rest.roots].min(initial=np.inf))
    if soonest < head_done:  # the rest starts while the prefix runs
        return None
    port, free = out.receivers(whole.dst[:first], whole.nprocs)  # each receiver after its last reception there
    # every transmission of the rest starts once the prefix is done (checked above), so no receiver's
    # processor is still busy with the prefix; its port delays a reception of the rest only if it was last in
    # later than that reception's arrival minus its hold, and a reception arrives at least its shortest
    # duration after the rest's first start
    free[:] = -np.inf
    port = np.where(port <= soonest + holds.margin(factor), -np.inf, port)
    nbytes = nbytes[first:]
    service = None if service is None else service[first:]
    prep, blocks, fold = rest.prep, rest.blocks, rest.fold
    at = rest.waiting  # the other release times are 0, and so are those of their images (checked once)
    q = None if fold is None else fold.nprocs
    if fold is not None and np.array_equal(release[at], release[fold.keep[fold.rep[at]]]) and (
            service is None or _symmetric(service, fold)) and np.array_equal(
            port, np.tile(port[:q], whole.nprocs // q)):
        keep = fold.keep
        prep, blocks, nbytes, release = rest.folded, rest.folded_blocks, nbytes[keep], release[keep]
        occupancy, port, free = hold_of(first + keep), port[:q], free[:q]
        service = None if service is None else service[keep]
    else:
        occupancy = hold_of(slice(first, None))
    hold = holds.most(factor)
    total = None if blocks is None else _periodic_last_end(prep, blocks, nbytes, service, release, occupancy,
                                                           (port, free), hold)
    if total is None:
        total = float(run_prepared(prep, nbytes, service, False, release, occupancy, (port, free)).done.max(initial=0.0))
    return max(total, head_done)


def _periodic_last_end(prep: Prepared, blocks: Blocks, nbytes: np.ndarray, service: np.ndarray | None,
                       release: np.ndarray | None = None, occupancy: np.ndarray | None = None,
                       receivers: tuple[np.ndarray, np.ndarray] | None = None, hold: float | None = None
                       ) -> float | None:
    """The last completion from a traced run of the first blocks (:mod:`.periodic`), or None (run it all);
    ``hold``: the longest hold of a reception on its receiver's port (None: the largest of ``occupancy``)."""
    first, size = blocks.first, blocks.size
    if not all(values is None or blocks.repeat(values) for values in (nbytes, release, service)):
        return None
    if hold is None:
        hold = 0.0 if occupancy is None else float(occupancy.max(initial=0.0))
    for m in PERIODIC_TRIES:
        if 3 * m > blocks.count:
            break
        stop = first + m * size
        cut = first_transmissions(prep, stop)
        if cut is None:
            return None
        out = run_prepared(cut, nbytes[:stop], None if service is None else service[:stop], True,
                           None if release is None else release[:stop],
                           None if occupancy is None else occupancy[:stop], receivers)
        total = extrapolated_total(blocks, m, prep.src, prep.dst, prep.after_ptr, prep.after_idx, out.end, out.done,
                                   out.pieces, hold, out.port)
        if total is not None:
            return total
    return None


def sweep_dependencies(domain: np.ndarray, channel: np.ndarray, nbytes: np.ndarray, src: np.ndarray,
                       dst: np.ndarray, nprocs: int, after_ptr: np.ndarray, after_idx: np.ndarray,
                       laws: list[TransmissionLaw | None], factors: np.ndarray,
                       service_of: Callable[[float], np.ndarray | None] | None = None,
                       phase: np.ndarray | None = None, shift: int | None = None,
                       hold_law: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                       recv_prev: np.ndarray | None = None) -> np.ndarray:
    """The last completion of the schedule with every size times each of ``factors`` (a size sweep).
    ``service_of(f)`` gives the receivers' reduction times at factor f (None: no reductions),
    ``hold_law(channel, sizes)`` a transmission's hold on its receiver's port by its channel (index) and size
    (None: none); ``recv_prev`` the receive order. With ``phase`` (each transmission's phase) a large schedule is priced with the shortcuts of the
    module docstring where they are exact; ``shift``: the rank shift to fold the rest by (one node's ranks)."""
    factors = np.asarray(factors, np.float64)
    if len(src) == 0:
        return np.zeros(len(factors))
    prep = prepare(domain, channel, src, dst, nprocs, after_ptr, after_idx, laws, recv_prev)  # successors: first run
    base = np.asarray(nbytes, np.float64)
    services = [service_of(f) if service_of is not None else None for f in factors.tolist()]
    bounds = np.array([law_floor(law) if law is not None else (0.0, 0.0) for law in laws]).reshape(-1, 2)
    holds = Holds(hold_law, np.asarray(channel, np.int64), base, (bounds[:, 0], bounds[:, 1]))
    blocks, rest = None, None
    if phase is not None and len(src) >= PERIODIC_FROM:
        phase = np.asarray(phase)
        # (a hold is a function of the domain's channel and the size: equal where those are)
        same = (prep.dom, base, prep.src, prep.dst) + _ordered(prep.recv_prev) + (
            () if services[0] is None else (services[0],))
        blocks = periodic_blocks(phase, same, prep.after_ptr, prep.after_idx)
        split = _prefix_end(phase, blocks)
        if split and SPLIT_SHARE * split <= len(src):  # a short prefix: running it apart costs little
            rest = _rest_after(prep, split, phase, shift, True, base)

    def last_end(k: int) -> float:
        scaled = base * factors[k]
        total = None
        if rest is not None:
            total = _rest_last_end(prep, rest, scaled, services[k], holds, float(factors[k]))
        occupancy = None
        if total is None and blocks is not None:
            occupancy = holds.at(float(factors[k]))
            total = _periodic_last_end(prep, blocks, scaled, services[k], occupancy=occupancy,
                                       hold=holds.most(float(factors[k])))
        if total is None:
            occupancy = holds.at(float(factors[k])) if occupancy is None else occupancy
            total = float(run_prepared(prep, scaled, services[k], False, occupancy_s=occupancy).done.max())
        return total

    workers = min(len(factors), os.cpu_count() or 1)
    if workers > 1 and len(src) * len(factors) >= PARALLEL_FROM:
        # the compiled loop releases the GIL: one run per factor on each core (same numbers, less wall time)
        with ThreadPoolExecutor(workers) as pool:
            return np.array(list(pool.map(last_end, range(len(factors)))))
    return np.array([last_end(k) for k in range(len(factors))])
