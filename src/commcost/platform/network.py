"""A platform's network topology: which links a message between two nodes crosses, and the load on each.

Paper 001 section 4.2 prices network contention as T_c = delta * l, l the
bytes that cross the busiest link (eq. 5). Without a topology the paper
assumes a perfect cube of routers (eq. 7, :func:`cube_link_bytes`); with
one, :meth:`Torus3D.link_bytes` routes every message dimension-order (x,
then y, then z, each the shorter way round the ring, ties the positive way)
and counts the bytes each directed link carries, as Blue Waters' Gemini
routers do (3D torus, two nodes per router).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commcost.errors import InputError


@dataclass(frozen=True)
class Torus3D:
    """A 3D torus of routers, ``dims`` = (X, Y, Z), ``nodes_per_router`` nodes each; node i sits on router
    i // nodes_per_router, router r at (r mod X, (r div X) mod Y, r div XY)."""

    dims: tuple[int, int, int]
    nodes_per_router: int = 1

    def __post_init__(self) -> None:
        if len(self.dims) != 3 or any(int(d) < 1 for d in self.dims):
            raise InputError(f"expected three dimensions >= 1, got {list(self.dims)}", where="network.dims")
        if self.nodes_per_router < 1:
            raise InputError(f"expected nodes_per_router >= 1, got {self.nodes_per_router}",
                             where="network.nodes_per_router")

    @property
    def routers(self) -> int:
        return int(np.prod(self.dims))

    def coords(self, node: np.ndarray) -> np.ndarray:
        """(n, 3) router coordinates of nodes."""
        r = np.asarray(node, dtype=np.int64) // self.nodes_per_router
        x, y, _ = self.dims
        return np.stack([r % x, (r // x) % y, r // (x * y)], axis=1)

    def hops(self, src_node: np.ndarray, dst_node: np.ndarray) -> np.ndarray:
        """Links each message crosses: the torus distance per dimension, summed."""
        d = np.abs(self.coords(dst_node) - self.coords(src_node))
        dims = np.array(self.dims)
        return np.minimum(d, dims - d).sum(axis=1)

    def link_bytes(self, src_node: np.ndarray, dst_node: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        """Bytes on every directed link (index: router * 6 + 2 * dimension + (0: +, 1: -)), dimension-order
        routing; vectorized over messages and hops."""
        cur = self.coords(src_node)
        dst = self.coords(dst_node)
        nbytes = np.asarray(nbytes, dtype=np.float64)
        dims = np.array(self.dims)
        load = np.zeros(self.routers * 6)
        stride = np.array([1, dims[0], dims[0] * dims[1]])
        for d in range(3):
            fwd = (dst[:, d] - cur[:, d]) % dims[d]
            back = dims[d] - fwd
            positive = fwd <= back
            steps = np.where(positive, fwd, np.where(fwd == 0, 0, back))
            total = int(steps.sum())
            if total:
                msg = np.repeat(np.arange(len(steps)), steps)
                first = np.repeat(np.cumsum(steps) - steps, steps)
                k = np.arange(total) - first  # the hop's index within its message
                sign = np.where(positive[msg], 1, -1)
                at = (cur[msg, d] + sign * k) % dims[d]
                here = cur[msg].copy()
                here[:, d] = at
                router = here @ stride
                link = router * 6 + 2 * d + (~positive[msg]).astype(np.int64)
                load += np.bincount(link, weights=nbytes[msg], minlength=len(load))
            cur = cur.copy()
            cur[:, d] = dst[:, d]
        return load


def cube_link_bytes(hops: np.ndarray, nbytes: np.ndarray, senders: int, nodes: int, per_router: int = 1) -> float:
    """Paper 001 eq. 7, the bytes on a link of a perfect cube partition: l = 2 h^3 b ppn, h the mean links
    a byte crosses, b the mean bytes a sending rank sends off its node, ppn the mean sending ranks per
    node (``senders`` over ``nodes``), and 2 ... ppn the bytes a router of ``per_router`` = 2 nodes sends
    (h^3 routers lie within h hops of a link; all their bytes are taken to cross it)."""
    total = float(np.sum(nbytes))
    if total <= 0 or senders == 0:
        return 0.0
    h = float(np.sum(hops * nbytes) / total)
    b = total / senders
    ppn = senders / max(nodes, 1)
    return per_router * h ** 3 * b * ppn
