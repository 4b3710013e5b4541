"""MPICH collective selection JSON (``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``) written from Selections.

Semantics from MPICH v4.3.2 (33e14fe1c9), src/mpi/coll/src/csel.c and
csel_container.c: the keys of a JSON object are tried in order; the first
whose condition holds (``comm_size<=N``, ``avg_msg_size<=M``, ``...=any``,
which always holds and must come last) leads into its object, the others
are never looked at; an ``algorithm=MPIR_...`` key ends the search, and the
keys inside its object (``k=2``, ``tree_type=knomial_1``, ``chunk_size=8192``)
set that algorithm's parameters. ``avg_msg_size`` is dtype size x count for
bcast, reduce and allreduce and the send block for alltoall.

The file replaces MPICH's built-in selection for every collective, so
``base`` (a complete selection file, e.g. MPICH's own
maint/tuning/coll/mpir/generic.json) supplies the collectives the
Selections do not cover. What a written file decides: the Selection's
choice inside each of its rules; a communicator or message size in a gap
takes the next rule above it, and sizes beyond the largest take the
largest rule's choice (an ``any`` branch ends every level, so no search
comes back empty).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from commcost.collectives import Collective
from commcost.errors import InputError
from commcost.io.rule_bands import Band, Step, bands
from commcost.selection.decision import Choice, Selection
from commcost.io.text_lines import text_of

AVG_MSG_SIZE = (Collective.BCAST, Collective.REDUCE, Collective.ALLREDUCE, Collective.ALLTOALL)
TREE_TYPES = ("kary", "knomial_1", "knomial_2")  # MPIR_Tree_type_t order, get_tree_type_from_string
# commcost's MPICH tunables as the container keys of csel_container.c
KEYS = {"tree_kval": "k", "is_non_blocking": "is_non_blocking", "segsize": "chunk_size"}


def container(choice: Choice, collective: Collective) -> dict[str, dict]:
    """``{"algorithm=MPIR_<Coll>_intra_<name>": {"k=2": {}, ...}}`` for one choice."""
    algorithm = choice.algorithm
    if algorithm.library != "mpich":
        raise InputError(f"{algorithm.key} is not an MPICH algorithm; an MPICH selection file can only name those",
                         where=collective.value)
    params: dict[str, dict] = {}
    for name, value in sorted(algorithm.resolve_params(choice.params).items()):
        if name == "tree_type":
            params[f"tree_type={TREE_TYPES[value]}"] = {}
        elif name in KEYS:
            params[f"{KEYS[name]}={value}"] = {}
        else:
            raise InputError(f"{choice.label}: no MPICH selection key for {name}", where=collective.value)
    return {f"algorithm=MPIR_{collective.value.capitalize()}_intra_{algorithm.name}": params}


def _filled(steps: tuple[Step, ...]) -> list[tuple[int | None, Choice]]:
    """``(upper bound or None for any, choice)`` branches: gaps join the step above, the end the last choice."""
    decided = [s for s in steps if s.choice is not None]
    out: list[tuple[int | None, Choice]] = []
    for step in decided:
        if out and out[-1][1] == step.choice:
            out[-1] = (step.nbytes_hi, step.choice)
        else:
            out.append((step.nbytes_hi, step.choice))
    out[-1] = (None, out[-1][1])
    return out


def _tree(selection: Selection) -> dict:
    collective = selection.collective
    if collective not in AVG_MSG_SIZE:
        raise InputError(f"MPICH's avg_msg_size is not defined for {collective.value}; commcost writes "
                         f"{', '.join(c.value for c in AVG_MSG_SIZE)}", where=collective.value)
    kept: list[Band] = [b for b in bands(selection) if not b.empty]
    if not kept:
        raise InputError("the selection has no rules", where=collective.value)
    levels: list[tuple[int | None, dict]] = []
    for band in kept:
        sizes: dict = {}
        for upper, choice in _filled(band.steps):
            key = "avg_msg_size=any" if upper is None else f"avg_msg_size<={upper}"
            sizes[key] = container(choice, collective)
        if levels and levels[-1][1] == sizes:
            levels[-1] = (band.procs_hi, sizes)
        else:
            levels.append((band.procs_hi, sizes))
    levels[-1] = (None, levels[-1][1])
    by_size = {("comm_size=any" if upper is None else f"comm_size<={upper}"): sizes for upper, sizes in levels}
    return {"comm_type=intra": by_size}


def read_mpich_json(path: str | Path) -> dict:
    """A complete MPICH selection file (the base one merges into), as its JSON object; InputError naming the
    file (and line) where it cannot be read or is not a JSON object."""
    text = text_of(path, "base selection file")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"not JSON: {error.msg}", source=str(path), where=f"line {error.lineno}") from None
    if not isinstance(document, dict):
        raise InputError("expected a JSON object of collective=... keys", source=str(path))
    return document


def write_mpich_json(selections: Iterable[Selection], path: str | Path, base: str | Path | None = None) -> dict:
    """Write ``selections`` (MPICH algorithms, one per collective) as an MPICH selection file.

    ``base``: a complete MPICH selection file whose other collectives (and
    inter-communicator branches) are kept; without it the file holds only
    the given collectives. Returns the JSON document written.
    """
    document = read_mpich_json(base) if base is not None else {}
    for selection in selections:
        key = f"collective={selection.collective.value}"
        tree = _tree(selection)
        old = document.get(key, {})
        # keep the base's inter-communicator branches after ours; intra first, as MPICH tries keys in order
        document[key] = {**tree, **{k: v for k, v in old.items() if k != "comm_type=intra"}}
    Path(path).write_text(json.dumps(document, indent=2) + "\n")
    return document
