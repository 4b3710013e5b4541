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
``coefficients @ (o^0, o^1, L^0, L^1)``; fitting them to measured times
(eq. 16-19) is :mod:`commcost.closedform.ompi_bcast_fit`. The parameters
themselves (gamma^c, Q, tau-Lop's T^c and the paper's Tables 1-2) are in
:mod:`commcost.closedform.ompi_bcast_params`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from commcost.closedform.ompi_bcast_params import DEFAULT_SEGSIZE, Channel, Paper004Params, p2p_coefficients
from commcost.errors import InputError

DEFAULT_CHAIN_FANOUT = 4  # coll_tuned's bcast_algorithm_chain_fanout
_CHUNK_CELLS = 1 << 22  # (depth, message) pairs counted at once
_FLOOR_EPS = 1e-9  # floor((P-C-1)/Q) must not lose a unit to rounding when Q divides exactly


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
        out[sel] = sums[:, None] * p2p_coefficients(Channel.NETWORK, seg[sel], params.ref_nbytes)
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
    return shm * p2p_coefficients(Channel.SHM, nbytes, ref) + net * p2p_coefficients(Channel.NETWORK, nbytes, ref)


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
    split = phase1 + p2p_coefficients(channel, m / 2, params.ref_nbytes)
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


def flat_gather_coefficients(nprocs: int, segsize: float, nodes, params: Paper004Params, *,
                             root: int = 0) -> np.ndarray:
    """Rows of :func:`t_flat_gather` over (o^0, o^1, L^0, L^1): one message of m_s from every other rank, eq. 17."""
    return _flat_coefficients(_vnodes(nprocs, nodes, root), np.asarray(segsize, float), params.ref_nbytes)


def t_flat_gather(nprocs: int, segsize: float, nodes, params: Paper004Params, *, root: int = 0) -> float:
    """Flat gather without synchronization of one segment per rank, eq. 17: sum of T^{c_i}(m_s)."""
    return float(flat_gather_coefficients(nprocs, segsize, nodes, params, root=root) @ params.theta)


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
