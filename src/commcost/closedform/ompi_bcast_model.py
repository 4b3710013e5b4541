"""Closed-form costs of Open MPI's broadcast algorithms on multi-core clusters (paper 004).

What the model says, in short
-----------------------------
A segmented tree broadcast in Open MPI (coll/base ``bcast_intra_generic``)
is a sequence of *stages*. In every stage each internal node of the tree that
holds a segment forwards it to all its children with non-blocking sends and
waits for them: one small "non-blocking flat tree" (NBFT) per internal node.
Segment ``k`` leaves a node at depth ``d`` in stage ``d + k``, so with ``D``
internal depths and ``n_s`` segments there are ``D + n_s - 1`` stages. The
model charges every stage the cost of its most expensive NBFT and adds the
stages up (eq. 9-13): stages never overlap, NBFTs inside a stage never slow
one another down.

An NBFT with ``P`` processes (root included) of which ``C`` children sit on
another node costs (eq. 4, 8)

* ``gamma^0(P) T^0(m_s)`` when every child shares the root's node (``C = 0``),
* ``gamma^1(P^o) T^1(m_s)`` otherwise, where ``P^o = C + floor((P-C-1)/Q) + 1``
  counts every ``Q`` shared-memory sends as one network send.

``gamma^c(P)`` (between 1 and ``P-1``) is a measured slowdown of ``P-1``
overlapping sends with respect to one send, ``Q = T^1/T^0`` the ratio of the
network and shared-memory delays (eq. 3, 15). Point-to-point times are
tau-Lop's: a shared-memory message is two copies through a shared buffer,
``T^0(m) = o^0 + 2 L^0(m)``; a network message copies to the NIC, crosses the
wire and copies out, ``T^1(m) = o^1 + 2 L^0(m) + L^1(m)`` (section 4, eq. 17).

The linear broadcast is not segmented: the root's P-1 whole messages go one
after another (the rendezvous protocol serializes them), eq. 1. Split-binary
sends each half down one subtree of the binary tree, then partners swap
halves in one step (eq. 13).

Choices made here (the paper is silent or inconsistent)
-------------------------------------------------------
* Shared-memory-only NBFTs are priced ``gamma^0(P) T^1(m_s) / Q`` (eq. 18
  applies eq. 3 this way). Every segmented model is then ``T^1(m_s)`` times a
  number known before o and L are, which keeps the fit of eq. 16-19 linear.
* ``P^o`` keeps the ``+ 1`` of eq. 4 (eq. 18 prints it without). The paper's
  own equation system (20) confirms it: on Gros its rows grow by
  ``gamma^1(7) = 1.424`` per extra segment, the value of the worst binomial
  NBFT only with the ``+ 1``.
* o and L are fitted at one size ``ref_nbytes`` (the paper's ``m_s`` = 8 KiB).
  A message of another size ``m`` keeps the overhead and scales the
  transfers: ``L^c(m) = L^c(ref) m / ref``. Only the unsegmented linear
  algorithm and split-binary's final exchange need it.
* ``gamma^c`` is measured for ``P = 2 .. P_NBFT^max(c)``, the largest NBFT the
  platform's runs produce (Table 1). Past the table it grows along its last
  step (never downwards) and stops at ``P - 1``, the serial bound of eq. 7
  (``GammaBeyond.LINEAR``); ``GammaBeyond.HOLD`` keeps the last value instead.
* ``Q(m)`` is a number or a table over m, interpolated in ``log2 m`` and
  held beyond its ends.
* Segments are priced at the segment size, the last one too (the paper takes
  ``m`` a multiple of ``m_s``); ``n_s = ceil(m / m_s)``. A message no larger
  than one segment, or ``segsize <= 0``, is one segment of ``m`` bytes.
* The trees are Open MPI's (coll_base_topo.c): ``build_bmtree`` for binomial,
  ``build_tree(2)`` for binary and split-binary, ``build_chain(K)`` for chain
  (default ``K = 4``, coll_tuned's chain fanout) and ``build_chain(1)`` for
  pipeline. The paper's "chain tree" (eq. 10) is Open MPI's ``pipeline``;
  its "K-chain tree" (eq. 12) is Open MPI's ``chain``. Depth counts come from
  these trees, so a K-chain of uneven chains has ``ceil((P-1)/K)`` levels
  where eq. 12 writes ``floor``.
* Split-binary falls back to pipeline when half the message is smaller than
  a segment, as Open MPI does; its final exchange costs ``T^1(m/2)`` when any
  exchanging pair spans two nodes, else ``T^0(m/2)``.
* The root is rank 0 unless given; ranks sit on nodes given either as a
  number of ranks per node (consecutive ranks fill a node, the paper's
  default mapping) or as the node of every rank.

Only o^0, o^1, L^0 and L^1 enter linearly, so every time below is
``coefficients @ (o^0, o^1, L^0, L^1)``; :func:`fit_taulop` solves eq. 19 for
them with non-negative least squares. Where all messages have the segment
size the columns of o^1 and L^1 coincide and only ``T^0(m_s)`` and
``T^1(m_s)`` are identifiable (likely why every row of the paper's Table 2
has o^1 = L^1); the linear algorithm, whose messages vary in size, pins all
four.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from commcost.errors import InputError

SECTION = "ompi_bcast_model"
DEFAULT_SEGSIZE = 8192
DEFAULT_CHAIN_FANOUT = 4  # coll_tuned's bcast_algorithm_chain_fanout
_CHUNK_CELLS = 1 << 22  # (depth, message) pairs counted at once
_FLOOR_EPS = 1e-9  # floor((P-C-1)/Q) must not lose a unit to rounding when Q divides exactly


class Channel(enum.IntEnum):
    """The paper's two channels: c = 0 shared memory, c = 1 network."""

    SHM = 0
    NETWORK = 1


