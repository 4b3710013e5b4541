"""tau-Lop on dependency schedules: the exact event-driven engine with transmissions released by what they wait for.

Paper 000's rules (section 3) as :mod:`.engine` applies them, with the
start of every transmission given by the schedule's dependencies
(:mod:`commcost.schedule.schedule`) instead of phases:

* a transmission is released once everything it waits for has completed
  (its sender's receptions and earlier sends: their last bytes moved, and,
  for a reception, its receiver having taken it, and reduced it for a
  combine transmission under a reduction law);
* a receiver takes one message at a time, in order of arrival or in the
  order the schedule gives (``recv_prev``), each holding it for the
  receiving side of its transmission, its last transfer alone,
  L^k(m, 1) (the receiver's copy out of shared memory or of the socket
  buffer, the RDMA into its memory): done = max(end, previous done +
  occupancy) + reduction. This is paper 003's concurrency at the receiving
  side (tau transfers into one rank share it) at its limit of one rank,
  which moves its data one message at a time: a root that receives P - 1
  messages pays P - 1 receiving transfers, where its P - 1 posted sends
  share their channel (A2);
* A2: released transmissions sharing a contention domain progress together,
  each moving the same number of bytes; a piece of delta bytes at
  concurrency tau lasts the *size-dependent part* of the law,
  tau||T^c(delta) - tau||T^c(0), and a transmission whose bytes have all
  moved ends tau||T^c(0) later, tau the concurrency it ended in (its fixed
  cost, o^c(0) + sum_k L^k(0, tau), paid once). When a transmission joins
  in the middle of a piece, the piece is cut pro rata and the rest goes on
  at the new concurrency;
* A3: domains do not interfere.

Transmissions that start together with equal sizes (the steps of trees
and rings) cost exactly the paper's tau||T^c(m) (eq. 5). Where sizes
differ the paper's staircase (eq. 6-7) charges the fixed cost again on
every step, (n-1)||T(m2 - m1); here it is paid once per transmission.
The paper's own examples are phased schedules, priced by :mod:`.engine`
with the staircase as the paper writes it. The difference matters when
transmissions start at different times: a staircase that recharged the
fixed cost at every join and every end priced a ring of staggered 1-byte
transmissions up to 16x above its lockstep price, a price no ring shows.
Paying it once keeps the price continuous in the start times where
L^c(0, tau) is flat in tau (measured tables: the latency is not shared);
where a table makes L^c(0, tau) grow with tau, the fixed cost taken at
the concurrency a transmission ends in moves by at most
L^c(0, tau) - L^c(0, 1) when that concurrency changes.

Every transmission is its own job: assumption A1 (a sender's consecutive
blocking sends on one channel priced as one message of the summed size)
belongs to the paper's algebra of phased schedules and is not applied
here; a blocking send's successor starts when it has ended.

The event loop is compiled (:func:`.dependency_kernels.event_loop`, with
the data structures it keeps; O(E log E)); this module prepares what it
takes: each channel's law as flat arrays (:class:`LawArrays`, the compiled
grids of :class:`~.params.TransmissionLaw`), the domains renumbered and
the successors of every transmission. :mod:`.dependency_sweep` prices one
schedule at several size factors (a size sweep), preparing domains, laws
and successors once, with the exact shortcuts that make large schedules
cheap.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np

from commcost.models.dependency_timeline import next_of, successors
from commcost.models.taulop.dependency_kernels import FIXED_TABLE_MAX, event_loop, fixed_table
from commcost.models.taulop.params import TransmissionLaw

TRACE_FIELDS = ("domain", "tau", "nbytes", "start_s", "end_s", "cut")


class LawArrays(NamedTuple):
    """Every channel's T^c(m, tau) as flat arrays (see :func:`law_arrays`)."""

    xs: np.ndarray  # sizes of each channel's grid, concatenated
    xs_off: np.ndarray  # channel c's sizes: xs[xs_off[c]:xs_off[c + 1]]
    ys: np.ndarray  # rows of values on that grid: tau = 1..tau_sat, then o, then S
    row_off: np.ndarray  # channel c's first row
    slope: np.ndarray  # slope past the last size, one per row
    period: np.ndarray  # > 0: past the last size in whole chunks of it instead (beyond_m = "chunks"), per row
    tau_sat: np.ndarray  # above it T = o + tau * S, or T(tau_sat) where hold
    hold: np.ndarray  # per channel: beyond tau_sat hold T(m, tau_sat) (beyond_tau = "hold")


