"""The data-flow checker: run a schedule on symbolic data and check the collective's postcondition.

Each rank's state is which bytes of the collective's buffer it holds (for
reduce and allreduce: for each byte, which ranks' contributions its
partial result contains). Phases run in order; every transmission of a
phase reads its sender's state as it was when the phase began (a rank
forwards in phase k only what it held before phase k), and all of a
phase's receptions are applied at its end. The checks:

* a sender holds every byte it sends (not for reductions, where every
  rank holds its own contribution from the start);
* a combining reception adds contributions the receiver does not have yet
  (a contribution counted twice is an error);
* at the end, the postcondition of :mod:`.case` holds.

A dependency schedule (no phase barriers) is run without phases: a
transmission sees its sender's state made of the sender's initial data and
exactly the receptions the sender has *completed* before the transmission
starts, which are the receptions among its ancestors in the dependency
graph (a chain of waits, each ending before the next starts), and, for a
reception taken in a fixed order (``recv_prev``), the ones its receiver
took before it. So the forwarding check: no transmission forwards data
before it arrived, and no partial result leaves before the reductions it
carries were done. A reception that is not an ancestor may still be under
way, and what it brings does not count, even if it comes earlier in the
arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commcost.collectives.case import Collective, CollectiveSchedule

REDUCTIONS = (Collective.REDUCE, Collective.ALLREDUCE, Collective.REDUCE_SCATTER)


class DataflowError(AssertionError):
    """A schedule that does not implement its collective."""


@dataclass(frozen=True)
class DataflowReport:
    """What a correct schedule moved: bytes sent in all, and bytes a receiver already held."""

    nbytes_sent: int
    nbytes_redundant: int


def initial_state(cs: CollectiveSchedule) -> np.ndarray:
    """``held[rank, byte]`` (``held[rank, byte, contributor]`` for reductions) before the first phase."""
    case = cs.case
    p, n = case.nprocs, case.nbytes
    size = case.collective.buffer_nbytes(p, n)
    c = case.collective
    if c in REDUCTIONS:
        held = np.zeros((p, size, p), dtype=bool)
        for r in range(p):
            held[r, :, r] = True
        return held
    held = np.zeros((p, size), dtype=bool)
    if c in (Collective.BCAST, Collective.SCATTER):
        held[case.root] = True
    elif c in (Collective.GATHER, Collective.ALLGATHER):
        for r in range(p):
            held[r, r * n:(r + 1) * n] = True
    elif c is Collective.ALLTOALL:
        for i in range(p):
            held[i, i * p * n:(i + 1) * p * n] = True
    return held


def check_postcondition(cs: CollectiveSchedule, held: np.ndarray) -> None:
    """Raise DataflowError unless the final state ``held`` is what the collective promises."""
    case = cs.case
    p, n, c = case.nprocs, case.nbytes, case.collective

    def need(rank: int, start: int, stop: int, what: str) -> None:
        missing = np.flatnonzero(~held[rank, start:stop])
        if missing.size:
            raise DataflowError(f"{cs.algorithm}, P={p}, root={case.root}, n={n}: rank {rank} lacks byte "
                                f"{start + int(missing[0])} of {what} ({missing.size} bytes missing)")

    if c in REDUCTIONS:
        ranks = [case.root] if c is Collective.REDUCE else range(p)
        for r in ranks:
            lo, hi = (r * n, (r + 1) * n) if c is Collective.REDUCE_SCATTER else (0, held.shape[1])
            partial = held[r, lo:hi].sum(axis=1)
            short = np.flatnonzero(partial != p)
            if short.size:
                b = lo + int(short[0])
                absent = np.flatnonzero(~held[r, b])
                raise DataflowError(f"{cs.algorithm}, P={p}, root={case.root}, n={n}: rank {r}'s byte {b} "
                                    f"reduces {int(partial[b - lo])} of {p} contributions "
                                    f"(missing rank {int(absent[0]) if absent.size else '?'})")
        return
    if c is Collective.BCAST or c is Collective.ALLGATHER:
        for r in range(p):
            need(r, 0, held.shape[1], "the message" if c is Collective.BCAST else "the gathered buffer")
    elif c is Collective.SCATTER:
        for r in range(p):
            need(r, r * n, (r + 1) * n, f"its block {r}")
    elif c is Collective.GATHER:
        need(case.root, 0, p * n, "the gathered buffer")
    elif c is Collective.ALLTOALL:
        for j in range(p):
            for i in range(p):
                need(j, (i * p + j) * n, (i * p + j + 1) * n, f"block ({i}, {j})")


def check(cs: CollectiveSchedule) -> DataflowReport:
    """Run ``cs`` on symbolic data; raise DataflowError at the first violation."""
    if cs.payload is None:
        raise ValueError("the schedule was built without payloads; build it with data=True")
    s = cs.schedule
    if np.any(s.repeat > 1):
        raise ValueError("the checker runs schedules recorded step by step; build it with data=True")
    if s.has_dependencies:
        return _check_dependencies(cs)
    case = cs.case
    reduction = case.collective in REDUCTIONS
    held = initial_state(cs)
    sent = redundant = 0
    for k, part in enumerate(s.phase_slices()):
        before = held.copy()
        for i in range(part.start, part.stop):
            src, dst = int(s.src[i]), int(s.dst[i])
            where = f"{cs.algorithm}, P={case.nprocs}, root={case.root}, n={case.nbytes}: phase {k} " \
                    f"({s.phase_names[k]}), {src} -> {dst}"
            ranges = cs.payload[i]
            if sum(b - a for a, b in ranges) != s.nbytes[i]:
                raise DataflowError(f"{where}: nbytes {s.nbytes[i]:g} differs from the payload {ranges}")
            for a, b in ranges:
                sent += b - a
                if reduction:
                    incoming = before[src, a:b]
                    if cs.combine[i]:
                        twice = incoming & held[dst, a:b]
                        if twice.any():
                            byte, who = np.argwhere(twice)[0]
                            raise DataflowError(f"{where}: byte {a + int(byte)} would count rank {int(who)}'s "
                                                f"contribution twice")
                        held[dst, a:b] |= incoming
                    else:
                        held[dst, a:b] = incoming
                    continue
                lacking = np.flatnonzero(~before[src, a:b])
                if lacking.size:
                    raise DataflowError(f"{where}: the sender does not hold byte {a + int(lacking[0])} "
                                        f"it sends (range [{a}, {b}))")
                redundant += int(held[dst, a:b].sum())
                held[dst, a:b] = True
    check_postcondition(cs, held)
    return DataflowReport(sent, redundant)


def _check_dependencies(cs: CollectiveSchedule) -> DataflowReport:
    """:func:`check` for a dependency schedule: each transmission reads its sender's state as made by the
    receptions among its ancestors (completed before it starts), applied in array order."""
    s = cs.schedule
    case = cs.case
    reduction = case.collective in REDUCTIONS
    start = initial_state(cs)
    n = s.ntransmissions
    ancestors = [0] * n  # bit j set: transmission j completed before this one starts
    received = [0] * n  # bit j set: j completed once this one is received (its receiver took the ones before)
    rprev = s.recv_prev if s.recv_prev is not None else np.full(n, -1, np.int64)
    into: list[list[int]] = [[] for _ in range(case.nprocs)]  # receptions of each rank, in array order
    content: list[list[np.ndarray]] = []  # what each transmission carries, per range
    cache: dict[int, tuple[list[int], np.ndarray]] = {}  # rank -> (receptions applied, in order; state)
    sent = redundant = 0
    for i in range(n):
        src, dst = int(s.src[i]), int(s.dst[i])
        mask = 0
        for j in s.after(i).tolist():
            mask |= received[j] if int(s.dst[j]) == src else ancestors[j] | (1 << j)
        ancestors[i] = mask
        received[i] = mask | (1 << i) | (received[int(rprev[i])] if rprev[i] >= 0 else 0)
        state = _state_before(start, src, mask, into[src], cache, cs.payload, content, cs.combine, reduction)
        where = f"{cs.algorithm}, P={case.nprocs}, root={case.root}, n={case.nbytes}: transmission {i} " \
                f"({s.phase_names[s.phase[i]]}), {src} -> {dst}"
        ranges = cs.payload[i]
        if sum(b - a for a, b in ranges) != s.nbytes[i]:
            raise DataflowError(f"{where}: nbytes {s.nbytes[i]:g} differs from the payload {ranges}")
        carried = []
        for a, b in ranges:
            sent += b - a
            if not reduction:
                lacking = np.flatnonzero(~state[a:b])
                if lacking.size:
                    late = [j for j in into[src] if not mask >> j & 1 and _covers(cs.payload[j], a + int(lacking[0]))]
                    why = (f"; it arrives with transmission {late[0]}, which the sender does not wait for"
                           if late else "")
                    raise DataflowError(f"{where}: the sender does not hold byte {a + int(lacking[0])} "
                                        f"it sends (range [{a}, {b})){why}")
            carried.append(state[a:b].copy())
        content.append(carried)
        into[dst].append(i)
    held = start.copy()
    for r in range(case.nprocs):
        for j in into[r]:
            before = held[r].copy()
            if not reduction:
                for a, b in cs.payload[j]:
                    redundant += int(before[a:b].sum())
            _apply(held[r], cs.payload[j], content[j], bool(cs.combine[j]), reduction,
                   f"{cs.algorithm}, P={case.nprocs}, root={case.root}, n={case.nbytes}: transmission {j}, "
                   f"{int(s.src[j])} -> {r}")
    check_postcondition(cs, held)
    return DataflowReport(sent, redundant)


def _state_before(start: np.ndarray, rank: int, mask: int, receptions: list[int],
                  cache: dict[int, tuple[list[int], np.ndarray]], payload, content, combine: np.ndarray,
                  reduction: bool) -> np.ndarray:
    """A rank's state made of its initial data and its receptions among ``mask`` (applied in array order).

    The last state computed for the rank is reused when it is a prefix of this one (the usual case: a
    rank's later sends wait for more), so a run costs about one application per reception."""
    wanted = [j for j in receptions if mask >> j & 1]
    done, state = cache.get(rank, ([], None))
    if state is None or len(done) > len(wanted) or wanted[:len(done)] != done:
        done, state = [], start[rank].copy()
    state = state.copy()
    for j in wanted[len(done):]:
        _apply(state, payload[j], content[j], bool(combine[j]), reduction)
    cache[rank] = (wanted, state)
    return state


def _covers(ranges: tuple[tuple[int, int], ...], byte: int) -> bool:
    return any(a <= byte < b for a, b in ranges)


def _apply(state: np.ndarray, ranges: tuple[tuple[int, int], ...], carried: list[np.ndarray], combine: bool,
           reduction: bool, where: str | None = None) -> None:
    """Apply one reception to a rank's ``state``: store the bytes, or (reductions) combine or replace them."""
    for (a, b), incoming in zip(ranges, carried):
        if reduction and combine:
            twice = incoming & state[a:b]
            if twice.any() and where is not None:
                byte, who = np.argwhere(twice)[0]
                raise DataflowError(f"{where}: byte {a + int(byte)} would count rank {int(who)}'s "
                                    f"contribution twice")
            state[a:b] |= incoming
        elif reduction:
            state[a:b] = incoming
        else:
            state[a:b] |= incoming
