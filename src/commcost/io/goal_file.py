"""GOAL text files: a schedule as LogGOPSim's per-rank programs of sends, receives and their dependencies.

GOAL, the "Group Operation Assembly Language" of LogGOPSim (Hoefler,
Schneider and Lumsdaine, "LogGOPSim - Simulating Large-Scale Applications
in the LogGOPS Model", LSAP workshop at HPDC 2010), describes every rank's
operations and what each waits for; LogGOPSim's ``txt2bin`` turns the text
into the simulator's input (the grammar is that of its scanner,
``src/LogGOPSim/txt2bin.re`` in https://github.com/spcl/LogGOPSim). The
subset written and read here::

    num_ranks 4

    rank 0 {
    s0: send 1024b to 1 tag 0
    s1: send 1024b to 2 tag 1
    s1 requires s0
    }

    rank 1 {
    r0: recv 1024b from 0 tag 0
    s2: send 1024b to 3 tag 2
    s2 requires r0
    }

(``label: send SIZEb to RANK [tag T] [cpu C] [nic N]``, ``recv ... from``,
``label: calc TIME [cpu C]``, ``A requires B``: A starts after B completed;
``//`` and ``/* */`` comments; labels are local to a rank block and are
defined before a ``requires`` names them, as ``txt2bin`` reads the file
line by line.)

Writing (:func:`write_goal`). Transmission i is the send ``s<i>`` on rank
``src[i]`` and the receive ``r<i>`` on rank ``dst[i]``, both with tag i, so
each send matches exactly one receive. Each rank block lists its
operations in transmission order. A dependency schedule's waits become
``requires``: "i waits for j" is ``s<i> requires r<j>`` when the sender of
i received j (``dst[j] == src[i]``) and ``s<i> requires s<j>`` when it
sent j. Receives require nothing: they are posted at the start, as
pre-posted ``MPI_Irecv``\\s, so LogGOPSim never sees an unexpected message;
except a reception the schedule orders after another (``recv_prev[i] = j``,
a blocking receive posted once the one before completed): ``r<i> requires
r<j>`` (or ``c<j>``, its reduction).
A phased schedule is written as :func:`per_rank_waits` states it: repeated
phases written out, and each rank waiting only for its own operations of
the previous phases (GOAL has no global barrier). A combine (reduction)
transmission may carry ``c<i>: calc T`` on its receiver after ``r<i>``
(``reduce_time_per_byte`` given: T = round(nbytes x reduce_time_per_byte)
in the simulator's time unit); sends that wait for the receive then
require the calc, since a rank forwards a partial result once it has
reduced it.

Reading (:func:`read_goal`) rebuilds a dependency :class:`Schedule` from
the same subset: each send pairs with the receive on its destination that
names its source and tag (several with the same source, destination and
tag pair up in the order written), a send's waits are the transmissions
whose send or receive it requires, directly or through calcs and
receives it requires (a receive's own requires delay the transmission it
completes only through the operations that require it), a transmission
whose receive a calc requires is a combine, and a receive that requires
another receive of its rank (or that one's calc) is taken after it
(``recv_prev``; the last one it names). Transmissions
are ordered topologically, smaller tags first, so a file written by
:func:`write_goal` reads back in its own order. Wildcards (``-1``) and
``irequires`` (start dependencies) have no counterpart in a schedule and
are errors, as are labels used before they are defined, unmatched sends
or receives and cycles.
"""

from __future__ import annotations

import heapq
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TextIO

import numpy as np

from commcost.errors import InputError
from commcost.io.text_lines import refuse_control
from commcost.schedule.program_order import program_order
from commcost.schedule.schedule import Schedule, dependency_rows
from commcost.units import MAX_DIGITS


# ---------------------------------------------------------------------------------------------- writing