_FLATTENED: dict[tuple[int, ...], tuple[list, LawArrays]] = {}  # the last laws flattened (a fit's points share them)
FLATTENED_KEPT = 32
_FIXED: dict[int, tuple[LawArrays, np.ndarray]] = {}  # T^c(0, tau) of the last flattened laws (fixed_of_laws)
_KEPT_LOCK = threading.Lock()


def law_arrays(laws: list[TransmissionLaw | None]) -> LawArrays:
    """Flatten the compiled laws of the channels (None: a channel the schedule does not use). Kept for the
    same law objects: a fit prices every point with one model's laws, and flattening tables of thousands of
    concurrencies took 0.1 s per point."""
    key = tuple(0 if law is None else id(law) for law in laws)
    hit = _FLATTENED.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], laws)):
        return hit[1]
    flat = _flatten(laws)
    _keep(_FLATTENED, key, (list(laws), flat))  # the laws held too, so their ids stay theirs
    return flat


def _keep(cache: dict, key, entry) -> None:
    """``cache[key] = entry``, the oldest entry dropped past :data:`FLATTENED_KEPT`, under a lock: a fit prices
    its points on threads, and dropping while another thread inserts raised "dictionary changed size during
    iteration"."""
    with _KEPT_LOCK:
        if len(cache) >= FLATTENED_KEPT:
            cache.pop(next(iter(cache)))
        cache[key] = entry


def fixed_of_laws(laws: LawArrays, top: int) -> np.ndarray:
    """:func:`.dependency_kernels.fixed_table` of flattened laws up to concurrency ``top`` at least, kept for the
    same flattened laws (:func:`law_arrays` hands a fit's points the same ones): tabulated once per model
    instead of once per pricing (3.9 s of a 30 s tau-Lop fit of Peak's sweeps, 126,000 pricings). A table
    kept for a larger ``top`` serves a smaller one: the event loop reads T^c(0, tau) from it up to its size
    and computes the same values beyond."""
    hit = _FIXED.get(id(laws))
    if hit is not None and hit[0] is laws and hit[1].shape[1] > top:
        return hit[1]
    table = fixed_table(max(top, hit[1].shape[1] - 1) if hit is not None and hit[0] is laws else top, *laws)
    _keep(_FIXED, id(laws), (laws, table))  # the laws held too, so their id stays theirs
    return table


def _flatten(laws: list[TransmissionLaw | None]) -> LawArrays:
    """:func:`law_arrays` without the cache."""
    xs_parts, y_rows, slopes, periods, xs_off, row_off, tau_sat, hold = [], [], [], [], [0], [], [], []
    for law in laws:
        hold.append(law is not None and law.hold)
        if law is None:
            grids = [([0.0], [0.0], 0.0, 0.0)] * 3
            sat = 1
        else:
            sat = law.tau_saturated
            o_grid, s_grid = law._saturated()
            grids = law.compiled_all() + [o_grid, s_grid]
        xs = np.asarray(grids[0][0], dtype=np.float64)
        width = len(xs)
        for grid in grids:
            if len(grid[0]) != width:
                raise ValueError("a channel's grids must share their sizes")
        row_off.append(len(y_rows))
        for _, ys, slope, period in grids:
            y_rows.append(np.asarray(ys, dtype=np.float64))
            slopes.append(float(slope))
            periods.append(float(period))
        xs_parts.append(xs)
        xs_off.append(xs_off[-1] + width)
        tau_sat.append(sat)
    row_len = np.array([len(r) for r in y_rows])
    ys = np.zeros((len(y_rows), int(row_len.max(initial=1))))
    for k, r in enumerate(y_rows):
        ys[k, :len(r)] = r
    return LawArrays(np.concatenate(xs_parts) if xs_parts else np.zeros(0), np.array(xs_off, np.int64), ys,
                     np.array(row_off, np.int64), np.array(slopes), np.array(periods), np.array(tau_sat, np.int64),
                     np.array(hold, np.bool_))


class EngineRun(NamedTuple):
    """One run of the event loop: per transmission when its receiver was done with it, when it ended (its
    bytes moved) and when its receiver's port let it in; the traced pieces (empty unless traced)."""

    done: np.ndarray
    end: np.ndarray
    port: np.ndarray
    pieces: dict[str, np.ndarray]

    def receivers(self, dst: np.ndarray, nprocs: int) -> tuple[np.ndarray, np.ndarray]:
        """Each rank's receiving port and processor after this run: its last reception's port and done
        times (-inf: none), the state a run that follows starts from."""
        port, free = np.full(nprocs, -np.inf), np.full(nprocs, -np.inf)
        np.maximum.at(port, dst, self.port)
        np.maximum.at(free, dst, self.done)
        return port, free


