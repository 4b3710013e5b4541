"""Model-based selection: the fastest algorithm, with its tunables, for every (P, n) of a grid.

The candidates are every algorithm of a collective and library, each with
every combination of the values given for its tunables (decision
variables, paper 004 section 7: "the segment size another decision
variable with values from a small discrete set, say {8K, 16K, 32K, 64K,
128K}"). A pricer gives each candidate's predicted time over the grid; the
fastest per (P, n) becomes the decision (ties go to the candidate listed
first: Open MPI ids in order, then the tunables in the order given), and
the decisions compress into rules (:func:`.decision.compress`).

A pricer is any ``price(choice, nprocs, sizes, bound) -> seconds per size``;
it may answer ``inf`` for a size where it can show, without pricing, that
the candidate takes at least ``bound`` (the best time found so far), so the
search stays exact while skipping hopeless candidates (branch and bound).
:func:`schedule_pricer` builds schedules and prices them under a model
(size classes and one-pass sweeps of :mod:`.grid`), and the CLI adapts
paper 004's closed forms the same way.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Mapping as TMapping, Sequence

import numpy as np

from commcost.collectives import Collective, algorithms
from commcost.collectives.ompi_han import is_han
from commcost.models import Model
from commcost.platform import Mapping, Platform
from commcost.selection.decision import Choice, Selection, compress
from commcost.selection.grid import price_sizes

Pricer = Callable[[Choice, int, Sequence[int], "np.ndarray | None"], np.ndarray]

# paper 004 section 7's set, plus no segmentation (Open MPI's default for a forced algorithm)
DEFAULT_SEGSIZES = (0, 8 << 10, 32 << 10, 128 << 10)


def candidates(collective: Collective, library: str,
               variables: TMapping[str, Sequence[int]] | None = None,
               only: Sequence[str] | None = None) -> list[Choice]:
    """Every algorithm of ``collective`` in ``library`` with every combination of the given tunable values.

    ``variables`` maps a tunable's name (``segsize``, ``fanout``,
    ``radix``) to the values to try; a tunable not named keeps the
    library's default. ``only`` keeps the algorithms of those names.
    coll/han's tunables keep their defaults: its rules file names a
    component and an algorithm per (P, size), and its segment sizes are
    global MCA parameters (``coll_han_<coll>_segsize``), so a han pick
    with another segment size could not be deployed as priced.
    """
    variables = dict(variables or {})
    out: list[Choice] = []
    for algorithm in algorithms(collective):
        if algorithm.library != library or (only and algorithm.name not in only):
            continue
        names = [p.name for p in algorithm.params]
        tunable = {} if is_han(algorithm) else variables
        values = [sorted(set(tunable.get(n, (p.default,)))) if n in tunable else [p.default]
                  for n, p in zip(names, algorithm.params)]
        for combo in itertools.product(*values):
            out.append(Choice(algorithm, dict(zip(names, combo))))
    return out


@dataclass(frozen=True)
class SelectionResult:
    """Every candidate's predicted time ``time_s[c, p, m]``, the fastest per (P, n), and the rules."""

    choices: tuple[Choice, ...]
    procs: tuple[int, ...]
    sizes: tuple[int, ...]
    time_s: np.ndarray
    selection: Selection

    @property
    def best_index(self) -> np.ndarray:
        """``[p, m]``: index into ``choices`` of the fastest candidate."""
        return np.argmin(self.time_s, axis=0)

    @property
    def best_time_s(self) -> np.ndarray:
        """``[p, m]``: the fastest candidate's predicted time."""
        return np.min(self.time_s, axis=0)

    @property
    def chosen(self) -> list[list[Choice]]:
        """``[p][m]``: the fastest candidate itself."""
        return chosen_of(self.choices, self.time_s)

    def time_of(self, choice: Choice) -> np.ndarray:
        """``[p, m]``: one candidate's predicted times."""
        return self.time_s[self.choices.index(choice)]


