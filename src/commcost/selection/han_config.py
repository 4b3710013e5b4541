"""coll/han's global tunables as decision variables: one configuration per collective, chosen with the rules.

Open MPI 5's han takes its segment size and the components it runs on each
level from MCA parameters that hold for every call of a collective
(``coll_han_<coll>_segsize``, and for bcast, reduce and allreduce
``coll_han_<coll>_up_module`` 0 libnbc / 1 adapt and ``_low_module`` 0
tuned / 1 sm, ``coll_han_component.c``),
not from the rules file, which names only a component and han's algorithm
per (communicator size, message size). So a selection may price han under
several configurations, but what it deploys is one configuration per
collective, with each (P, n) then choosing between coll/tuned's algorithms
and han's under that configuration.

:func:`han_variants` gives han's candidates under every configuration of the
values asked for; :func:`choose_han_config` keeps the configuration whose
best times over the grid have the least geometric mean (each point's time is
what the rules would then run there: the faster of coll/tuned's picks and han
under that configuration), han's defaults on a tie (within ``TIE_RTOL``) or
where the configuration gains less than ``min_gain`` at the points it
changes, and the selection among coll/tuned's candidates and han's under it.
:func:`han_mca_settings` gives the ``mca-params.conf`` lines that deploy it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from commcost.collectives import Collective, algorithms
from commcost.collectives.ompi_han import is_han
from commcost.selection.decision import Choice, compress
from commcost.selection.select import Pricer, SelectionResult, chosen_of

# han's tunables that are global MCA parameters, and the parameter's name after coll_han_<collective>_
HAN_TUNABLES = {"segsize": "segsize", "up": "up_module", "low": "low_module"}
TIE_RTOL = 1e-3  # a configuration must beat han's defaults by more than this (geometric mean) to be deployed


def _config(choice: Choice) -> dict[str, int]:
    return {k: int(v) for k, v in choice.params.items() if k in HAN_TUNABLES}


def han_variants(collective: Collective, library: str, values: Mapping[str, Sequence[int]]) -> list[Choice]:
    """han's algorithms of ``collective`` with every combination of ``values`` for the global tunables each
    one has (``segsize``, ``up``, ``low``); the defaults among them, and first."""
    out: list[Choice] = []
    for algorithm in algorithms(collective):
        if algorithm.library != library or not is_han(algorithm):
            continue
        names = [p.name for p in algorithm.params if p.name in HAN_TUNABLES]
        defaults = algorithm.resolve_params()
        axes = [sorted(set(values.get(n, ())) | {defaults[n]}, key=lambda v, d=defaults[n]: (v != d, v))
                for n in names]
        for combo in itertools.product(*axes):
            out.append(Choice(algorithm, {**defaults, **dict(zip(names, combo))}))
    return out


@dataclass(frozen=True)
class HanConfig:
    """The han configuration a selection deploys for one collective, and how it scored."""

    collective: Collective
    values: dict[str, int]  # han's tunables (segsize, up, low) for every han algorithm of the collective
    defaults: dict[str, int]  # han's own defaults for the same tunables
    geomean_s: float  # the geometric mean of the best times with it
    default_geomean_s: float  # ... and with han's defaults

    @property
    def changed(self) -> dict[str, int]:
        """The tunables that differ from han's defaults (what mca-params.conf must set)."""
        return {k: v for k, v in self.values.items() if self.defaults.get(k) != v}

    def apply(self, choice: Choice) -> Choice:
        """``choice`` with this configuration where it is one of han's (its other tunables unchanged)."""
        if not is_han(choice.algorithm):
            return choice
        own = {k: v for k, v in self.values.items() if k in choice.params}
        return Choice(choice.algorithm, {**choice.params, **own})


def _fits(choice: Choice, config: Mapping[str, int]) -> bool:
    """Whether han's ``choice`` runs under ``config`` (it has no tunable that differs)."""
    return all(config.get(k, v) == v for k, v in _config(choice).items())


def _geomean(time_s: np.ndarray) -> float:
    finite = time_s[np.isfinite(time_s) & (time_s > 0)]
    return float(np.exp(np.mean(np.log(finite)))) if finite.size else float("inf")