class DependencyRun(NamedTuple):
    """What the engine gives: per transmission its end and what waiting on it sees (end + reduction), and,
    when traced, the pieces."""

    end_s: np.ndarray
    done_s: np.ndarray
    pieces: dict[str, np.ndarray]


def compact_domains(domain: np.ndarray, channel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Domain numbers renumbered 0..D-1 (first by value) and the channel of each; O(n) for the small
    numbers :meth:`Platform.contention_domains` gives, a sort otherwise."""
    domain = np.asarray(domain, np.int64)
    top = int(domain.max()) + 1 if len(domain) else 0
    if 0 <= int(domain.min(initial=0)) and top <= 4 * len(domain) + 1024:
        present = np.zeros(top, bool)
        present[domain] = True
        number = np.cumsum(present) - 1
        dom = number[domain]
        ndom = int(present.sum())
    else:
        _, dom = np.unique(domain, return_inverse=True)
        ndom = int(dom.max()) + 1
    chan_of_dom = np.zeros(ndom, np.int64)
    chan_of_dom[dom] = channel
    return dom.astype(np.int64), chan_of_dom


@dataclass(eq=False)
class Prepared:
    """What every run of one schedule shares, whatever its sizes: domains (compacted), laws, waits; the
    successors are computed on the first run and kept."""

    dom: np.ndarray
    chan_of_dom: np.ndarray
    laws: LawArrays
    after_ptr: np.ndarray
    after_idx: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    nprocs: int
    recv_prev: np.ndarray  # the reception each one's receiver takes before it, -1: in order of arrival

    @cached_property
    def succ(self) -> tuple[np.ndarray, np.ndarray]:
        return self._share("succ", lambda: successors(self.after_ptr, self.after_idx, len(self.src)))

    @cached_property
    def recv_links(self) -> np.ndarray:
        """The receive order both ways: row 0 each reception's predecessor, row 1 its successor (-1: none)."""
        return self._share("recv_links", lambda: np.stack([self.recv_prev, next_of(self.recv_prev)]))

    def _share(self, name: str, compute):
        """``compute()``, kept on the law-free preparation this one was made from (:func:`prepare`) too."""
        kept = self.__dict__.get("_kept")
        if kept is not None and name in kept.__dict__:
            return kept.__dict__[name]
        value = compute()
        if kept is not None:
            kept.__dict__[name] = value
        return value

    @cached_property
    def fixed_top(self) -> int:
        """The concurrency T^c(0, tau) is tabulated up to: the most transmissions a domain holds, at most
        FIXED_TABLE_MAX (whatever the laws: kept with the successors)."""
        return self._share("fixed_top", lambda: min(max(int(np.bincount(self.dom).max(initial=1)) if len(self.dom)
                                                        else 1, 1), FIXED_TABLE_MAX))

    @cached_property
    def fixed_of(self) -> np.ndarray:
        """T^c(0, tau) for tau up to :attr:`fixed_top`."""
        return fixed_of_laws(self.laws, self.fixed_top)


PREPARED_KEY = "_taulop_prepared"  # where a placed schedule (or its fold) keeps what its runs share


def prepare(domain, channel, src, dst, nprocs, after_ptr, after_idx, laws, recv_prev=None, holder=None,
            key: str = PREPARED_KEY) -> Prepared:
    """A schedule prepared for the engine: domains renumbered, laws flattened. ``holder``: an object the
    arrays belong to (a placed schedule), which then keeps under ``key`` what does not depend on the laws
    (renumbered domains, successors, receive links) for its next run: a fit runs one schedule hundreds of
    times with other laws."""
    kept = None if holder is None else holder.__dict__.get(key)
    if kept is None:
        dom, chan_of_dom = compact_domains(domain, channel)
        n = len(src)
        rprev = np.full(n, -1, np.int64) if recv_prev is None else np.ascontiguousarray(recv_prev, np.int64)
        kept = Prepared(dom, chan_of_dom, None, np.ascontiguousarray(after_ptr, np.int64),
                        np.ascontiguousarray(after_idx, np.int64), np.ascontiguousarray(src, np.int64),
                        np.ascontiguousarray(dst, np.int64), int(nprocs), rprev)
        if holder is not None:
            holder.__dict__[key] = kept  # (a frozen dataclass: its fields stay as they are)
    prep = replace(kept, laws=law_arrays(laws))
    prep.__dict__["_kept"] = kept  # its successors and receive links: computed once, by the first run needing them
    return prep


def first_transmissions(prep: Prepared, stop: int) -> Prepared | None:
    """The schedule's first ``stop`` transmissions (None if one of them waits for a later one)."""
    ptr = prep.after_ptr[:stop + 1]
    idx = prep.after_idx[:ptr[-1]]
    if len(idx) and int(idx.max()) >= stop:
        return None
    return Prepared(prep.dom[:stop], prep.chan_of_dom, prep.laws, ptr, idx, prep.src[:stop], prep.dst[:stop],
                    prep.nprocs, prep.recv_prev[:stop])  # a reception is ordered after an earlier one


def run_prepared(prep: Prepared, nbytes: np.ndarray, service_s: np.ndarray | None, trace: bool,
                 release: np.ndarray | None = None, occupancy_s: np.ndarray | None = None,
                 receivers: tuple[np.ndarray, np.ndarray] | None = None) -> EngineRun:
    """One run of the event loop (:func:`.dependency_kernels.event_loop`; ``release``: the earliest start of
    each transmission, None for when its waits allow; ``occupancy_s``: each one's hold on its receiver's port;
    ``receivers``: each rank's port and processor state before the schedule (:meth:`EngineRun.receivers`),
    None for idle)."""
    n = len(prep.src)
    cost = np.zeros((2, n))  # the receiver's reduction, then its port's hold
    if service_s is not None:
        cost[0] = service_s
    if occupancy_s is not None:
        cost[1] = occupancy_s
    release = np.zeros(n) if release is None else np.ascontiguousarray(release, np.float64)
    state = np.full((2, prep.nprocs), -np.inf)  # each rank's port and processor: its last reception in, done
    if receivers is not None:
        state[0], state[1] = receivers
    succ_ptr, succ_idx = prep.succ
    out = event_loop(prep.dom, prep.chan_of_dom, np.ascontiguousarray(nbytes, np.float64), prep.after_ptr,
                     succ_ptr, succ_idx, prep.src, prep.dst, cost, prep.recv_links, state, release, *prep.laws,
                     prep.fixed_of, bool(trace))
    return EngineRun(out[0], out[1], out[2], dict(zip(TRACE_FIELDS, out[3:])))


def simulate_dependencies(domain: np.ndarray, channel: np.ndarray, nbytes: np.ndarray, src: np.ndarray,
                          dst: np.ndarray, nprocs: int, after_ptr: np.ndarray, after_idx: np.ndarray,
                          laws: list[TransmissionLaw | None], service_s: np.ndarray | None = None,
                          trace: bool = False, occupancy_s: np.ndarray | None = None,
                          recv_prev: np.ndarray | None = None, holder=None,
                          key: str = PREPARED_KEY, origin: np.ndarray | None = None) -> DependencyRun:
    """Run a dependency schedule under tau-Lop (module docstring). ``domain``/``channel`` per transmission
    (``PlacedSchedule``); ``laws[c]`` the compiled law of channel c; ``service_s`` the receiver's reduction
    of each transmission (0 where none); ``occupancy_s`` its hold on its receiver; ``recv_prev`` the
    receive order (None: order of arrival); ``holder``, ``key``: what the arrays belong to, and where it keeps
    their preparation (:func:`prepare`); ``origin``: each rank's own start (None: all at 0), no send of it
    earlier and its processor free from then (a message in before is taken then). Pieces in
    ``pieces[field]`` for ``TRACE_FIELDS`` (domain numbers are the compacted ones; ``pieces['channel']``
    gives their channel)."""
    n = len(src)
    if n == 0:
        empty = {f: np.zeros(0) for f in TRACE_FIELDS + ("channel",)}
        return DependencyRun(np.zeros(0), np.zeros(0), empty)
    prep = prepare(domain, channel, src, dst, nprocs, after_ptr, after_idx, laws, recv_prev, holder, key)
    if origin is None:
        out = run_prepared(prep, nbytes, service_s, trace, occupancy_s=occupancy_s)
    else:
        starts = np.asarray(origin, dtype=np.float64)
        out = run_prepared(prep, nbytes, service_s, trace, starts[prep.src], occupancy_s,
                           (np.full(prep.nprocs, -np.inf), starts.copy()))
    pieces = dict(out.pieces)
    pieces["channel"] = prep.chan_of_dom[pieces["domain"]]
    return DependencyRun(out.end, out.done, pieces)