def per_rank_waits(schedule: Schedule) -> Schedule:
    """The dependency schedule a GOAL file states for ``schedule``: what each rank can wait for on its own.

    A dependency schedule is returned as it is. A phased schedule's barrier
    cannot be written per rank, so each rank keeps the part of it it takes
    part in: its phases become its program of steps
    (:func:`commcost.schedule.program_order.program_order`, every wait named):
    its sends of a phase wait for its sends of the previous phase it sent
    in and for the receptions it completed since; inside a phase a
    sequence sender's send waits for its previous send.
    Repeated phases are written out (``repeat`` runs, named ``name (r/R)``).
    The result waits less than the phased schedule: a rank that has all it
    needs may start phase k+1 while others still run phase k, as the MPI
    program would, which a global barrier forbids.
    """
    if schedule.has_dependencies:
        return schedule
    runs: list[tuple[str, slice]] = []
    for k, part in enumerate(schedule.phase_slices()):
        times = int(schedule.repeat[k])
        name = schedule.phase_names[k]
        runs += [(name if times == 1 else f"{name} ({r + 1}/{times})", part) for r in range(times)]
    order = np.concatenate([np.arange(part.start, part.stop, dtype=np.int64) for _, part in runs]) \
        if runs else np.zeros(0, np.int64)
    lengths = [part.stop - part.start for _, part in runs]
    src, dst, posted = schedule.src[order], schedule.dst[order], schedule.posted[order]
    phase = np.repeat(np.arange(len(runs), dtype=np.int64), lengths)
    waiter, waited = program_order(phase, posted, src, dst, len(order), compress=False)
    after_ptr, after_idx = dependency_rows(len(order), waiter, waited)
    return Schedule(schedule.nprocs, src, dst, schedule.nbytes[order], phase, posted,
                    tuple(name for name, _ in runs), schedule.name, schedule.unit, None,
                    schedule.combine[order], after_ptr, after_idx)


def _whole_bytes(schedule: Schedule) -> np.ndarray:
    """Sizes as whole bytes (GOAL sizes are integers); a fractional size is an error naming it."""
    whole = np.round(schedule.nbytes)
    bad = whole != schedule.nbytes
    if np.any(bad):
        i = int(np.argmax(bad))
        raise InputError(f"transmission #{i} (src {schedule.src[i]}, dst {schedule.dst[i]}) carries "
                         f"{schedule.nbytes[i]:g} bytes; GOAL sizes are whole bytes", where=f"transmission {i}")
    return whole.astype(np.int64)


def goal_lines(schedule: Schedule, reduce_time_per_byte: float | None = None) -> Iterator[str]:
    """The lines of the GOAL file of ``schedule`` (see the module docstring), without newlines."""
    if reduce_time_per_byte is not None and not reduce_time_per_byte >= 0:
        raise InputError(f"expected a time per byte >= 0, got {reduce_time_per_byte!r}",
                         where="reduce_time_per_byte")
    phased = not schedule.has_dependencies
    dag = per_rank_waits(schedule)
    n = dag.ntransmissions
    nbytes = _whole_bytes(dag)
    calc = np.zeros(n, bool) if reduce_time_per_byte is None else dag.combine.copy()
    name = " ".join(schedule.name.split())
    yield f"// {name}: {n} transmissions on {dag.nprocs} ranks, written by commcost"
    yield "// transmission i: send s<i> on its source, recv r<i> on its destination, tag i"
    if phased:
        yield ("// phased schedule: no global barrier in GOAL; each rank waits for its own sends and "
               "receives of the previous phase")
    if calc.any():
        yield f"// c<i>: reduction of a combine transmission, {reduce_time_per_byte:g} time units per byte"
    yield f"num_ranks {dag.nprocs}"
    ranks = np.concatenate([dag.src, dag.dst])
    index = np.concatenate([np.arange(n), np.arange(n)])
    kind = np.repeat(np.array([0, 1], np.int8), n)  # 0 send, 1 receive
    events = np.lexsort((kind, index, ranks))
    src, dst = dag.src, dag.dst
    cursor = 0
    for rank in range(dag.nprocs):
        yield ""
        yield f"rank {rank} {{"
        while cursor < len(events) and ranks[events[cursor]] == rank:
            e = events[cursor]
            i = int(index[e])
            cursor += 1
            if kind[e] == 0:
                yield f"s{i}: send {nbytes[i]}b to {dst[i]} tag {i}"
                for j in dag.after(i).tolist():
                    if dst[j] == rank:
                        yield f"s{i} requires {'c' if calc[j] else 'r'}{j}"
                    else:
                        yield f"s{i} requires s{j}"
            else:
                yield f"r{i}: recv {nbytes[i]}b from {src[i]} tag {i}"
                if dag.recv_prev is not None and dag.recv_prev[i] >= 0:
                    j = int(dag.recv_prev[i])
                    yield f"r{i} requires {'c' if calc[j] else 'r'}{j}"
                if calc[i]:
                    yield f"c{i}: calc {int(round(float(dag.nbytes[i]) * reduce_time_per_byte))}"
                    yield f"c{i} requires r{i}"
        yield "}"


