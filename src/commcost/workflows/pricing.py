"""What every workflow needs to price: a cost model from a parameter file, a mapping from a platform and options, a case, and a check that the price is finite."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from commcost.errors import InputError
from commcost.units import too_long_for_int

if TYPE_CHECKING:
    from commcost.collectives import Case


PAPER004 = "ompi_bcast_model"  # paper 004's model: whole algorithms, not schedules


def model_from(params, name: str):
    """The cost model ``name`` with the parameter file's section for it and its reduction tables (what a
    command prices with; InputError, from the file, where the section is missing)."""
    from commcost.models import MODELS

    return MODELS[name](params.for_model(name)).with_reduction(params.reduction())


def strictness(args: argparse.Namespace) -> bool | None:
    """What ``--strict`` asks of ``load_params``: True to refuse, None to let the file decide (commands that
    build their options without it, as tune does for select, leave it to the file)."""
    return True if getattr(args, "strict", False) else None


def collectives():
    """Every collective, in the registry's order (for choices of options)."""
    from commcost.collectives import Collective

    return list(Collective)


def ranks_in_blocks(platform, ppn: int, where: str, source: str):
    """The sequential placement of ``ppn`` ranks per node (a :class:`~commcost.io.mapping_spec.MappingSpec`),
    refused in one line naming ``where`` (the option or argument) and ``source`` (the platform) unless
    1 <= ppn <= the most ranks a node runs: its cores and GPUs (more is oversubscribed, not what the models
    price)."""
    from commcost.io.mapping_spec import MappingKind, MappingSpec

    if ppn < 1:
        raise InputError(f"expected ranks per node >= 1, got {ppn}", where=where)
    most = max((node.type.cores + node.type.gpus for node in platform.nodes), default=ppn)
    if ppn > most:
        raise InputError(f"expected {where} <= {most}, the most ranks a node of {source} runs (its cores "
                         f"and GPUs), got {ppn}", where=where)
    return MappingSpec(MappingKind.SEQUENTIAL, ppn=ppn)


def load_mapping(args: argparse.Namespace, platform, spec, nprocs: int):
    from commcost.io.mapping_spec import parse_mapping_option

    base_dir = args.platform.parent
    where = "mapping"
    if args.mapping:
        try:
            spec = parse_mapping_option(args.mapping)
        except InputError as exc:
            raise exc.located(where="--mapping") from None
        base_dir, where = Path.cwd(), "--mapping"
    elif getattr(args, "ppn", None) is not None:
        spec, where = ranks_in_blocks(platform, args.ppn, "--ppn", str(args.platform)), "--ppn"
    if spec is None:
        raise InputError("the platform has no [mapping] section; expected one there, --mapping or --ppn",
                         source=str(args.platform))
    try:
        return spec.build(platform, nprocs, base_dir)
    except InputError as exc:
        raise exc.located(source=str(args.platform) if where == "mapping" else None, where=where) from None


def price_placed(args: argparse.Namespace, schedule, platform, mapping, model):
    from commcost.models import PlacedSchedule

    try:
        placed = PlacedSchedule.of(schedule, platform, mapping)
    except InputError as exc:
        raise exc.located(source=str(args.platform)) from None
    import numpy as np

    try:
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported once, by finite_cost
            cost = model.price(placed, explain=args.explain)
    except InputError as exc:
        raise exc.located(source=str(args.params)) from None
    return finite_cost(cost, args)


def finite_cost(cost, args: argparse.Namespace):
    """``cost``, or an error naming the parameter file when its time is not a finite number: a parameter
    near 0 that divides (a rate) or near 1e308 that multiplies (a time, a gap) makes inf or NaN, not a
    prediction."""
    import math

    if not math.isfinite(cost.time_s):
        raise InputError(f"the parameters give a time of {cost.time_s} s under {cost.model}; expected parameters "
                         "that keep times finite (a rate near 0 or a time or gap near 1e308?)",
                         source=str(args.params))
    return cost


def case_of(collective: str, nprocs: int, nbytes: int, root: int) -> "Case":
    """A :class:`~commcost.collectives.Case`, its errors named by the option that set the field (``--root``)."""
    from commcost.collectives import Case, Collective

    try:
        return Case(Collective(collective), nprocs, nbytes, root)
    except InputError as exc:
        raise InputError(exc.message, where=f"--{exc.where}" if exc.where else None) from None


def given_params(algorithm, given: dict[str, int], every_algorithm: bool) -> dict[str, int]:
    """The ``--param`` values ``algorithm`` is priced with: with ``--all-algorithms`` only those it has; for
    one algorithm all of them (an unknown name is then its error)."""
    if not every_algorithm:
        return given
    return {k: v for k, v in given.items() if any(p.name == k for p in algorithm.params)}