def choose_han_config(result: SelectionResult, min_gain: float = 0.0) -> tuple[SelectionResult, HanConfig | None]:
    """The selection restricted to coll/tuned's candidates and han's under one configuration (module
    docstring), and that configuration; the result unchanged and None where it prices no han candidate.

    A configuration other than han's defaults is deployed only where it is worth changing a setting that
    holds for every call: its best times have a lower geometric mean over the whole grid (by more than
    ``TIE_RTOL``) and, over the points whose best time it changes, a geometric mean gain over han's
    defaults of at least ``1 + min_gain`` (the rules' own threshold against the model's error)."""
    han = [i for i, c in enumerate(result.choices) if is_han(c.algorithm)]
    if not han:
        return result, None
    flat = [i for i, c in enumerate(result.choices) if not is_han(c.algorithm)]
    keys = sorted({k for i in han for k in _config(result.choices[i])})
    defaults: dict[str, int] = {}
    for i in han:
        resolved = result.choices[i].algorithm.resolve_params()
        defaults.update({k: resolved[k] for k in keys if k in resolved})
    seen: list[dict[str, int]] = []
    for i in han:  # every configuration priced, in the order priced (han's defaults first)
        config = {**defaults, **_config(result.choices[i])}
        if config not in seen:
            seen.append(config)
    if defaults not in seen:
        seen.insert(0, dict(defaults))
    scored = []  # (geometric mean, candidates kept, configuration, best time per point)
    for config in seen:
        keep = flat + [i for i in han if _fits(result.choices[i], config)]
        best = result.time_s[keep].min(axis=0)
        scored.append((_geomean(best), keep, config, best))
    default_score, default_keep, _, default_best = next(item for item in scored if item[2] == defaults)

    def worth(item) -> bool:
        score, _, _, best = item
        changed = np.isfinite(best) & np.isfinite(default_best) & ~np.isclose(best, default_best, rtol=1e-9, atol=0)
        gain = _geomean(default_best[changed]) / _geomean(best[changed]) if changed.any() else 1.0
        return score < default_score * (1.0 - TIE_RTOL) and gain >= 1.0 + min_gain

    candidates = [item for item in scored if item[2] != defaults and worth(item)]
    best_score, keep, config, _ = min(candidates, key=lambda item: item[0]) if candidates else \
        (default_score, default_keep, defaults, default_best)
    keep = sorted(keep)
    choices = tuple(result.choices[i] for i in keep)
    time_s = result.time_s[keep]
    selection = compress(result.selection.collective, result.selection.library, result.procs, result.sizes,
                         chosen_of(choices, time_s), result.selection.source)
    restricted = SelectionResult(choices, result.procs, result.sizes, time_s, selection)
    return restricted, HanConfig(result.selection.collective, config, defaults, best_score, default_score)


def shared_segments_pricer(price: Pricer) -> Pricer:
    """``price`` with han's segment-size variants priced once where they run the same schedule: a message no
    larger than the segment size is one segment (``COLL_BASE_COMPUTED_SEGCOUNT``) whatever the segment size,
    so at such a size every variant costs what han with no segmentation costs. Exact (the same schedules);
    with a pruning bound the call passes through unchanged."""
    known: dict[tuple, float] = {}

    def priced(choice: Choice, nprocs: int, sizes: Sequence[int], bound: np.ndarray | None = None) -> np.ndarray:
        segsize = int(choice.params.get("segsize", 0))
        if bound is not None or not is_han(choice.algorithm) or "segsize" not in choice.params:
            return price(choice, nprocs, sizes, bound)
        rest = tuple(sorted((k, int(v)) for k, v in choice.params.items() if k != "segsize"))

        def key(nbytes: int) -> tuple:
            whole = segsize == 0 or segsize >= nbytes
            return (choice.algorithm.key, rest, 0 if whole else segsize, nprocs, int(nbytes))

        out = np.array([known.get(key(n), np.nan) for n in sizes], dtype=np.float64)
        todo = [i for i in range(len(sizes)) if np.isnan(out[i])]
        if todo:
            fresh = np.asarray(price(choice, nprocs, [sizes[i] for i in todo], None), dtype=np.float64)
            for i, value in zip(todo, fresh.tolist()):
                out[i] = value
                known[key(sizes[i])] = value
        return out
    return priced


def han_mca_settings(configs: Sequence[HanConfig]) -> list[tuple[str, str]]:
    """The ``(name, value)`` MCA parameters deploying ``configs`` (only what differs from han's defaults)."""
    out = []
    for config in configs:
        for key, value in sorted(config.changed.items()):
            out.append((f"coll_han_{config.collective.value}_{HAN_TUNABLES[key]}", str(value)))
    return out
