"""Parameters of paper 004's broadcast model: tau-Lop's o^c and L^c, the slowdowns gamma^c(P) and the ratio Q(m).

:class:`Paper004Params` holds everything :mod:`commcost.closedform.ompi_bcast_model`
prices Open MPI's broadcasts with, and reads and writes the ``[ompi_bcast_model]``
table of a parameter file (docs/file-formats.md). The formulas here are those
the parameters define on their own (paper 004, Nuriyev et al.):

* ``gamma^c(P)``, the slowdown of ``P - 1`` overlapping sends through channel
  ``c`` with respect to one send (eq. 8, 14), within ``1 <= gamma <= P - 1``
  (eq. 7) and continued past the measured table as :class:`GammaBeyond` says;
* ``Q(m) = T^1 / T^0``, the network/shared-memory delay ratio (eq. 3, 15): a
  number, or a table over m interpolated in ``log2 m``;
* tau-Lop's point-to-point time (section 4, eq. 17), ``T^0(m) = o^0 + 2 L^0(m)``
  and ``T^1(m) = o^1 + 2 L^0(m) + L^1(m)`` with ``L^c(m) = L^c(ref) m / ref``,
  as rows over ``(o^0, o^1, L^0, L^1)`` (:func:`p2p_coefficients`).

:func:`paper004_params` gives the paper's own values for its clusters
(Tables 1-2, section 6).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from commcost.errors import InputError

SECTION = "ompi_bcast_model"  # the parameter file's table
DEFAULT_SEGSIZE = 8192
# The broadcast algorithms paper 004 models, by Open MPI name (the keys of ompi_bcast_model.MODELLED).
BCAST_ALGORITHMS = ("basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial")




class Channel(enum.IntEnum):
    """The paper's two channels: c = 0 shared memory, c = 1 network."""

    SHM = 0
    NETWORK = 1


class GammaBeyond(enum.Enum):
    """How gamma^c(P) continues past the largest measured P."""

    LINEAR = "linear"
    HOLD = "hold"


def checked_number(value: Any, name: str, *, minimum: float = 0.0) -> float:
    """``value`` as a finite float >= ``minimum``, else an :class:`InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"expected a number, got {value!r}", where=name)
    value = float(value)
    if not math.isfinite(value) or value < minimum:
        raise InputError(f"expected a finite number >= {minimum:g}, got {value!r}", where=name)
    return value


def _numbers(value: Any, name: str, *, minimum: float = 0.0) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) or len(value) == 0:
        raise InputError(f"expected a non-empty list of numbers, got {value!r}", where=name)
    return tuple(checked_number(v, f"{name}[{i}]", minimum=minimum) for i, v in enumerate(value))


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
            object.__setattr__(self, name, checked_number(getattr(self, name), name))
        for name in ("gamma0", "gamma1"):
            table = _numbers(getattr(self, name), name, minimum=1.0)
            for i, g in enumerate(table):
                if g > i + 1 + 1e-9:  # eq. 7: 1 <= gamma(P) <= P - 1, and the entry i is P = i + 2
                    raise InputError(f"gamma({i + 2}) = {g} exceeds P - 1 = {i + 1} (eq. 7)", where=f"{name}[{i}]")
            object.__setattr__(self, name, table)
        if isinstance(self.Q, (Sequence, np.ndarray)) and not isinstance(self.Q, str):
            q = _numbers(self.Q, "Q", minimum=1.0)
        else:
            q = (checked_number(self.Q, "Q", minimum=1.0),)
        sizes = () if self.Q_nbytes is None else self.Q_nbytes
        if len(q) > 1 or not (isinstance(sizes, (Sequence, np.ndarray)) and len(sizes) == 0):
            sizes = _numbers(sizes, "Q_nbytes", minimum=1.0)
            if len(sizes) != len(q):
                raise InputError(f"Q has {len(q)} values but Q_nbytes has {len(sizes)} sizes", where="Q_nbytes")
            if any(b <= a for a, b in zip(sizes, sizes[1:])):
                raise InputError("sizes must increase strictly", where="Q_nbytes")
        object.__setattr__(self, "Q", q)
        object.__setattr__(self, "Q_nbytes", sizes)
        object.__setattr__(self, "ref_nbytes", checked_number(self.ref_nbytes, "ref_nbytes", minimum=1.0))
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
            if name not in BCAST_ALGORITHMS:
                raise InputError(f"paper 004 models no bcast algorithm {name!r}; expected one of "
                                 f"{', '.join(BCAST_ALGORITHMS)}", where=f"algorithms.{name}")
            if isinstance(theta, dict):
                unknown = set(theta) - {"o0_s", "o1_s", "L0_s", "L1_s"}
                if unknown:
                    raise InputError("unknown key; expected o0_s, o1_s, L0_s, L1_s",
                                     where=f"algorithms.{name}.{sorted(unknown)[0]}")
                theta = [theta.get(k, getattr(self, k)) for k in ("o0_s", "o1_s", "L0_s", "L1_s")]
            if len(theta) != 4:
                raise InputError("expected o0_s, o1_s, L0_s, L1_s", where=f"algorithms.{name}")
            out.append((name, tuple(checked_number(v, f"algorithms.{name}.{k}")
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
        return p2p_coefficients(channel, nbytes, self.ref_nbytes) @ self.theta

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


def p2p_coefficients(channel: Channel, nbytes: np.ndarray | float, ref_nbytes: float) -> np.ndarray:
    """Rows of T^c(m) over (o^0, o^1, L^0, L^1), shape ``m.shape + (4,)``."""
    x = np.asarray(nbytes, dtype=np.float64) / ref_nbytes
    zero, one = np.zeros_like(x), np.ones_like(x)
    if channel == Channel.SHM:
        return np.stack([one, zero, 2 * x, zero], axis=-1)
    return np.stack([zero, one, 2 * x, x], axis=-1)


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
