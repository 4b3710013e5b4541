"""commcost from Python: the main path as plain functions, objects in and out (docs/api.md is the tutorial).

What for: a notebook or a site's automation does what the command line
does without shelling out: load a platform and parameters, build any
registered algorithm's schedule, price it under any model (per rank and per
phase), price a sweep, fit parameters to measurements, select over
(P, size), write and read tuning files, and run the workflows (calibrate,
verify, tune, map, arrange). ``import commcost`` exposes every name of
``__all__`` here (loaded on first use, so the command line starts fast).

Every error a user's input can cause is an :class:`InputError` whose
``source`` names the file and ``where`` the line or field; ``str(error)``
is the one line the command line prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from commcost.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from commcost.calibration.fit_from_collectives import CollectiveFit
    from commcost.collectives import Algorithm, CollectiveSchedule
    from commcost.io.measurements import Measurement
    from commcost.io.ompi_rules import OmpiRules
    from commcost.io.params_file import ParamSet
    from commcost.models import Cost, Model
    from commcost.closedform.ompi_bcast_params import Paper004Params
    from commcost.platform import Mapping, Platform
    from commcost.schedule import Schedule
    from commcost.selection.decision import Choice, Selection
    from commcost.selection.select import SelectionResult

__all__ = [
    "InputError", "load_platform", "load_params", "place", "algorithms", "build_schedule", "load_schedule", "model", "price",
    "price_sizes", "read_measurements", "import_coltune", "fit_pingpong", "fit_collectives", "fit_sections",
    "write_params", "select", "default_choice", "write_rules", "read_rules", "rule_for", "paper004_params",
    "price_paper004",
    # the workflows behind the longer commands: one options dataclass in, one result out
    *(_WORKFLOWS := {
        "calibrate": "calibrate", "CalibrateOptions": "calibrate", "verify": "verify", "VerifyOptions": "verify",
        "tune": "tune", "TuneOptions": "tune", "search_mapping": "mapping_search", "MapOptions": "mapping_search",
        "arrange": "arrange", "ArrangeOptions": "arrange", "select_grid": "selection_grid",
        "SelectOptions": "selection_grid", "evaluate_selection": "evaluate", "EvaluateOptions": "evaluate",
        "fit_measurements": "fit", "FitOptions": "fit", "predict": "predict", "PredictOptions": "predict",
    }),
]


def __getattr__(name: str):
    """The workflows' entry points and options (:mod:`commcost.workflows`), imported on first use."""
    if name in _WORKFLOWS:
        import importlib

        return getattr(importlib.import_module(f"commcost.workflows.{_WORKFLOWS[name]}"), name)
    raise AttributeError(f"module 'commcost.api' has no attribute {name!r}")


def load_platform(path: str | Path) -> "Platform":
    """The platform of a TOML file (docs/file-formats.md): node types, nodes, channels."""
    from commcost.io.platform_file import load_platform as read

    return read(path)[0]


def load_params(path: str | Path, strict: bool | None = None) -> "ParamSet":
    """A parameter file's sections by model (``strict=True`` refuses tau-Lop tables that break the model's
    constraints; None lets the file decide)."""
    from commcost.io.params_file import load_params as read

    return read(path, strict=strict)


def place(platform: "Platform", nprocs: int, ppn: int | None = None, mapping: str | None = None) -> "Mapping":
    """Where ``nprocs`` ranks run: ``ppn`` consecutive ranks per node (default: the most a node runs, its
    cores and GPUs), or ``mapping`` in the command line's ``--mapping`` form (``round_robin:ppn=4``, ...)."""
    from commcost.io.mapping_spec import parse_mapping_option
    from commcost.workflows.pricing import ranks_in_blocks

    if mapping is not None:
        spec = parse_mapping_option(mapping)
    else:
        most = max(node.type.cores + node.type.gpus for node in platform.nodes)
        spec = ranks_in_blocks(platform, most if ppn is None else ppn, "ppn", platform.name)
    return spec.build(platform, nprocs)


def algorithms(collective: str, library: str | None = "ompi") -> list["Algorithm"]:
    """The registered algorithms of ``collective`` (``bcast``, ``allreduce``, ...) of one ``library``
    (``ompi``, ``mpich``; None: every library), Open MPI's in id order. ``.name``, ``.params`` (tunables
    with defaults) and ``.id`` say what each is."""
    from commcost.collectives import algorithms as registered

    return [a for a in registered(_collective(collective)) if library is None or a.library == library]


def build_schedule(collective: str, algorithm: str, nprocs: int, nbytes: int, root: int = 0,
             **tunables: int) -> "CollectiveSchedule":
    """The transmissions ``algorithm`` makes for one call of ``nbytes`` on ``nprocs`` ranks, as data.
    ``algorithm``: a name (``binomial``, ``mpich.binomial``) or an Open MPI id; ``tunables``: ``segsize``,
    ``fanout``, ``radix`` where the algorithm has them (others keep the library's defaults)."""
    from commcost.collectives import Case, build, find

    chosen = find(_collective(collective), algorithm)
    return build(chosen, Case(_collective(collective), nprocs, nbytes, root), tunables)