def write_goal(schedule: Schedule, out: str | Path | TextIO, reduce_time_per_byte: float | None = None) -> None:
    """Write ``schedule`` as a GOAL text file (a path, or an open text stream)."""
    if isinstance(out, (str, Path)):
        with open(out, "w", encoding="utf-8") as stream:
            write_goal(schedule, stream, reduce_time_per_byte)
        return
    for line in goal_lines(schedule, reduce_time_per_byte):
        out.write(line + "\n")


def goal_text(schedule: Schedule, reduce_time_per_byte: float | None = None) -> str:
    """The GOAL file of ``schedule`` as one string."""
    buffer = io.StringIO()
    write_goal(schedule, buffer, reduce_time_per_byte)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------- reading

_IDENT = r"[A-Za-z][A-Za-z0-9_]*"
_NUM_RANKS = re.compile(r"^num_ranks\s+(\d+)$")
_RANK = re.compile(r"^rank\s+(\d+)\s*\{$")
_MESSAGE = re.compile(rf"^(?:({_IDENT})\s*:\s*)?(send|recv)\s+(\d+)\s*b\s+(to|from)\s+(-1|\d+)"
                      r"(?:\s+tag\s+(-1|\d+))?(?:\s+cpu\s+(\d+))?(?:\s+nic\s+(\d+))?$")
_CALC = re.compile(rf"^(?:({_IDENT})\s*:\s*)?calc\s+(\d+)(?:\s+cpu\s+(\d+))?(?:\s+nic\s+(\d+))?$")
_REQUIRES = re.compile(rf"^({_IDENT})\s+(requires|irequires)\s+({_IDENT})$")
_LONG = re.compile(rf"(?<![A-Za-z0-9_])\d{{{MAX_DIGITS + 1},}}")  # not inside a label
_KEYWORDS = {"send", "recv", "calc", "rank", "num_ranks", "requires", "irequires", "tag", "cpu", "nic", "to", "from"}


@dataclass
class _Op:
    """One GOAL operation of a rank: a send, a receive or a calc, and what it requires."""

    kind: str  # "send", "recv" or "calc"
    rank: int
    peer: int  # destination of a send, source of a receive (-1 for a calc)
    nbytes: int
    tag: int
    line: int
    position: int  # among the rank's sends and receives, in file order
    requires: list[int] = field(default_factory=list)  # op numbers
    transmission: int = -1


