"""The options that name one collective algorithm on one case, and the schedule they build, for the commands
that take a collective where they could take a schedule file (``export-goal``, ``map``)."""

from __future__ import annotations

import argparse

from commcost.workflows.pricing import collective_schedule  # noqa: F401  (the commands that take these options build with it)


def add_collective_options(p: argparse.ArgumentParser) -> None:
    """``--algorithm``, ``--procs``, ``--nbytes``, ``--root`` and ``--param`` in their own group."""
    coll = p.add_argument_group("collectives (with --collective)")
    coll.add_argument("--algorithm", help="library name (knomial, mpich.binomial) or Open MPI id")
    coll.add_argument("--procs", type=int, help="number of ranks P")
    coll.add_argument("--nbytes", help="message size (bcast, reduce, allreduce) or block per rank; 64KiB, 1MiB")
    coll.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    coll.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="algorithm parameter, e.g. segsize=8KiB, fanout=2, radix=4 (repeatable)")