def load_schedule(path: str | Path) -> "Schedule":
    """A schedule file (JSON or TOML: phases of transmissions, docs/file-formats.md), e.g. a kernel's."""
    from commcost.io.schedule_file import load_schedule as read

    return read(path)


def model(name: str, params: "ParamSet") -> "Model":
    """The cost model ``name`` (``hockney``, ``loggp``, ``loggph``, ``hloggp``, ``maxrate``, ``taulop``) with
    its section of ``params`` and the file's reduction rates."""
    from commcost.models import MODELS

    if name not in MODELS:
        raise InputError(f"no model {name!r}; expected one of {', '.join(sorted(MODELS))}", where="model")
    try:
        return MODELS[name](params.for_model(name)).with_reduction(params.reduction())
    except InputError as exc:
        raise exc.located(source=params.source) from None


def price(schedule: "CollectiveSchedule", platform: "Platform", mapping: "Mapping", model: "Model",
          explain: bool = False) -> "Cost":
    """What ``model`` says ``schedule`` costs placed by ``mapping``: ``time_s`` (the last rank's end),
    ``rank_time_s`` per rank, ``phase_time_s`` per phase, ``channel_time_s`` per channel; ``explain``: the
    model's detail (tau-Lop: the formula in paper 000's notation, ``cost.explain["formula"]``)."""
    from commcost.models import PlacedSchedule

    sched = getattr(schedule, "schedule", schedule)
    return model.price(PlacedSchedule.of(sched, platform, mapping), explain=explain)


def price_sizes(collective: str, algorithm: str, nprocs: int, sizes: Sequence[int], platform: "Platform",
                model: "Model", ppn: int | None = None, mapping: str | None = None, root: int = 0,
                statistic: str = "max", **tunables: int) -> "np.ndarray":
    """Seconds of one algorithm at every size of ``sizes`` on ``nprocs`` ranks (a sweep: one schedule per
    size class, one pass where the model allows). ``statistic`` over ranks: ``max`` (the collective's
    end), ``mean`` (what OSU reports), ``min`` or ``rank0``."""
    from commcost.collectives import find
    from commcost.selection.grid import price_sizes as sweep

    chosen = find(_collective(collective), algorithm)
    return sweep(chosen, dict(tunables), nprocs, list(sizes), platform, place(platform, nprocs, ppn, mapping),
                 model, root, statistic=statistic)


def read_measurements(path: str | Path) -> list["Measurement"]:
    """The rows of a measurements CSV (what ``calibrate`` and ``import`` write; docs/file-formats.md)."""
    from commcost.io.measurements import read_measurements as read

    return read(path)


def import_coltune(folder: str | Path, host: str = "", ppn: int | None = None,
                   version: str = "5.0") -> list["Measurement"]:
    """Every OSU output of an ompi-collectives-tuning folder as measurement rows (one per size and run;
    algorithm ids named for Open MPI ``version``; ranks per node from the job scripts unless ``ppn``)."""
    from commcost.io.coltune_import import read_coltune

    return read_coltune(folder, ppn=ppn, version=version, host=host)


def fit_pingpong(rows: Iterable["Measurement"], model: str = "hockney",
                 transfers: dict[str, int] | None = None) -> dict:
    """Parameter-file sections of ``model`` (``hockney``, ``loggp``, ``taulop``) fitted per channel to the
    point-to-point rows (ping-pong, Ring_tau) of ``rows``; write them with :func:`write_params`."""
    from commcost.calibration.from_measurements import fit_channels, model_section
    from commcost.io.measurements import measurement_columns

    return model_section(model, fit_channels(measurement_columns(list(rows)), model, transfers))


def fit_collectives(rows: Iterable["Measurement"], platform: "Platform", model: str = "hockney",
                    collectives: Sequence[str] | None = None, max_procs: int | None = None,
                    barrier_skew: str | None = None) -> "CollectiveFit":
    """``model``'s parameters per channel fitted to the measured times of forced collective algorithms
    (inverse calibration: each row's schedule priced, the parameters moved until the prices meet the
    times). ``.params``, ``.summary()`` (median |error|), ``.per_algorithm`` (and
    ``.per_algorithm_corrected``, with the per-algorithm corrections cross-validation kept for each point's
    regime, one node or across nodes); :func:`write_params` with ``fit_sections(fit)`` keeps it.
    ``barrier_skew``: ``"ompi5"``, ``"ompi4"`` or ``"auto"`` to price each rank's time from when the barrier
    before the timed call let it go (``commcost fit --barrier-skew``; ``.barrier`` says what was kept)."""
    from commcost.workflows.fit import fit_collective_rows

    return fit_collective_rows(list(rows), platform, model, collectives, max_procs, barrier=barrier_skew)


def fit_sections(fit: "CollectiveFit") -> dict:
    """The parameter-file sections of a collective fit (the model's, and the per-algorithm corrections)."""
    from commcost.workflows.fit import collective_fit_sections

    return collective_fit_sections(fit)