def _strip_comments(text: str) -> str:
    """Text without ``/* */`` and ``//`` comments, newlines kept so line numbers stay."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_goal(text: str, source: str = "<goal>", name: str = "goal") -> Schedule:
    """A dependency schedule from GOAL text (see the module docstring); errors name ``source`` and the line."""
    def fail(line: int | None, message: str) -> InputError:
        return InputError(message, source=source, where=f"line {line}" if line else None)

    ops: list[_Op] = []
    nranks: int | None = None
    rank: int | None = None
    labels: dict[str, int] = {}
    seen: set[int] = set()
    count = 0
    for lineno, raw in enumerate(_strip_comments(text).splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        long = _LONG.search(line)
        if long:  # past any rank, size or tag (and int() of more than 4,300 digits raises a traceback)
            raise fail(lineno, f"a number of {len(long.group(0)):,} digits; expected at most {MAX_DIGITS}")
        if rank is None:
            match = _NUM_RANKS.match(line)
            if match:
                if nranks is not None:
                    raise fail(lineno, "num_ranks is given twice; expected it once, before the rank blocks")
                nranks = int(match.group(1))
                if nranks < 1:
                    raise fail(lineno, "expected num_ranks >= 1, got 0")
                continue
            match = _RANK.match(line)
            if not match:
                raise fail(lineno, f"expected 'num_ranks N' or 'rank R {{', got {line!r}")
            if nranks is None:
                raise fail(lineno, "a rank block before num_ranks; expected 'num_ranks N' first")
            rank = int(match.group(1))
            if rank >= nranks:
                raise fail(lineno, f"rank {rank} is not below num_ranks {nranks}; expected a rank in 0..{nranks - 1}")
            if rank in seen:
                raise fail(lineno, f"rank {rank} has a second block; expected one block per rank")
            seen.add(rank)
            labels = {}
            count = 0
            continue
        if line == "}":
            rank = None
            continue
        match = _MESSAGE.match(line)
        if match:
            label, verb, size, word, peer, tag = match.group(1, 2, 3, 4, 5, 6)
            if (verb == "send") != (word == "to"):
                raise fail(lineno, f"expected '{verb} SIZEb {'to' if verb == 'send' else 'from'} RANK', got {line!r}")
            if peer == "-1" or tag == "-1":
                raise fail(lineno, "a wildcard (-1) source or tag has no counterpart in a schedule; "
                                   "expected a rank and a tag")
            peer_rank = int(peer)
            if peer_rank >= nranks or peer_rank == rank:  # type: ignore[operator]
                raise fail(lineno, f"expected a peer rank in 0..{nranks - 1} other than {rank}, got {peer_rank}")
            op = _Op(verb, rank, peer_rank, int(size), int(tag or 0), lineno, count)
            count += 1
        else:
            match = _CALC.match(line)
            if match:
                label = match.group(1)
                op = _Op("calc", rank, -1, int(match.group(2)), 0, lineno, -1)
            else:
                match = _REQUIRES.match(line)
                if not match:
                    raise fail(lineno, "expected 'label: send SIZEb to R tag T', 'label: recv SIZEb from R tag T', "
                                       f"'label: calc T', 'A requires B' or '}}', got {line!r}")
                first, verb, second = match.group(1, 2, 3)
                if verb == "irequires":
                    raise fail(lineno, "irequires (start when B started) has no counterpart in a schedule; "
                                       "expected 'requires'")
                for ident in (first, second):
                    if ident not in labels:
                        raise fail(lineno, f"label {ident!r} is not defined in rank {rank} above this line; "
                                           "expected a label defined before it is required")
                ops[labels[first]].requires.append(labels[second])
                continue
        if label is not None:
            if label in _KEYWORDS:
                raise fail(lineno, f"{label!r} is a GOAL keyword; expected another label")
            if label in labels:
                raise fail(lineno, f"label {label!r} is defined twice in rank {rank}; expected unique labels")
            labels[label] = len(ops)
        ops.append(op)
    if rank is not None:
        raise fail(None, f"rank {rank}'s block is not closed; expected '}}'")
    if nranks is None:
        raise fail(None, "expected 'num_ranks N'")
    return _schedule_of(ops, nranks, name, fail)


def _schedule_of(ops: list[_Op], nranks: int, name: str, fail) -> Schedule:
    """Pair sends with receives, follow the requires to the transmissions each send waits for, order them."""
    pending: dict[tuple[int, int, int], list[int]] = {}
    for k, op in enumerate(ops):
        if op.kind == "recv":
            pending.setdefault((op.peer, op.rank, op.tag), []).append(k)
    for queue in pending.values():
        queue.reverse()
    sends = [k for k, op in enumerate(ops) if op.kind == "send"]
    for t, k in enumerate(sends):
        op = ops[k]
        queue = pending.get((op.rank, op.peer, op.tag))
        if not queue:
            raise fail(op.line, f"rank {op.rank}'s send to {op.peer} tag {op.tag} has no matching receive; "
                                f"expected 'recv {op.nbytes}b from {op.rank} tag {op.tag}' in rank {op.peer}")
        recv = ops[queue.pop()]
        if recv.nbytes != op.nbytes:
            raise fail(recv.line, f"this receive of {recv.nbytes}b matches the send of {op.nbytes}b on line {op.line}; "
                                  "expected the same size")
        op.transmission = recv.transmission = t
    for queue in pending.values():
        if queue:
            recv = ops[queue[-1]]
            raise fail(recv.line, f"rank {recv.rank}'s receive from {recv.peer} tag {recv.tag} has no matching send")
    _check_acyclic(ops, fail)
    n = len(sends)
    combine = np.zeros(n, bool)
    for op in ops:
        if op.kind == "calc":
            for k in op.requires:
                if ops[k].kind == "recv":
                    combine[ops[k].transmission] = True
    waits: list[set[int]] = []
    for k in sends:
        found: set[int] = set()
        stack = list(ops[k].requires)
        visited: set[int] = set()
        while stack:
            q = stack.pop()
            if q in visited:
                continue
            visited.add(q)
            other = ops[q]
            if other.kind != "calc":
                found.add(other.transmission)
            if other.kind != "send":  # a send's own waits come with it; a receive's or calc's do not
                stack.extend(other.requires)
        waits.append(found)
    order = _topological(ops, sends, waits, fail)
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    waiter = [int(position[t]) for t in range(n) for _ in waits[t]]
    waited = [int(position[j]) for t in range(n) for j in waits[t]]
    after_ptr, after_idx = dependency_rows(n, np.array(waiter, np.int64), np.array(waited, np.int64))
    chosen = [ops[sends[t]] for t in order]
    return Schedule(nranks, np.array([op.rank for op in chosen], np.int64),
                    np.array([op.peer for op in chosen], np.int64),
                    np.array([op.nbytes for op in chosen], np.float64), np.zeros(n, np.int64),
                    np.ones(n, bool), ("goal",), name, combine=combine[order],
                    after_ptr=after_ptr, after_idx=after_idx, recv_prev=_receive_order(ops, position))


def _receive_order(ops: list[_Op], position: np.ndarray) -> np.ndarray | None:
    """``recv_prev`` from receives that require an earlier receive of their rank (directly or through its
    calc): the last such one each names; None when no receive requires one."""
    prev = np.full(len(position), -1, np.int64)
    for op in ops:
        if op.kind != "recv":
            continue
        for k in op.requires:
            other = ops[k]
            if other.kind == "calc":
                other = next((ops[q] for q in other.requires if ops[q].kind == "recv"), other)
            if other.kind == "recv" and other.rank == op.rank:
                prev[position[op.transmission]] = position[other.transmission]
    return prev if np.any(prev >= 0) else None


def _check_acyclic(ops: list[_Op], fail) -> None:
    """A rank's requires must not loop (LogGOPSim would never start those operations)."""
    state = [0] * len(ops)  # 0 new, 1 on the stack, 2 done
    for root in range(len(ops)):
        if state[root]:
            continue
        stack = [(root, iter(ops[root].requires))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state[child] == 1:
                raise fail(ops[node].line, f"the requires of rank {ops[node].rank} form a cycle through this line; "
                                           "expected each operation to wait only for ones that can finish first")
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(ops[child].requires)))