def select(collective: Collective, library: str, choices: Sequence[Choice], procs: Sequence[int],
           sizes: Sequence[int], price: Pricer, source: str = "", prune: bool = True) -> SelectionResult:
    """Price every candidate at every (P, n) and keep the fastest.

    ``time_s[c, p, m]`` is ``inf`` where the pricer proved candidate c no
    faster than the best before it (see the module docstring); with
    ``prune=False`` every candidate is priced in full (slower; the margin
    of each pick to the runner-up needs it).
    """
    if not choices:
        raise ValueError("no candidate algorithms")
    time_s = np.empty((len(choices), len(procs), len(sizes)))
    order = sorted(range(len(choices)), key=lambda i: _pricing_order(choices[i]))
    for p_index, nprocs in enumerate(procs):
        best = np.full(len(sizes), np.inf)
        for c_index in order:
            choice = choices[c_index]
            time_s[c_index, p_index] = price(choice, nprocs, sizes, best if prune else None)
            best = np.minimum(best, time_s[c_index, p_index])
    selection = compress(collective, library, procs, sizes, chosen_of(choices, time_s), source)
    return SelectionResult(tuple(choices), tuple(procs), tuple(sizes), time_s, selection)


def refine(result: SelectionResult, price: Pricer, prune: bool = True) -> SelectionResult:
    """The selection with the geometric midpoints priced where neighbouring grid points pick differently.

    A rule reaches from its grid point up to the next one, so where picks
    change between sizes m_i and m_(i+1) (or process counts P_i and
    P_(i+1)) everything in between took the lower point's pick unpriced;
    pricing round(sqrt(m_i m_(i+1))) (and the P midpoint, at every size)
    halves, in log scale, the stretch a rule covers without a price.
    """
    best = result.best_index
    procs, sizes = list(result.procs), list(result.sizes)
    mid_sizes = sorted({round(math.sqrt(a * b)) for j, (a, b) in enumerate(zip(sizes, sizes[1:]))
                        if b - a > 1 and (best[:, j] != best[:, j + 1]).any()} - set(sizes))
    mid_procs = sorted({round(math.sqrt(a * b)) for i, (a, b) in enumerate(zip(procs, procs[1:]))
                        if b - a > 1 and (best[i] != best[i + 1]).any()} - set(procs))
    if not mid_sizes and not mid_procs:
        return result
    all_procs, all_sizes = sorted(procs + mid_procs), sorted(sizes + mid_sizes)
    time_s = np.full((len(result.choices), len(all_procs), len(all_sizes)), np.inf)
    p_at = {p: i for i, p in enumerate(all_procs)}
    m_at = {m: j for j, m in enumerate(all_sizes)}
    time_s[np.ix_(range(len(result.choices)), [p_at[p] for p in procs], [m_at[m] for m in sizes])] = result.time_s
    collective, library = result.selection.collective, result.selection.library
    if mid_sizes:
        extra = select(collective, library, result.choices, procs, mid_sizes, price, prune=prune).time_s
        time_s[np.ix_(range(len(result.choices)), [p_at[p] for p in procs], [m_at[m] for m in mid_sizes])] = extra
    if mid_procs:
        extra = select(collective, library, result.choices, mid_procs, all_sizes, price, prune=prune).time_s
        time_s[:, [p_at[p] for p in mid_procs], :] = extra
    selection = compress(collective, library, all_procs, all_sizes, chosen_of(result.choices, time_s),
                         result.selection.source)
    return SelectionResult(result.choices, tuple(all_procs), tuple(all_sizes), time_s, selection)


def keep_default(result: SelectionResult, default_s: np.ndarray, min_gain: float,
                 source: str = "") -> tuple[Selection, np.ndarray]:
    """The selection with no rule (the library's default decides) wherever the predicted gain over the
    default, ``default_s / best``, is under ``1 + min_gain``: a rule that changes the algorithm must be
    predicted faster by more than the model's error, not merely tied or a few percent ahead (a tie broken
    the wrong way is a slower collective for every user). ``default_s[p, m]`` is the default's predicted
    time (inf where unknown: the best pick stands). Returns the Selection and the ``[p, m]`` mask of the
    points kept at the default."""
    kept = np.isfinite(default_s) & (default_s <= result.best_time_s * (1.0 + min_gain))
    return compress(result.selection.collective, result.selection.library, result.procs, result.sizes,
                    picks_or_default(result, kept), source or result.selection.source), kept