def selection_model(params) -> tuple[str | None, dict[str, list[str]]]:
    """The model tune selects under, and the channels each fitted model covers: tau-Lop where Ring_tau
    covered shm and a network channel, else Hockney where the ping-pong did, else None."""
    from commcost.launch.mpi_launch import NETWORK_CHANNELS

    fitted_channels = {}
    for name in ("taulop", "hockney"):
        if name in params.sections:
            fitted = params.for_model(name)
            fitted_channels[name] = sorted(fitted.tables if name == "taulop" else fitted.channels)
    model = next((name for name, chans in fitted_channels.items()
                  if "shm" in chans and any(c in chans for c in NETWORK_CHANNELS)), None)
    return model, fitted_channels


def paper004_pricer(params, mapping_of, root: int = 0):
    """Paper 004's closed forms (eq. 1, 9-13) as a pricer (:mod:`commcost.selection.select`); algorithms the
    paper does not model cost inf."""
    import numpy as np

    from commcost.closedform.ompi_bcast_model import MODELLED

    def price(choice, nprocs, sizes, bound=None):
        name = choice.algorithm.name
        if choice.algorithm.library != "ompi" or name not in MODELLED:
            return np.full(len(sizes), np.inf)
        extra = {"fanout": choice.params["fanout"]} if name == "chain" else {}
        return np.asarray(MODELLED[name](nprocs, np.asarray(sizes, dtype=np.float64), choice.params.get("segsize", 0),
                                         mapping_of(nprocs), params, root=root, **extra), dtype=np.float64)
    return price


MAX_TRANSFERS = 16  # transfers per transmission: tau-Lop's channels have 1 (RDMA) to 3 (TCP: shm + net + shm)


def transfer_counts(items: list[str]) -> dict[str, int]:
    """``--transfers CHANNEL=K`` (repeatable): tau-Lop's transfers per transmission of a channel, 1 <= K <= 16."""
    transfers: dict[str, int] = {}
    for item in items:
        name, _, k = item.partition("=")
        if not name.strip() or not k.isdigit() or too_long_for_int(k) or not 1 <= int(k) <= MAX_TRANSFERS:
            raise InputError(f"expected CHANNEL=K with 1 <= K <= {MAX_TRANSFERS}, got {item[:60]!r}",
                             where="--transfers")
        transfers[name.strip()] = int(k)
    return transfers


def algorithm_params(items: list[str]) -> dict[str, int]:
    """``NAME=VALUE`` pairs; values are integers or sizes (8KiB)."""
    from commcost.units import parse_nbytes

    values: dict[str, int] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise InputError(f"expected NAME=VALUE, got {item!r}", where="--param")
        try:
            values[name] = parse_nbytes(text)
        except InputError:
            raise InputError(f"{name}: expected an integer or a size such as 8KiB, got {text!r}",
                             where="--param") from None
    return values


def collective_case(args) -> "Case":
    """The :class:`~commcost.collectives.Case` that ``--collective``, ``--procs``, ``--nbytes`` and ``--root`` name."""
    from commcost.units import parse_nbytes

    for flag, value in (("--procs", args.procs), ("--nbytes", args.nbytes)):
        if value is None:
            raise InputError(f"--collective needs {flag}", where=flag)
    try:
        nbytes = parse_nbytes(args.nbytes)
    except InputError as exc:
        raise exc.located(where="--nbytes") from None
    return case_of(args.collective, args.procs, nbytes, args.root)


def collective_schedule(args) -> tuple:
    """The algorithm ``--algorithm`` names and its schedule for the case the options name; errors name the
    option."""
    from commcost.collectives import build, find
    from commcost.collectives.recorder import ScheduleTooLarge

    case = collective_case(args)
    if not args.algorithm:
        raise InputError("--collective needs --algorithm NAME", where="--algorithm")
    try:
        algorithm = find(case.collective, args.algorithm)
    except InputError as exc:
        raise exc.located(where="--algorithm") from None
    given = algorithm_params(args.param)
    try:
        return algorithm, build(algorithm, case, given).schedule
    except ScheduleTooLarge as exc:
        raise InputError(f"{algorithm.key}: {exc.message}", where="--procs") from None
    except InputError as exc:
        where = f"--{exc.where}" if exc.where in ("procs", "root") else f"--param {exc.where}" if exc.where else None
        raise InputError(exc.message, where=where) from None


def fits_in_memory(platform, mapping, nbytes: int, source: str, where: str = "--sizes") -> None:
    """Refuse the sizes option ``where`` in one line where ``nbytes`` a rank does not fit in the memory a node
    of ``mapping`` states (:func:`commcost.platform.mapping.largest_buffer`): a select to 1 TiB on 4 ranks per
    node of 256 GiB could only price collectives that cannot run."""
    from commcost.platform.mapping import largest_buffer
    from commcost.units import format_nbytes

    largest = largest_buffer(platform, mapping)
    if largest is not None and nbytes > largest[0]:
        room, node, ranks = largest
        kind = platform.nodes[node].type
        raise InputError(f"{ranks} ranks of {format_nbytes(nbytes)} each do not fit on node "
                         f"{platform.nodes[node].name} ({kind.name}: memory_bytes = {kind.memory_bytes:,} in "
                         f"{source}); expected sizes up to {room:,} bytes ({format_nbytes(room)})", where=where)