def _topological(ops: list[_Op], sends: list[int], waits: list[set[int]], fail) -> list[int]:
    """Transmissions in an order where each comes after those it waits for; smaller tags first, then rank
    and the sender's file order (a file written by :func:`write_goal` keeps its own order)."""
    n = len(sends)
    waiting = [len(w) for w in waits]
    dependents: list[list[int]] = [[] for _ in range(n)]
    for t, found in enumerate(waits):
        for j in found:
            dependents[j].append(t)
    key = [(ops[k].tag, ops[k].rank, ops[k].position, t) for t, k in enumerate(sends)]
    ready = [key[t] for t in range(n) if waiting[t] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        t = heapq.heappop(ready)[-1]
        order.append(t)
        for d in dependents[t]:
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(ready, key[d])
    if len(order) < n:
        stuck = next(t for t in range(n) if waiting[t] > 0)
        raise fail(ops[sends[stuck]].line, "this send waits, through other ranks' messages, for itself; "
                                           "expected the requires to form no cycle")
    return order


def read_goal(path: str | Path) -> Schedule:
    """Read a GOAL text file into a dependency schedule; errors name the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the GOAL file ({exc.strerror})", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("expected a GOAL text file (UTF-8 text)", source=str(path)) from None
    return parse_goal(refuse_control(text, "GOAL file", str(path)), str(path), Path(path).stem)
