"""``commcost select`` as a function: the predicted best algorithm (and tunables) for every (P, n) of a grid,
Open MPI's default beside it, and the rules files the options ask for.

What for: a script selects over a grid with :func:`select_grid` and gets the
selection, the default's predicted times and penalty, and the same JSON
document ``commcost select --format json`` prints (:meth:`SelectGrid.document`);
the command line only builds :class:`SelectOptions` and prints the result.
"""

from __future__ import annotations

import numpy as np

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commcost.errors import InputError
from commcost.selection.long_pipeline import APPROXIMATE_NOTE, summarize_notes
from commcost.workflows.select import (HAN_FIRST, algorithm_names, finite_or_none, han_default, make_pricer,
                                      ompi_default_times, predicted_penalty, variables, write_tuning_files)


@dataclass
class SelectOptions:
    """What to select: the collective, the parameter and platform files, the model, whose algorithms, the grid
    (``procs``, ``sizes`` as the command line writes them), the decision variables, and the files to write
    (field names are ``commcost select``'s option names)."""

    collective: str = "bcast"
    params: Path | None = None
    platform: Path | None = None
    model: str = "taulop"
    library: str = "ompi"
    procs: str = "2..4096"
    sizes: str = "1..4MiB"
    ppn: int | None = None
    mapping: str | None = None
    root: int = 0
    segsizes: str = "0,8KiB,32KiB,128KiB"
    fanouts: str = ""
    radixes: str = ""
    algorithms: str | None = None
    algorithm_fit: bool = False
    strict: bool = False
    plot: Path | None = None
    write_ompi_rules: Path | None = None
    ompi_rules_format: str = "classic"
    write_mpich_json: Path | None = None
    mpich_base: Path | None = None


@dataclass
class SelectGrid:
    """A selection over (P, n): the result of :func:`commcost.selection.select.select`, Open MPI's default at
    every point with its predicted time (empty / None for other libraries) and penalty, the titles a report
    shows, the files written, the candidates the pricer refused to record and the sizes it priced by an
    approximate fold (one line each)."""

    collective: Any
    library: str
    model: str
    procs: list[int]
    sizes: list[int]
    result: Any
    default: list = field(default_factory=list)
    default_s: Any = None
    penalty: dict | None = None
    title: str = ""
    default_title: str = ""
    map_png: Any = None
    written: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    approximated: list[str] = field(default_factory=list)

    def document(self) -> dict:
        """The JSON document of ``commcost select --format json``: the rules and every point of the grid."""
        from commcost.report.selection_report import rule_rows

        chosen, result, default, default_s = self.result.chosen, self.result, self.default, self.default_s
        return {"collective": self.collective.value, "library": self.library, "model": self.model,
                "procs": self.procs, "sizes": self.sizes, "rules": rule_rows(result.selection),
                "grid": [{"nprocs": p, "nbytes": m, "algorithm": chosen[i][j].algorithm.key,
                          "params": dict(chosen[i][j].params),
                          "time_s": float(result.best_time_s[i, j]),
                          **({"ompi_default": default[i][j].label if default[i][j] else None,
                              "ompi_default_time_s": finite_or_none(default_s[i, j])} if default else {})}
                         for i, p in enumerate(self.procs) for j, m in enumerate(self.sizes)],
                **({"ompi_default_penalty": predicted_penalty(default_s, result)} if default else {})}


def select_grid(options: SelectOptions) -> SelectGrid:
    """Select the best algorithm of ``options.library`` for every (P, n) by ``options.model``, price Open MPI's
    default beside it, draw the map (``options.plot``) and write the rules files the options ask for; errors
    name the option or file."""
    from commcost.workflows.grid import parse_points
    from commcost.collectives import Collective
    from commcost.report.selection_map import plot_map
    from commcost.selection.select import candidates, select

    args = options  # the helpers below read the options by the command line's names
    collective = Collective(args.collective)
    if args.write_ompi_rules and args.library != "ompi":
        raise InputError("an Open MPI rules file needs Open MPI algorithms; expected --library ompi",
                         where="--write-ompi-rules")
    if args.write_mpich_json and args.library != "mpich":
        raise InputError("an MPICH selection file needs MPICH algorithms; expected --library mpich",
                         where="--write-mpich-json")
    procs = parse_points(args.procs, "--procs", 2)
    sizes = parse_points(args.sizes, "--sizes", 1, sizes=True)
    only = algorithm_names(args.algorithms, collective, args.library)
    choices = candidates(collective, args.library, variables(args), only or None)
    if not choices and not only:
        from commcost.collectives import algorithms

        modelled = sorted({a.collective.value for a in algorithms() if a.library == args.library})
        raise InputError(f"commcost models no {args.library} {collective.value} algorithm; it models {args.library}'s "
                         f"{', '.join(modelled) or 'none'}", where="--library")
    if not choices:
        raise InputError(f"no {args.library} {collective.value} algorithm matches {args.algorithms!r}",
                         where="--algorithms")
    notes: list[str] = []
    price = make_pricer(args, procs, notes, sizes)
    result = select(collective, args.library, choices, procs, sizes, price, source=f"model {args.model}")
    refused = [line for line in notes if not line.startswith(APPROXIMATE_NOTE)]
    if refused and not np.isfinite(result.time_s).any():
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise InputError(f"no candidate could be priced: {refused[0]}{more}; "
                         "expected fewer ranks or smaller sizes, or a larger --max-transmissions or --max-memory",
                         where="--procs")
    chosen = result.chosen
    default, default_s = ompi_default_times(args, collective, procs, sizes, price, result)
    # the default's notes too: it is priced here when no candidate's row holds it
    approximated = summarize_notes([line for line in notes if line.startswith(APPROXIMATE_NOTE)])
    refused = [line for line in notes if not line.startswith(APPROXIMATE_NOTE)]
    title = (f"{collective.value}: best {args.library} algorithm by {args.model} "
             f"({len(choices)} candidates, {len(procs)} process counts x {len(sizes)} sizes)")
    penalty = predicted_penalty(default_s, result) if default else None
    default_title = (f"Open MPI's default ({HAN_FIRST if han_default(collective) else ''}tuned's fixed decision "
                     "on one)")
    map_png = None
    if args.plot:
        map_png = plot_map(args.plot, procs, sizes, chosen, title, size_title=collective.size_meaning,
                           default=default or None, default_title=default_title)
    written = write_tuning_files(args, [result.selection])
    return SelectGrid(collective, args.library, args.model, procs, sizes, result, default, default_s, penalty,
                      title, default_title, map_png, written, refused, approximated)
