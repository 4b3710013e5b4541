"""The options that name one collective algorithm on one case, and the schedule they build, for the commands
that take a collective where they could take a schedule file (``export-goal``, ``map``)."""

from __future__ import annotations

import argparse

from commcost.cli.options import algorithm_params, collective_case
from commcost.errors import InputError


def add_collective_options(p: argparse.ArgumentParser) -> None:
    """``--algorithm``, ``--procs``, ``--nbytes``, ``--root`` and ``--param`` in their own group."""
    coll = p.add_argument_group("collectives (with --collective)")
    coll.add_argument("--algorithm", help="library name (knomial, mpich.binomial) or Open MPI id")
    coll.add_argument("--procs", type=int, help="number of ranks P")
    coll.add_argument("--nbytes", help="message size (bcast, reduce, allreduce) or block per rank; 64KiB, 1MiB")
    coll.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    coll.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="algorithm parameter, e.g. segsize=8KiB, fanout=2, radix=4 (repeatable)")


def collective_schedule(args: argparse.Namespace):
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