class GammaBeyond(enum.Enum):
    """How gamma^c(P) continues past the largest measured P."""

    LINEAR = "linear"
    HOLD = "hold"


def _number(value: Any, name: str, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"expected a number, got {value!r}", where=name)
    value = float(value)
    if not math.isfinite(value) or value < minimum:
        raise InputError(f"expected a finite number >= {minimum:g}, got {value!r}", where=name)
    return value


def _numbers(value: Any, name: str, *, minimum: float = 0.0) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) or len(value) == 0:
        raise InputError(f"expected a non-empty list of numbers, got {value!r}", where=name)
    return tuple(_number(v, f"{name}[{i}]", minimum=minimum) for i, v in enumerate(value))


@dataclass(frozen=True, kw_only=True)
class Paper004Params:
    """Parameters of paper 004's models: tau-Lop o^c, L^c at ``ref_nbytes``, gamma^c(P) tables and Q(m).

    ``gamma0``/``gamma1`` list gamma^c(P) for P = 2, 3, ... (so the first entry
    is 1 by definition, eq. 14). ``Q`` is one number, or a table over the sizes
    ``Q_nbytes``. Times in seconds, sizes in bytes. ``algorithms`` may hold
    (o^0, o^1, L^0, L^1) fitted per algorithm (paper 004 section 5.2 and
    Table 2: the values depend on the algorithm that uses the messages);
    :meth:`for_algorithm` picks them, the top-level o and L are the default.
    """

    o0_s: float
    o1_s: float
    L0_s: float
    L1_s: float
    gamma1: tuple[float, ...]
    Q: tuple[float, ...] | float
    gamma0: tuple[float, ...] = (1.0, 1.0)
    Q_nbytes: tuple[float, ...] = ()
    ref_nbytes: float = DEFAULT_SEGSIZE
    gamma_beyond: GammaBeyond = GammaBeyond.LINEAR
    algorithms: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()

    def __post_init__(self) -> None:
        self._check_algorithms()
        for name in ("o0_s", "o1_s", "L0_s", "L1_s"):
            object.__setattr__(self, name, _number(getattr(self, name), name))
        for name in ("gamma0", "gamma1"):
            table = _numbers(getattr(self, name), name, minimum=1.0)
            for i, g in enumerate(table):
                if g > i + 1 + 1e-9:  # eq. 7: 1 <= gamma(P) <= P - 1, and the entry i is P = i + 2
                    raise InputError(f"gamma({i + 2}) = {g} exceeds P - 1 = {i + 1} (eq. 7)", where=f"{name}[{i}]")
            object.__setattr__(self, name, table)
        if isinstance(self.Q, (Sequence, np.ndarray)) and not isinstance(self.Q, str):
            q = _numbers(self.Q, "Q", minimum=1.0)
        else:
            q = (_number(self.Q, "Q", minimum=1.0),)
        sizes = () if self.Q_nbytes is None else self.Q_nbytes
        if len(q) > 1 or not (isinstance(sizes, (Sequence, np.ndarray)) and len(sizes) == 0):
            sizes = _numbers(sizes, "Q_nbytes", minimum=1.0)
            if len(sizes) != len(q):
                raise InputError(f"Q has {len(q)} values but Q_nbytes has {len(sizes)} sizes", where="Q_nbytes")
            if any(b <= a for a, b in zip(sizes, sizes[1:])):
                raise InputError("sizes must increase strictly", where="Q_nbytes")
        object.__setattr__(self, "Q", q)
        object.__setattr__(self, "Q_nbytes", sizes)
        object.__setattr__(self, "ref_nbytes", _number(self.ref_nbytes, "ref_nbytes", minimum=1.0))
        if not isinstance(self.gamma_beyond, GammaBeyond):
            try:
                object.__setattr__(self, "gamma_beyond", GammaBeyond(self.gamma_beyond))
            except ValueError:
                known = ", ".join(repr(g.value) for g in GammaBeyond)
                raise InputError(f"expected one of {known}, got {self.gamma_beyond!r}", where="gamma_beyond") from None

    def _check_algorithms(self) -> None:
        """``algorithms`` as sorted (name, (o^0, o^1, L^0, L^1)) pairs, from a dict of tables or pairs."""
        given = self.algorithms
        items = given.items() if isinstance(given, dict) else given
        out = []
        for name, theta in items:
            if name not in MODELLED:
                raise InputError(f"paper 004 models no bcast algorithm {name!r}; expected one of "
                                 f"{', '.join(MODELLED)}", where=f"algorithms.{name}")
            if isinstance(theta, dict):
                unknown = set(theta) - {"o0_s", "o1_s", "L0_s", "L1_s"}
                if unknown:
                    raise InputError("unknown key; expected o0_s, o1_s, L0_s, L1_s",
                                     where=f"algorithms.{name}.{sorted(unknown)[0]}")
                theta = [theta.get(k, getattr(self, k)) for k in ("o0_s", "o1_s", "L0_s", "L1_s")]
            if len(theta) != 4:
                raise InputError("expected o0_s, o1_s, L0_s, L1_s", where=f"algorithms.{name}")
            out.append((name, tuple(_number(v, f"algorithms.{name}.{k}")
                                    for v, k in zip(theta, ("o0_s", "o1_s", "L0_s", "L1_s")))))
        object.__setattr__(self, "algorithms", tuple(sorted(out)))

    def for_algorithm(self, name: str) -> "Paper004Params":
        """The parameters fitted for one algorithm (paper 004 Table 2) if the file has them, else these."""
        theta = dict(self.algorithms).get(name)
        return self if theta is None else replace(self.with_theta(theta), algorithms=())

    @property
    def theta(self) -> np.ndarray:
        """The unknowns of eq. 19 in order: (o^0, o^1, L^0, L^1)."""
        return np.array([self.o0_s, self.o1_s, self.L0_s, self.L1_s])

    def with_theta(self, theta: Sequence[float]) -> "Paper004Params":
        """The same gamma and Q with new (o^0, o^1, L^0, L^1)."""
        o0, o1, L0, L1 = (float(v) for v in theta)
        return replace(self, o0_s=o0, o1_s=o1, L0_s=L0, L1_s=L1)

    def gamma(self, channel: Channel, nprocs: np.ndarray | int) -> np.ndarray:
        """gamma^c(P) of eq. 8 for NBFTs of ``nprocs`` processes (root included), continued past the table."""
        table = np.asarray(self.gamma0 if channel == Channel.SHM else self.gamma1)
        p = np.maximum(np.asarray(nprocs, dtype=np.int64), 2)
        last = len(table) - 1
        inside = table[np.minimum(p - 2, last)]
        if self.gamma_beyond == GammaBeyond.HOLD or last == 0:
            return inside
        step = max(table[last] - table[last - 1], 0.0)
        beyond = np.minimum(table[last] + step * (p - 2 - last), p - 1)
        return np.where(p - 2 > last, np.maximum(beyond, table[last]), inside)

    def q(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Q(m), the network/shared-memory delay ratio of eq. 3."""
        m = np.asarray(nbytes, dtype=np.float64)
        if not self.Q_nbytes:
            return np.full(m.shape, self.Q[0])
        return np.interp(np.log2(np.maximum(m, 1.0)), np.log2(self.Q_nbytes), self.Q)

    def p2p_time(self, channel: Channel, nbytes: np.ndarray | float) -> np.ndarray:
        """tau-Lop T^c(m): o^0 + 2 L^0(m) through shared memory, o^1 + 2 L^0(m) + L^1(m) through the network."""
        return _p2p_coefficients(channel, nbytes, self.ref_nbytes) @ self.theta

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Paper004Params":
        """Read the ``[ompi_bcast_model]`` table (or a document holding it); errors name the key."""
        if set(data) == {SECTION}:
            data = data[SECTION]
        if not isinstance(data, dict):
            raise InputError("expected a table of parameters", where=SECTION)
        known = {"o0_s", "o1_s", "L0_s", "L1_s", "gamma0", "gamma1", "Q", "Q_nbytes", "ref_nbytes", "gamma_beyond",
                 "algorithms"}
        for key in data:
            if key not in known:
                raise InputError(f"unknown key; expected one of {', '.join(sorted(known))}", where=f"{SECTION}.{key}")
        for key in ("o0_s", "o1_s", "L0_s", "L1_s", "gamma1", "Q"):
            if key not in data:
                raise InputError(f"missing {key}; expected it in [{SECTION}] (see docs/file-formats.md)",
                                 where=f"{SECTION}.{key}")
        try:
            return cls(**data)
        except InputError as error:
            raise InputError(error.message, where=f"{SECTION}.{error.where}") from None

    def to_dict(self) -> dict[str, Any]:
        """The ``[ompi_bcast_model]`` table: plain numbers and lists, as :meth:`from_dict` reads it."""
        out: dict[str, Any] = {
            "o0_s": self.o0_s, "o1_s": self.o1_s, "L0_s": self.L0_s, "L1_s": self.L1_s,
            "gamma0": list(self.gamma0), "gamma1": list(self.gamma1),
            "Q": list(self.Q) if self.Q_nbytes else self.Q[0],
            "ref_nbytes": self.ref_nbytes, "gamma_beyond": self.gamma_beyond.value,
        }
        if self.Q_nbytes:
            out["Q_nbytes"] = list(self.Q_nbytes)
        if self.algorithms:
            out["algorithms"] = {name: dict(zip(("o0_s", "o1_s", "L0_s", "L1_s"), theta))
                                 for name, theta in self.algorithms}
        return out


def _p2p_coefficients(channel: Channel, nbytes: np.ndarray | float, ref_nbytes: float) -> np.ndarray:
    """Rows of T^c(m) over (o^0, o^1, L^0, L^1), shape ``m.shape + (4,)``."""
    x = np.asarray(nbytes, dtype=np.float64) / ref_nbytes
    zero, one = np.zeros_like(x), np.ones_like(x)
    if channel == Channel.SHM:
        return np.stack([one, zero, 2 * x, zero], axis=-1)
    return np.stack([zero, one, 2 * x, x], axis=-1)


# --- Open MPI's trees on virtual ranks (vrank = rank - root mod P), as parent and depth arrays ----------


class _Tree(NamedTuple):
    parent: np.ndarray  # parent vrank of every vrank, -1 for the root
    depth: np.ndarray


def _binomial_tree(nprocs: int) -> _Tree:
    """build_bmtree: the children of v are v + 2^k for 2^k > v; the parent clears v's highest bit."""
    v = np.arange(nprocs, dtype=np.int64)
    high, depth = np.zeros_like(v), np.zeros_like(v)
    for bit in range(max(nprocs - 1, 1).bit_length()):
        on = (v >> bit) & 1
        depth += on
        high = np.where(on == 1, 1 << bit, high)
    return _Tree(np.where(v > 0, v - high, -1), depth)


def _kary_tree(nprocs: int, fanout: int = 2) -> _Tree:
    """build_tree(fanout): v at level l (delta = fanout^l) has children v + delta (i + 1), i < fanout."""
    v = np.arange(nprocs, dtype=np.int64)
    level = np.zeros(nprocs, dtype=np.int64)
    first, width = 1, fanout  # first vrank of the next level and that level's width
    while first < nprocs:
        level[first:] += 1
        first, width = first + width, width * fanout
    delta = fanout**level
    parent = np.full(nprocs, -1, dtype=np.int64)
    for i in range(fanout):
        child = v + delta * (i + 1)
        ok = child < nprocs
        parent[child[ok]] = v[ok]
    return _Tree(parent, level)


def _chain_tree(nprocs: int, fanout: int) -> _Tree:
    """build_chain(fanout): the root heads ``fanout`` chains of consecutive vranks, the first ones longer by one."""
    v = np.arange(nprocs, dtype=np.int64)
    if nprocs < 2:
        return _Tree(np.full(nprocs, -1, dtype=np.int64), np.zeros(nprocs, dtype=np.int64))
    fanout = max(1, min(fanout, nprocs - 1))
    longest, mark = -(-(nprocs - 1) // fanout), (nprocs - 1) % fanout or fanout
    s = v[1:] - 1
    short_start = mark * longest
    head = np.where(s < short_start, s // longest * longest,
                    short_start + (s - short_start) // max(longest - 1, 1) * (longest - 1)) + 1
    parent = np.concatenate([[-1], np.where(v[1:] == head, 0, v[1:] - 1)])
    depth = np.concatenate([[0], v[1:] - head + 1])
    return _Tree(parent, depth)


def node_of_rank(nprocs: int, nodes: int | Sequence[int] | Any) -> np.ndarray:
    """Node of each of the first ``nprocs`` ranks: ``nodes`` ranks per node (consecutive), or a node per rank."""
    if isinstance(nodes, (int, np.integer)) and not isinstance(nodes, bool):
        if nodes < 1:
            raise InputError(f"ranks per node must be >= 1, got {nodes}", where="nodes")
        return np.arange(nprocs, dtype=np.int64) // int(nodes)
    placed = np.asarray(getattr(nodes, "node_of_rank", nodes), dtype=np.int64)
    if placed.ndim != 1 or len(placed) < nprocs:
        raise InputError(f"expected the node of at least {nprocs} ranks, got shape {placed.shape}", where="nodes")
    return placed[:nprocs]


# --- NBFTs and stages -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Nbft:
    """One non-blocking flat tree: a root rank and its children; ``network`` of them on other nodes (C, eq. 2)."""

    root: int
    children: tuple[int, ...]
    network: int

    @property
    def nprocs(self) -> int:
        """P_ij: processes in the NBFT, root included."""
        return len(self.children) + 1


def _internal_nbfts(tree: _Tree, nodes_v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P_j, C_j, depth_j) of every internal node's NBFT."""
    n = len(tree.parent)
    kids = tree.parent[1:]
    cross = (nodes_v[1:] != nodes_v[kids]).astype(np.float64)
    size = 1 + np.bincount(kids, minlength=n)
    net = np.rint(np.bincount(kids, weights=cross, minlength=n)).astype(np.int64)
    internal = size > 1
    return size[internal], net[internal], tree.depth[internal]


def effective_network_size(nprocs: np.ndarray | int, network: np.ndarray | int, q: np.ndarray | float) -> np.ndarray:
    """P^o of eq. 4: the network-only NBFT with every Q shared-memory sends merged into one network send."""
    p, c = np.asarray(nprocs), np.asarray(network)
    return c + np.floor((p - c - 1) / np.asarray(q) + _FLOOR_EPS).astype(np.int64) + 1


def nbft_factor(nprocs: np.ndarray | int, network: np.ndarray | int, nbytes: np.ndarray | float,
                params: Paper004Params) -> np.ndarray:
    """T_NBFT(P, C, m) / T^1(m): gamma^1(P^o) with any network child, else gamma^0(P) / Q(m) (eq. 4, 8, 18)."""
    return _factor_at_q(np.asarray(nprocs), np.asarray(network), params.q(nbytes), params)


def _factor_at_q(p: np.ndarray, c: np.ndarray, q: np.ndarray | float, params: Paper004Params) -> np.ndarray:
    return np.where(c > 0, params.gamma(Channel.NETWORK, effective_network_size(p, c, q)),
                    params.gamma(Channel.SHM, p) / q)


def t_nbft(nprocs: int, network: int, segsize: float, params: Paper004Params) -> float:
    """T_NBFT(P, C, m_s) of eq. 4 and 8, in seconds."""
    return float(nbft_factor(nprocs, network, segsize, params) * params.p2p_time(Channel.NETWORK, segsize))


def _segments(nbytes: np.ndarray, segsize: float) -> tuple[np.ndarray, np.ndarray]:
    """(n_s, priced segment size) per message: ceil(m / m_s) segments of m_s, or one of m when m <= m_s."""
    m = np.asarray(nbytes, dtype=np.float64)
    if segsize <= 0:
        return np.ones(m.shape, dtype=np.int64), m
    one = m <= segsize
    return np.where(one, 1, np.ceil(m / segsize)).astype(np.int64), np.where(one, m, float(segsize))


def _window_max_sums(g: np.ndarray, nsegs: np.ndarray) -> np.ndarray:
    """Sum over stages i = 1 .. D + n - 1 of max g[d] for active depths i - n <= d <= i - 1 (eq. 9-13).

    Each stage is a window of n consecutive depths (clipped at both ends). Rather than taking every
    window's maximum, count for each depth j how many windows it is the maximum of: those that hold j
    but neither the nearest depth to its left with g >= g[j] nor the nearest to its right with g > g[j].
    """
    d = len(g)
    left, right = np.full(d, -np.inf), np.full(d, np.inf)
    stack: list[int] = []
    for j in range(d):
        while stack and g[stack[-1]] < g[j]:
            right[stack.pop()] = j
        left[j] = stack[-1] if stack else -np.inf
        stack.append(j)
    j = np.arange(d, dtype=np.float64)[:, None]
    nsegs = np.asarray(nsegs, dtype=np.int64)
    out = np.empty(len(nsegs))
    chunk = max(1, _CHUNK_CELLS // d)
    for start in range(0, len(nsegs), chunk):
        n = nsegs[start:start + chunk][None, :].astype(np.float64)
        first = np.maximum(left[:, None] + 1, j - n + 1)  # window start a: stage a + n, depths a .. a + n - 1
        last = np.minimum(j, right[:, None] - n)
        out[start:start + chunk] = g @ np.clip(last - first + 1, 0, None)
    return out


def _segmented_coefficients(tree: _Tree, nodes_v: np.ndarray, nbytes: np.ndarray, segsize: float,
                            params: Paper004Params) -> np.ndarray:
    """Coefficient rows of a segmented tree broadcast: T^1(m_s) times the summed stage maxima."""
    m = np.asarray(nbytes, dtype=np.float64)
    out = np.zeros(m.shape + (4,))
    if len(tree.parent) < 2:
        return out
    size, net, depth = _internal_nbfts(tree, nodes_v)
    nsegs, seg = _segments(m, segsize)
    q = params.q(seg)
    for qv in np.unique(q):  # the stage maxima depend on the segment size only through Q
        g = np.full(depth.max() + 1, -np.inf)
        np.maximum.at(g, depth, _factor_at_q(size, net, qv, params))
        sel = q == qv
        distinct, index = np.unique(nsegs[sel], return_inverse=True)
        sums = _window_max_sums(g, distinct)[index.reshape(-1)]
        out[sel] = sums[:, None] * _p2p_coefficients(Channel.NETWORK, seg[sel], params.ref_nbytes)
    return out


def _tree(algorithm: str, nprocs: int, fanout: int) -> _Tree:
    if algorithm not in _TREES:
        raise InputError(f"{algorithm!r} is not a segmented tree algorithm; expected one of {', '.join(_TREES)}",
                         where="algorithm")
    if isinstance(fanout, bool) or not isinstance(fanout, (int, np.integer)) or fanout < 1:
        raise InputError(f"the chain fanout must be an integer >= 1, got {fanout!r}", where="fanout")
    return _TREES[algorithm](nprocs, int(fanout))


def stage_factor_sum(algorithm: str, nprocs: int, nsegments: int, nodes: int | Sequence[int], params: Paper004Params,
                     *, segsize: float = DEFAULT_SEGSIZE, root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT) -> float:
    """Sum over stages of max_j T_NBFT / T^1(m_s): the bracket of eq. 18 (split-binary: its first phase)."""
    nodes_v = _vnodes(nprocs, nodes, root)
    rows = _segmented_coefficients(_tree(algorithm, nprocs, fanout), nodes_v, np.array([nsegments * segsize]),
                                   segsize, params)
    return float(rows[0, 1])


def nbft_stages(algorithm: str, nprocs: int, nsegments: int, nodes: int | Sequence[int], *,
                root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT) -> list[list[Nbft]]:
    """The NBFTs running in each stage (the paper's Fig. 5-7), for explanations and tests."""
    nodes_v = _vnodes(nprocs, nodes, root)
    tree = _tree(algorithm, nprocs, fanout)
    rank = (np.arange(nprocs) + root) % nprocs
    children: dict[int, list[int]] = {}
    for v in range(1, nprocs):
        children.setdefault(int(tree.parent[v]), []).append(v)
    by_depth: dict[int, list[Nbft]] = {}
    for v, kids in sorted(children.items()):
        cross = int(sum(nodes_v[k] != nodes_v[v] for k in kids))
        by_depth.setdefault(int(tree.depth[v]), []).append(Nbft(int(rank[v]), tuple(int(rank[k]) for k in kids), cross))
    depths = len(by_depth)
    if depths == 0:
        return []
    return [[n for d in range(max(0, i - nsegments), min(i - 1, depths - 1) + 1) for n in by_depth[d]]
            for i in range(1, depths + nsegments)]


_TREES: dict[str, Callable[[int, int], _Tree]] = {
    "pipeline": lambda p, _k: _chain_tree(p, 1),
    "chain": _chain_tree,
    "binary_tree": lambda p, _k: _kary_tree(p, 2),
    "split_binary_tree": lambda p, _k: _kary_tree(p, 2),
    "binomial": lambda p, _k: _binomial_tree(p),
}


def _vnodes(nprocs: int, nodes: Any, root: int) -> np.ndarray:
    """Node of every virtual rank."""
    if nprocs < 1:
        raise InputError(f"expected at least one process, got {nprocs}", where="nprocs")
    if not 0 <= root < nprocs:
        raise InputError(f"root {root} is not a rank of {nprocs}", where="root")
    return node_of_rank(nprocs, nodes)[(np.arange(nprocs) + root) % nprocs]


# --- coefficient rows per algorithm (time = rows @ (o^0, o^1, L^0, L^1)) ---------------------------------


def _flat_coefficients(nodes_v: np.ndarray, nbytes: np.ndarray, ref: float) -> np.ndarray:
    """Eq. 1 / eq. 17: one blocking message of m bytes from the root to each other rank, one after another."""
    net = int((nodes_v[1:] != nodes_v[0]).sum())
    shm = len(nodes_v) - 1 - net
    return shm * _p2p_coefficients(Channel.SHM, nbytes, ref) + net * _p2p_coefficients(Channel.NETWORK, nbytes, ref)


def _coef_linear(p, m, ms, nv, params, fanout):
    return _flat_coefficients(nv, m, params.ref_nbytes)


def _coef_tree(name):
    def coef(p, m, ms, nv, params, fanout):
        return _segmented_coefficients(_tree(name, p, fanout), nv, m, ms, params)
    return coef


def _coef_split_binary(p, m, ms, nv, params, fanout):
    m = np.asarray(m, dtype=np.float64)
    if p < 2:
        return np.zeros(m.shape + (4,))
    half = np.ceil(m / 2)
    phase1 = _segmented_coefficients(_kary_tree(p, 2), nv, half, ms, params)
    # Exchange: vranks 2k-1 and 2k swap halves; with P even the root sends the last rank its missing half.
    v = np.arange(1, p - 1, 2)
    pairs_cross = nv[v] != nv[v + 1]
    if p % 2 == 0:
        pairs_cross = np.append(pairs_cross, nv[0] != nv[p - 1])
    channel = Channel.NETWORK if pairs_cross.any() else Channel.SHM
    split = phase1 + _p2p_coefficients(channel, m / 2, params.ref_nbytes)
    if ms <= 0:
        return split
    fallback = ms > np.floor(m / 2)  # Open MPI: halves shorter than a segment -> chain of fanout 1
    return np.where(fallback[..., None], _segmented_coefficients(_chain_tree(p, 1), nv, m, ms, params), split)


_COEFFICIENTS = {
    "basic_linear": _coef_linear,
    "chain": _coef_tree("chain"),
    "pipeline": _coef_tree("pipeline"),
    "split_binary_tree": _coef_split_binary,
    "binary_tree": _coef_tree("binary_tree"),
    "binomial": _coef_tree("binomial"),
}


def coefficients(algorithm: str, nprocs: int, nbytes: np.ndarray | float, segsize: float, nodes: Any,
                 params: Paper004Params, *, root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT) -> np.ndarray:
    """Rows lambda of the broadcast time over (o^0, o^1, L^0, L^1), shape ``nbytes.shape + (4,)``."""
    if algorithm not in _COEFFICIENTS:
        raise InputError(f"paper 004 models no bcast algorithm {algorithm!r}; it models {', '.join(MODELLED)}",
                         where="algorithm")
    return _COEFFICIENTS[algorithm](nprocs, np.asarray(nbytes, dtype=np.float64), segsize,
                                    _vnodes(nprocs, nodes, root), params, fanout)


def _time(algorithm, nprocs, nbytes, segsize, nodes, params, root, fanout=DEFAULT_CHAIN_FANOUT):
    return coefficients(algorithm, nprocs, nbytes, segsize, nodes, params, root=root, fanout=fanout) @ params.theta


def t_linear(nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> np.ndarray:
    """basic_linear, eq. 1: sum over the P-1 other ranks of T^{c_i}(m); unsegmented, ``segsize`` unused."""
    return _time("basic_linear", nprocs, nbytes, segsize, nodes, params, root)


def t_pipeline(nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> np.ndarray:
    """pipeline (the paper's chain tree), eq. 10: P + n_s - 2 stages of 2-process NBFTs."""
    return _time("pipeline", nprocs, nbytes, segsize, nodes, params, root)


def t_chain(nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params, *, root: int = 0,
            fanout: int = DEFAULT_CHAIN_FANOUT) -> np.ndarray:
    """chain of ``fanout`` chains (the paper's K-chain tree), eq. 12: ceil((P-1)/K) + n_s - 1 stages."""
    return _time("chain", nprocs, nbytes, segsize, nodes, params, root, fanout)


def t_binary(nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> np.ndarray:
    """binary_tree, eq. 11: floor(log2 P) + n_s - 1 stages of 3- or 2-process NBFTs."""
    return _time("binary_tree", nprocs, nbytes, segsize, nodes, params, root)


def t_split_binary(nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> np.ndarray:
    """split_binary_tree, eq. 13: halves down the binary tree in floor(log2 P) + m/(2 m_s) - 1 stages,
    then the pairs' exchange, max T^c(m/2)."""
    return _time("split_binary_tree", nprocs, nbytes, segsize, nodes, params, root)


def t_binomial(nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> np.ndarray:
    """binomial, eq. 9 and 18: floor(log2 P) + n_s - 1 stages of the binomial tree's NBFTs."""
    return _time("binomial", nprocs, nbytes, segsize, nodes, params, root)


def t_flat_gather(nprocs: int, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> float:
    """Flat gather without synchronization of one segment per rank, eq. 17: sum of T^{c_i}(m_s)."""
    return float(_flat_coefficients(_vnodes(nprocs, nodes, root), np.asarray(segsize, float), params.ref_nbytes)
                 @ params.theta)


MODELLED: dict[str, Callable[..., np.ndarray]] = {
    "basic_linear": t_linear,
    "chain": t_chain,
    "pipeline": t_pipeline,
    "split_binary_tree": t_split_binary,
    "binary_tree": t_binary,
    "binomial": t_binomial,
}
OMPI_BCAST_IDS = {"basic_linear": 1, "chain": 2, "pipeline": 3, "split_binary_tree": 4, "binary_tree": 5, "binomial": 6}
EQUATIONS = {"basic_linear": "eq. 1", "chain": "eq. 12", "pipeline": "eq. 10", "split_binary_tree": "eq. 13",
             "binary_tree": "eq. 11", "binomial": "eq. 9, 18"}


# --- estimation of o and L, eq. 16-19 ------------------------------------------------------------------


class Measurement(NamedTuple):
    """One communication experiment of section 5.2: the broadcast then a flat gather, timed on the root."""

    algorithm: str
    nprocs: int
    nbytes: float
    time_s: float


class FitLoss(enum.Enum):
    """Least squares (LINEAR) or the Huber loss the paper fits with (HUBER); both keep o, L >= 0."""

    LINEAR = "linear"
    HUBER = "huber"


def experiment_coefficients(algorithm: str, nprocs: int, nbytes, segsize: float, nodes, params: Paper004Params,
                            *, root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT, gather: bool = True) -> np.ndarray:
    """lambda_1..4 of eq. 19: the broadcast's rows plus, with ``gather``, the flat gather of eq. 16-17."""
    rows = coefficients(algorithm, nprocs, nbytes, segsize, nodes, params, root=root, fanout=fanout)
    if gather:
        rows = rows + _flat_coefficients(_vnodes(nprocs, nodes, root), np.asarray(segsize, float), params.ref_nbytes)
    return rows


@dataclass(frozen=True)
class TaulopFit:
    """The solution of eq. 19: fitted parameters and how well they explain the measurements."""

    params_: Paper004Params
    design_: np.ndarray
    times_s: np.ndarray
    rank_: int

    @property
    def theta_(self) -> np.ndarray:
        """Fitted (o^0, o^1, L^0, L^1) in seconds."""
        return self.params_.theta

    @property
    def residuals_s_(self) -> np.ndarray:
        """Predicted minus measured time of every experiment."""
        return self.design_ @ self.theta_ - self.times_s


def fit_taulop(measurements: Iterable[Measurement | tuple], params: Paper004Params, *, nodes,
               segsize: float = DEFAULT_SEGSIZE, root: int = 0, fanout: int = DEFAULT_CHAIN_FANOUT,
               gather: bool = True, loss: FitLoss = FitLoss.LINEAR) -> TaulopFit:
    """Fit o^0, o^1, L^0, L^1 >= 0 to measured experiment times (eq. 16-19), gamma and Q held known.

    ``nodes`` places the first P ranks of every experiment (ranks per node, or a node per rank).
    """
    rows = [Measurement(*m) for m in measurements]
    if not rows:
        raise InputError("no measurements to fit", where="measurements")
    design = np.array([experiment_coefficients(r.algorithm, int(r.nprocs), r.nbytes, segsize, nodes, params,
                                               root=root, fanout=fanout, gather=gather) for r in rows])
    times = np.array([_number(r.time_s, f"measurements[{i}].time_s") for i, r in enumerate(rows)])
    return fit_design(design, times, params, loss=loss)


def fit_design(design: np.ndarray, times: np.ndarray, params: Paper004Params, *,
               loss: FitLoss = FitLoss.LINEAR) -> TaulopFit:
    """Solve eq. 19, ``design @ (o^0, o^1, L^0, L^1) = times`` with o, L >= 0, gamma and Q of ``params`` kept.

    ``design`` holds one row lambda_1..4 per experiment (:func:`experiment_coefficients`),
    so experiments of several placements can be fitted together. Least
    squares, or the Huber loss (paper 004 section 6, its ref [18]) with
    f_scale = 1.35 sigma, sigma = 1.4826 MAD of the least-squares residuals.
    """
    from scipy.optimize import least_squares, lsq_linear

    design = np.asarray(design, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    scale = np.linalg.norm(design, axis=0)
    used = scale > 0  # a column of zeros (say o^0 with no shared-memory message) stays 0
    a = design[:, used] / scale[used]
    solution = lsq_linear(a, times, bounds=(0.0, np.inf), method="bvls").x
    if loss == FitLoss.HUBER:
        residual = a @ solution - times
        f_scale = 1.35 * max(np.median(np.abs(residual)) / 0.6745, 1e-12 * max(np.abs(times).max(), 1e-300))
        solution = least_squares(lambda x: a @ x - times, solution, bounds=(0.0, np.inf), loss="huber",
                                 f_scale=f_scale, x_scale="jac").x
    theta = np.zeros(4)
    theta[used] = solution / scale[used]
    return TaulopFit(params.with_theta(theta), design, times, int(np.linalg.matrix_rank(a)) if a.size else 0)


# --- the paper's platforms and fitted values (Tables 1-2, section 6) ---------------------------------------


@dataclass(frozen=True)
class Paper004Cluster:
    """A cluster of section 6: ranks per node (one per core, consecutive), Q(m_s), gamma tables, P_NBFT^max."""

    ppn: int
    Q: float
    gamma0: tuple[float, ...]
    gamma1: tuple[float, ...]
    p_nbft_max: tuple[int, int]  # (shared memory, network), Table 1(a)


PAPER004_CLUSTERS = {
    "grisou": Paper004Cluster(16, 6.0, (1.0, 1.0), (1.0, 1.114, 1.219, 1.283, 1.451, 1.540), (3, 7)),
    "gros": Paper004Cluster(18, 12.0, (1.0, 1.0), (1.0, 1.084, 1.170, 1.254, 1.339, 1.424), (3, 7)),
    "marenostrum4": Paper004Cluster(48, 9.0, (1.0, 1.0), (1.0, 1.145, 1.290, 1.435), (3, 5)),
}

# Table 2: (o^1, L^0, L^1) in seconds per cluster and algorithm; o^0 = 0 everywhere.
PAPER004_TABLE2 = {
    "grisou": {"basic_linear": (2.1e-4, 2.1e-4, 2.1e-4), "chain": (2.2e-4, 4.1e-5, 2.2e-4),
               "pipeline": (1.2e-5, 2.0e-5, 1.2e-5), "split_binary_tree": (7.4e-5, 3.5e-4, 7.4e-5),
               "binary_tree": (3.3e-4, 3.0e-4, 3.3e-4), "binomial": (9.7e-5, 2.1e-4, 9.7e-5)},
    "marenostrum4": {"basic_linear": (6.8e-4, 6.7e-4, 6.8e-4), "chain": (6.2e-5, 1.2e-5, 6.2e-5),
                     "pipeline": (5.4e-5, 5.8e-6, 5.4e-5), "split_binary_tree": (1.7e-4, 2.1e-5, 1.7e-4),
                     "binary_tree": (3.0e-4, 7.5e-5, 3.0e-4), "binomial": (7.9e-5, 7.9e-6, 7.9e-5)},
    "gros": {"basic_linear": (8.2e-5, 8.2e-5, 8.2e-5), "chain": (8.0e-6, 1.1e-5, 8.0e-6),
             "pipeline": (8.1e-6, 1.3e-5, 8.1e-6), "split_binary_tree": (3.2e-5, 9.3e-6, 3.2e-5),
             "binary_tree": (5.6e-5, 9.7e-6, 5.6e-5), "binomial": (1.9e-5, 8.0e-6, 1.9e-5)},
}


def paper004_params(cluster: str, algorithm: str | None = None) -> Paper004Params:
    """gamma and Q of a cluster of Table 1, with Table 2's o and L for ``algorithm`` (zeros when None)."""
    c = PAPER004_CLUSTERS[cluster]
    o1, L0, L1 = PAPER004_TABLE2[cluster][algorithm] if algorithm else (0.0, 0.0, 0.0)
    return Paper004Params(o0_s=0.0, o1_s=o1, L0_s=L0, L1_s=L1, gamma0=c.gamma0, gamma1=c.gamma1, Q=c.Q)