def write_params(path: str | Path, sections: dict, meta: dict | None = None) -> "ParamSet":
    """Write ``sections`` as a parameter file and read it back (so what is returned is what a command
    would load)."""
    from commcost.io.params_file import write_params as write

    write(path, sections, meta)
    return load_params(path)


def select(collective: str, platform: "Platform", model: "Model", procs: Sequence[int], sizes: Sequence[int],
           ppn: int | None = None, mapping: str | None = None, library: str = "ompi",
           only: Sequence[str] | None = None, variables: dict[str, Sequence[int]] | None = None,
           statistic: str = "max", root: int = 0) -> "SelectionResult":
    """The fastest algorithm (with its tunables) at every (P, size) of the grid under ``model``:
    ``.time_s[candidate, p, m]``, ``.choices``, and ``.selection`` (rules, ``.choice(P, size)``).
    ``only``: algorithm names to consider (default all of ``library``); ``variables``: tunable values to
    try (``{"segsize": [0, 8192]}``)."""
    from commcost.selection.select import candidates, schedule_pricer
    from commcost.selection.select import select as best

    kind = _collective(collective)
    pricer = schedule_pricer(model, platform, lambda n: place(platform, n, ppn, mapping), root, statistic)
    choices = candidates(kind, library, variables, only)
    if not choices:
        raise InputError(f"no {library} {collective} algorithm to select from", where="library")
    return best(kind, library, choices, list(procs), list(sizes), pricer, source=f"model {model.NAME}")


def default_choice(collective: str, nprocs: int, nbytes: int) -> "Choice | None":
    """What Open MPI 5's coll/tuned runs for a call when no rules file says otherwise (its fixed decision),
    None where commcost has no schedule of that pick."""
    from commcost.selection.ompi_fixed import as_choice, decide

    return as_choice(decide(_collective(collective), nprocs, nbytes))


def write_rules(selections: Iterable["Selection"], path: str | Path, format: str = "classic") -> "OmpiRules":
    """Write Open MPI coll/tuned rules (``classic``: 5.0 and later; ``json``: 6.0 and later) for the
    selections (one per collective, e.g. ``select(...).selection``); returns the rules written."""
    from commcost.io.ompi_rules import write_ompi_rules

    return write_ompi_rules(selections, path, format)


def read_rules(path: str | Path) -> "OmpiRules":
    """An Open MPI rules file (classic or JSON) as Open MPI reads it; errors name the file and line."""
    from commcost.io.ompi_rules_read import read_ompi_rules

    return read_ompi_rules(path)


def rule_for(rules: "OmpiRules", collective: str, nprocs: int, nbytes: int) -> "Choice | None":
    """The algorithm (and tunables) ``rules`` makes Open MPI run for one call of ``nbytes`` (commcost's
    size: per-rank blocks for gather-like collectives) on ``nprocs`` ranks; None where Open MPI keeps its
    fixed decision (see :func:`default_choice`)."""
    from commcost.io.ompi_rules import choice_of_rule

    kind = _collective(collective)
    rule = rules.decide_call(kind, nprocs, nbytes)
    return None if rule is None else choice_of_rule(rule, kind)


def paper004_params(cluster: str, algorithm: str | None = None) -> "Paper004Params":
    """Paper 004's parameters of one of its clusters (``grisou``, ``gros``, ``marenostrum4``): gamma and Q
    of Table 1 with Table 2's o^1, L^0, L^1 for ``algorithm`` (zeros when None); o^0 = 0 everywhere."""
    from commcost.closedform.ompi_bcast_params import PAPER004_CLUSTERS
    from commcost.closedform.ompi_bcast_params import paper004_params as table

    if cluster not in PAPER004_CLUSTERS:
        raise InputError(f"paper 004 has no cluster {cluster!r}; expected one of {', '.join(PAPER004_CLUSTERS)}",
                         where="cluster")
    return table(cluster, algorithm)


def price_paper004(algorithm: str, nprocs: int, sizes: Sequence[int], params: "Paper004Params", ppn: int,
                   segsize: int = 8192, root: int = 0) -> "np.ndarray":
    """Seconds of an Open MPI broadcast by paper 004's closed forms (eq. 1, 9-13) at every size, ``ppn``
    consecutive ranks per node, segments of ``segsize`` bytes (the paper's 8 KB)."""
    import numpy as np

    from commcost.closedform.ompi_bcast_model import MODELLED

    if algorithm not in MODELLED:
        raise InputError(f"paper 004 models no bcast algorithm {algorithm!r}; expected one of "
                         f"{', '.join(MODELLED)}", where="algorithm")
    return np.asarray(MODELLED[algorithm](nprocs, np.asarray(sizes, dtype=np.float64), segsize, ppn, params,
                                          root=root), dtype=np.float64)


def _collective(name: str):
    from commcost.collectives import Collective

    try:
        return Collective(name)
    except ValueError:
        raise InputError(f"no collective {name!r}; expected one of {', '.join(c.value for c in Collective)}",
                         where="collective") from None
