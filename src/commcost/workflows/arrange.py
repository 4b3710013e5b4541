"""The communication-optimal 2D arrangement of a data-parallel code's processes (paper 002), as
``commcost arrange mpdata`` computes it.

Processes: ``ppn`` per node of the platform (default one per node, as
paper 002 runs MPDATA), in node order; each belongs to its node's group at
``level`` (default the platform's outermost group level, else the node).
Bandwidths between groups come from ``bandwidths`` (paper 002 Table 1's
form, :mod:`commcost.io.bandwidths_file`) or are derived from a model of
``params`` (``bandwidths_from``). The initial arrangement is the
``initial`` order (sequential, round-robin over groups, or random:SEED)
filled column by column into ``initial_shape`` (default the squarest
r x c with r <= c); the heuristic (:mod:`commcost.partition.arrangement`)
starts from the same order. ``exhaustive`` (p <= 12) adds the optimum and
the heuristic's gap.

``params`` prices MPDATA's halo-exchange schedule
(:mod:`commcost.kernels.mpdata`, one time step) of each arrangement under
the models of that file on the platform, and says where a model ranks the
arrangements otherwise than the bandwidth cost does. ``out`` and
``measure``: :mod:`commcost.workflows.arrange_outputs`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from commcost.errors import InputError
from commcost.units import too_long_for_int
from commcost.workflows.arrange_options import ArrangeOptions
from commcost.workflows.arrange_outputs import described


def dims(text: str, count: int, where: str) -> tuple[int, ...]:
    parts = text.lower().split("x")
    try:
        values = tuple(int(v) for v in parts)
    except ValueError:
        values = ()
    if len(values) != count or any(v < 1 for v in values):
        raise InputError(f"expected {'x'.join(['N'] * count)} with positive integers, got {text!r}", where=where)
    return values


def _default_level(platform, groups) -> str:
    """The level (of the platform's, then 'node') whose groups the bandwidths name most completely; ties go
    to the outermost."""
    named = set(groups)
    candidates = [(lv, {node.groups[d] for node in platform.nodes}) for d, lv in enumerate(platform.levels)]
    candidates = [*reversed(candidates), ("node", {node.name for node in platform.nodes})]
    return max(candidates, key=lambda item: len(item[1] & named) / len(item[1]))[0]


def process_groups(platform, bandwidths, level: str | None, ppn: int, source: Path) -> tuple:
    """The level the bandwidths name (``level``, else :func:`_default_level`) and the group of each of the
    ``ppn`` processes per node (node order), as indices into the bandwidths' groups."""
    import numpy as np

    level = level or _default_level(platform, bandwidths.groups)
    if level != "node" and level not in platform.levels:
        raise InputError(f"expected 'node' or one of the platform's levels {list(platform.levels)}, got {level!r}",
                         where="--level")
    labels = [node.name if level == "node" else node.groups[platform.levels.index(level)]
              for node in platform.nodes for _ in range(ppn)]
    missing = sorted(set(labels) - set(bandwidths.groups))
    if missing:
        raise InputError(f"no bandwidths for group {missing[0]!r} (level {level}); expected one of "
                         f"{list(bandwidths.groups)}", source=str(source), where="groups")
    index = {g: i for i, g in enumerate(bandwidths.groups)}
    return level, np.array([index[g] for g in labels], dtype=np.int64)


def _derived_bandwidths(options: ArrangeOptions, platform, hw: tuple[float, float]) -> tuple:
    """b_H and b_V between the groups of ``--level`` (default the innermost above nodes) from ``--bandwidths-from``'s
    model of ``--params`` (:mod:`commcost.partition.model_bandwidths`), at the message sizes ``hw``; and that
    level."""
    from commcost.workflows.pricing import strictness
    from commcost.io.bandwidths_file import Bandwidths
    from commcost.io.params_file import load_params
    from commcost.models import MODELS
    from commcost.partition.model_bandwidths import model_bandwidths

    if options.params is None:
        raise InputError("--bandwidths-from MODEL takes the model from --params FILE; expected --params",
                         where="--bandwidths-from")
    if options.bandwidths_from not in MODELS:
        raise InputError(f"expected one of {sorted(MODELS)}, got {options.bandwidths_from!r}",
                         where="--bandwidths-from")
    level = options.level or (platform.levels[0] if platform.levels else "node")
    if level != "node" and level not in platform.levels:
        raise InputError(f"expected 'node' or one of the platform's levels {list(platform.levels)}, got {level!r}",
                         where="--level")
    members: dict[str, list[int]] = {}
    for n, node in enumerate(platform.nodes):
        members.setdefault(node.name if level == "node" else node.groups[platform.levels.index(level)], []).append(n)
    params = load_params(options.params, strict=strictness(options))
    try:
        model = MODELS[options.bandwidths_from](params.for_model(options.bandwidths_from))
        bh, bv = model_bandwidths(model, platform, list(members.values()), *hw)
    except InputError as exc:
        raise exc.located(source=str(options.params)) from None
    return Bandwidths(tuple(members), bh, bv), level


def _order(initial: str, group):
    import numpy as np

    p = len(group)
    if initial == "sequential":
        return np.arange(p)
    if initial == "round-robin":
        members = [list(np.flatnonzero(group == g)) for g in np.unique(group)]
        out = []
        while any(members):
            out += [m.pop(0) for m in members if m]
        return np.array(out)
    kind, _, seed = initial.partition(":")
    if kind == "random" and seed.isdigit() and not too_long_for_int(seed):
        return np.random.default_rng(int(seed)).permutation(p)
    raise InputError(f"expected sequential, round-robin or random:SEED, got {initial!r}", where="--initial")


def arrange(options: ArrangeOptions) -> dict:
    """The initial and the heuristic arrangement (with ``exhaustive`` the optimum too), their bandwidth costs,
    their prices under the models of ``params``, what ``out`` got and what ``measure`` measured: the document
    ``arrangement.json`` holds and ``--format json`` prints."""
    import numpy as np

    from commcost.io.bandwidths_file import load_bandwidths
    from commcost.io.platform_file import load_platform
    from commcost.partition import arrangement as arr
    from commcost.workflows.arrange_outputs import measure, write_outputs

    platform, _ = load_platform(options.platform)
    domain = dims(options.domain, 3, "--domain")
    halo = dims(options.halo, 2, "--halo")
    if options.ppn < 1 or options.value_bytes < 1:
        raise InputError("expected --ppn and --value-bytes >= 1",
                         where="--ppn" if options.ppn < 1 else "--value-bytes")
    if options.model and options.params is None:
        raise InputError("prices with a model of --params FILE; expected --params with it", where="--model")

    def volumes(r: int, c: int) -> tuple[float, float]:
        return arr.mpdata_volumes(domain, halo, r, c, options.value_bytes)

    p = len(platform.nodes) * options.ppn
    pairs = arr.factor_pairs(p)
    if options.initial_shape:
        r, c = dims(options.initial_shape, 2, "--initial-shape")
        if r * c != p:
            raise InputError(f"expected R x C = {p} processes, got {r} x {c}", where="--initial-shape")
    else:
        r, c = min(pairs, key=lambda rc: (abs(rc[0] - rc[1]), -rc[1]))
    if options.bandwidths is not None:
        bandwidths, level = load_bandwidths(options.bandwidths), options.level
    else:
        bandwidths, level = _derived_bandwidths(options, platform, volumes(r, c))
    level, group = process_groups(platform, bandwidths, level, options.ppn, options.bandwidths)
    names = [f"{node.name}" + (f":{k}" if options.ppn > 1 else "") for node in platform.nodes
             for k in range(options.ppn)]
    order = _order(options.initial, group)
    initial = arr.priced(order.reshape(c, r).T.copy(), group, bandwidths.horizontal, bandwidths.vertical, volumes)
    started = time.perf_counter()
    best, rounds = arr.heuristic(order, group, bandwidths.horizontal, bandwidths.vertical, volumes)
    spent = time.perf_counter() - started
    out = {"application": options.application, "processes": p, "level": level, "domain": list(domain),
           "halo": list(halo), "initial_order": options.initial,
           "initial": described(initial, names, bandwidths.groups, group),
           "heuristic": {**described(best, names, bandwidths.groups, group), "rounds": rounds, "seconds": spent},
           "ratio": initial.cost / best.cost}
    arrangements = {"initial": initial, "heuristic": best}
    if options.exhaustive:
        started = time.perf_counter()
        optimum = arr.exhaustive(group, bandwidths.horizontal, bandwidths.vertical, volumes)
        arrangements["optimum"] = optimum
        out["exhaustive"] = {**described(optimum, names, bandwidths.groups, group),
                             "placements_per_shape": arr.placements_count(group),
                             "seconds": time.perf_counter() - started,
                             "heuristic_gap_pct": 100 * (best.cost / optimum.cost - 1)}
    node_of_process = np.repeat(np.arange(len(platform.nodes)), options.ppn)
    mappings = {label: _mapping(a, node_of_process) for label, a in arrangements.items()}
    if options.bandwidths is None:
        out["derived_bandwidths"] = {"model": options.bandwidths_from, "at_shape": [r, c], "unit": "B/s",
                                     "groups": list(bandwidths.groups), "horizontal": bandwidths.horizontal.tolist(),
                                     "vertical": bandwidths.vertical.tolist()}
    if options.params is not None:
        out["models"] = _priced_by_models(options, arrangements, mappings, platform, volumes)
        out["disagreements"] = _disagreements(arrangements, out["models"])
    if options.out is not None:
        out["files"] = write_outputs(options, out, arrangements, mappings, platform, names, bandwidths.groups, group)
    if options.measure:
        out["measured"] = measure(options, out, arrangements, mappings, platform, domain, halo)
    if options.out is not None:
        (options.out / "arrangement.json").write_text(json.dumps(out, indent=2))
    return out


def _mapping(arrangement, node_of_process):
    """MPI_Cart rank k = i * c + j (row-major) on the node of the process at cell (i, j)."""
    from commcost.platform import Mapping

    return Mapping.on_nodes(node_of_process[arrangement.grid.reshape(-1)], "arrangement")


def _priced_by_models(options: ArrangeOptions, arrangements, mappings, platform,
                      volumes) -> dict[str, dict[str, float]]:
    """Seconds of one MPDATA time step of each arrangement under each model of ``--params``."""
    from commcost.kernels.mpdata import halo_schedule
    from commcost.models import MODELS, PlacedSchedule
    from commcost.workflows.measure import params_and_models

    params, models = params_and_models(options.params, options.model, options.strict)
    out: dict[str, dict[str, float]] = {}
    for name in models:
        model = MODELS[name](params.for_model(name))
        out[name] = {}
        for label, a in arrangements.items():
            schedule = halo_schedule(*a.shape, *volumes(*a.shape))
            out[name][label] = model.price(PlacedSchedule.of(schedule, platform, mappings[label])).time_s
    return out


def _disagreements(arrangements, models: dict[str, dict[str, float]]) -> list[str]:
    """Where a model orders two arrangements otherwise than the bandwidth cost (eq. 1-3) does."""
    lines = []
    labels = list(arrangements)
    for name, times in models.items():
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                by_cost = arrangements[a].cost - arrangements[b].cost
                by_model = times[a] - times[b]
                if by_cost * by_model < 0 and abs(by_model) > 1e-9 * max(times[a], times[b]):
                    better, worse = (a, b) if by_model < 0 else (b, a)
                    lines.append(f"{name} ranks the {better} arrangement ahead of the {worse} one "
                                 f"({times[better]:.4g} s vs {times[worse]:.4g} s per step); the bandwidth cost "
                                 f"says the opposite ({arrangements[better].cost:.4g} vs "
                                 f"{arrangements[worse].cost:.4g})")
    return lines