def picks_or_default(result: SelectionResult, kept: np.ndarray) -> list[list[Choice | None]]:
    """``[p][m]``: the fastest candidate, or None (no rule: the library's default) where ``kept``."""
    return [[None if kept[i, j] else c for j, c in enumerate(row)] for i, row in enumerate(result.chosen)]


def chosen_of(choices: Sequence[Choice], time_s: np.ndarray) -> list[list[Choice]]:
    """``[p][m]``: the candidate of least time at each point (the first listed on a tie)."""
    best = np.argmin(time_s, axis=0)
    return [[choices[c] for c in row] for row in best.tolist()]


def _pricing_order(choice: Choice) -> tuple[bool, bool]:
    """Unsegmented candidates first (cheap, and they set the bound), chains of ``fanout`` last: their height
    is P / fanout where the trees' is log P, so they cost the most to price and are pruned most often. Not
    Open MPI's pipeline, one chain through all ranks: folded from copies of itself, it costs no more than a
    tree, and where messages are large it is often the fastest, the bound that prunes the rest (reduce of
    512 MiB on 1,024 ranks under tau-Lop: the chain of 128 KiB segments and two in-order binaries, 0.65 to
    0.71 s, priced against 0.65 s before it, pruned against its 0.43 s: 5.1-5.6 s -> 3.5 s)."""
    segmented = choice.params.get("segsize", 0) > 0
    return segmented, choice.algorithm.name == "chain"


def schedule_pricer(model: Model, platform: Platform, mapping_of: Callable[[int], Mapping],
                    root: int = 0, statistic: str = "max", refused: list[str] | None = None,
                    element_bytes: int = 1) -> Pricer:
    """A pricer that builds each candidate's schedules and prices them under ``model`` on ``platform``:
    ``statistic`` over ranks (:meth:`Model.statistic_s`; ``max``, the collective's end, by default).
    Candidates past the limit on transmissions are never picked, and said in ``refused``
    (:func:`.grid.price_sizes`). ``element_bytes``: the calls' datatype (sizes stay in bytes)."""
    cache: dict[int, Mapping] = {}

    def price(choice: Choice, nprocs: int, sizes: Sequence[int], bound: np.ndarray | None = None) -> np.ndarray:
        if nprocs not in cache:
            cache[nprocs] = mapping_of(nprocs)
        return price_sizes(choice.algorithm, dict(choice.params), nprocs, sizes, platform, cache[nprocs], model,
                           root, bound=bound, statistic=statistic, refused=refused, element_bytes=element_bytes)
    return price


def scaled_pricer(price: Pricer, fits: TMapping[str, object], one_node: Callable[[int], bool] | None = None
                  ) -> Pricer:
    """``price`` corrected per algorithm by a calibration: a_s + b T for an Open MPI algorithm with a fit.

    What for: ``commcost calibrate`` fits T_measured ~= a_s + b T_model per
    forced Open MPI algorithm (``[algorithm_fit.<collective>.<name>]``,
    issue 7 item 3, paper 004 section 5.2's per-algorithm calibration);
    selecting with it compares the algorithms as measured, not only as
    modelled. ``fits`` maps an algorithm name to an object with ``a_s``,
    ``b`` (:class:`commcost.io.params_file.AlgorithmFit`); other algorithms
    keep the model's price. A pruning bound B on the corrected time is
    (B - a_s) / b on the model's. ``one_node(P)``: whether P ranks share one node, where a fit's
    ``one_node`` correction (cross-validated on one node) replaces its general one.
    """
    def scaled(choice: Choice, nprocs: int, sizes: Sequence[int], bound: np.ndarray | None = None) -> np.ndarray:
        fit = fits.get(choice.algorithm.name) if choice.algorithm.library == "ompi" else None
        if fit is None:
            return price(choice, nprocs, sizes, bound)
        if getattr(fit, "one_node", None) is not None and one_node is not None and one_node(nprocs):
            fit = fit.one_node
        inner = None if bound is None else (np.asarray(bound, dtype=np.float64) - fit.a_s) / fit.b
        return fit.a_s + fit.b * np.asarray(price(choice, nprocs, sizes, inner), dtype=np.float64)
    return scaled
