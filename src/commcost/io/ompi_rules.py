"""Open MPI coll/tuned dynamic rules files written from Selections, and the lookup they encode.

Open MPI reads the file named by ``coll_tuned_dynamic_rules_filename`` when
``coll_tuned_use_dynamic_rules`` is 1. Two formats (docs/file-formats.md):

* classic text, ``rule-file-version-2``: read by every Open MPI 5.0.x
  (max requests, the fifth field, from 5.0.7 on). Rules are keyed on lower
  bounds: a communicator takes the last communicator-size block whose size
  is <= P (the first block when none is), a call the last message rule
  whose size is <= m; the first message rule of a block must be for 0 bytes.
  Algorithm 0 means "Open MPI's fixed decision".
* JSON (``rule_file_version`` 3): read by Open MPI 6.0 and main only; 5.0.x
  does not read it. Blocks and rules have inclusive min/max; the first one
  that matches wins; no match means the fixed decision.

Semantics from ompi/mca/coll/tuned/coll_tuned_dynamic_file.c,
coll_tuned_dynamic_rules.c and coll_tuned_decision_dynamic.c at v5.0.x
b962e8a65c (after v5.0.10) and main 8efebee745 (JSON reader).

What a written file decides: exactly the Selection's choice for every
(P, n) a rule of the Selection covers, and Open MPI's fixed decision
everywhere else (gaps between rules, sizes beyond the Selection). The
message size Open MPI looks up is the byte count of the call for bcast,
reduce and allreduce, and P times one rank's block for scatter, gather,
allgather and alltoall; for those a block of communicator sizes is written
once per size P.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from commcost.collectives import Collective
from commcost.collectives.ompi_han import is_han
from commcost.errors import InputError
from commcost.io.rule_bands import Band, Step, bands, scaled
from commcost.selection.decision import Choice, Selection

# COLLTYPE_T, ompi/mca/coll/base/coll_base_functions.h: the collective ids of the classic format
COLLECTIVE_NAMES = (
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier", "bcast",
    "exscan", "gather", "gatherv", "reduce", "reducescatter", "reducescatterblock", "scan", "scatter",
    "scatterv", "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
    "neighbor_alltoallw",
)
# coll_tuned_decision_dynamic.c: the message size is dtype size x count x P for these
BLOCK_COLLECTIVES = (Collective.SCATTER, Collective.GATHER, Collective.ALLGATHER, Collective.ALLTOALL)
# which tunables each <collective>_intra_do_this passes on from a rule (coll_tuned_<c>_decision.c, v5.0.x);
# any other tunable comes from an MCA parameter and cannot differ between rules
CARRIED: dict[tuple[Collective, int], dict[str, str]] = {
    (Collective.BCAST, 2): {"segsize": "segsize", "fanout": "faninout"},
    **{(Collective.BCAST, i): {"segsize": "segsize"} for i in (3, 4, 5, 6, 7, 8, 9)},
    (Collective.ALLREDUCE, 5): {"segsize": "segsize"},
    (Collective.ALLTOALL, 4): {"max_requests": "max_requests"},
    (Collective.REDUCE, 2): {"segsize": "segsize", "fanout": "faninout", "max_requests": "max_requests"},
    **{(Collective.REDUCE, i): {"segsize": "segsize", "max_requests": "max_requests"} for i in (3, 4, 5, 6)},
    (Collective.GATHER, 3): {"segsize": "segsize"},
}
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class OmpiRule:
    """One message-size rule: sizes ``[msg_lo, msg_hi]`` (None: unbounded) run algorithm ``alg``.

    ``alg`` 0 is Open MPI's fixed decision; ``max_requests`` None: the file
    leaves it to ``coll_tuned_alltoall_max_requests``.
    """

    msg_lo: int
    msg_hi: int | None
    alg: int
    faninout: int = 0
    segsize: int = 0
    max_requests: int | None = None
    line: int = 0


@dataclass(frozen=True)
class OmpiBlock:
    """The rules of communicator sizes ``[comm_lo, comm_hi]`` (None: unbounded)."""

    comm_lo: int
    comm_hi: int | None
    rules: tuple[OmpiRule, ...]
    line: int = 0


@dataclass(frozen=True)
class OmpiRules:
    """A rules file: the blocks of each collective (Open MPI's lowercase name), in file order.

    ``format`` is ``classic`` (lower-bound scan, Open MPI 5.0.x) or ``json``
    (first inclusive match, Open MPI >= 6.0); :meth:`decide` follows it.
    """

    format: str
    collectives: dict[str, tuple[OmpiBlock, ...]]
    version: int = 2

    def block_at(self, collective: str, nprocs: int) -> OmpiBlock | None:
        """The block of communicator sizes a communicator of ``nprocs`` ranks takes its rules from."""
        blocks = self.collectives.get(collective, ())
        if not blocks:
            return None
        if self.format == "classic":
            block = blocks[0]  # coll_tuned_dynamic_rules.c: the first block unless a later one is <= P
            for candidate in blocks:
                if candidate.comm_lo > nprocs:
                    break
                block = candidate
            return block
        return next((b for b in blocks if b.comm_lo <= nprocs and (b.comm_hi is None or nprocs <= b.comm_hi)), None)

    def decide(self, collective: str, nprocs: int, msg_bytes: int) -> OmpiRule | None:
        """The rule Open MPI applies to one call (``msg_bytes`` in Open MPI's own measure), or None
        where it uses its fixed decision (no rule, or a rule with algorithm 0)."""
        block = self.block_at(collective, nprocs)
        if block is None:
            return None
        if self.format == "classic":
            rule = None
            for candidate in block.rules:
                if candidate.msg_lo > msg_bytes:
                    break
                rule = candidate
        else:
            rule = next((r for r in block.rules if r.msg_lo <= msg_bytes and (r.msg_hi is None or msg_bytes <= r.msg_hi)),
                        None)
        return rule if rule is not None and rule.alg != 0 else None

    def decide_call(self, collective: Collective, nprocs: int, nbytes: int) -> OmpiRule | None:
        """:meth:`decide` for a call of ``nbytes`` as commcost counts it (one block for block collectives)."""
        factor = nprocs if collective in BLOCK_COLLECTIVES else 1
        return self.decide(collective.value, nprocs, nbytes * factor)


def rule_fields(choice: Choice, collective: Collective) -> tuple[int, int, int, int | None]:
    """``(algorithm id, faninout, segsize, max_requests)`` of a rule running ``choice``.

    A tunable the rules file cannot carry must keep its default (Open MPI
    takes it from an MCA parameter for every call); otherwise InputError.
    """
    algorithm = choice.algorithm
    if algorithm.library != "ompi" or algorithm.id is None:
        raise InputError(f"{algorithm.key} is not an Open MPI coll/tuned algorithm; "
                         "an Open MPI rules file can only name those", where=collective.value)
    values = algorithm.resolve_params(choice.params)
    carried = CARRIED.get((collective, algorithm.id), {})
    fields: dict[str, int] = {"faninout": 0, "segsize": 0}
    for param in algorithm.params:
        if param.name in carried:
            fields[carried[param.name]] = values[param.name]
        elif values[param.name] != param.default:
            raise InputError(f"{choice.label}: a rules file cannot set {param.name} (Open MPI takes it from an "
                             f"MCA parameter: {param.help})", where=collective.value)
    return algorithm.id, fields["faninout"], fields["segsize"], fields.get("max_requests")


def choice_of_rule(rule: OmpiRule, collective: Collective) -> Choice:
    """The algorithm and parameters a rule makes Open MPI run (the inverse of :func:`rule_fields`): the
    tunables the rule carries, where non-zero, and every other at its default."""
    from commcost.collectives import find

    algorithm = find(collective, str(rule.alg))
    fields = {"faninout": rule.faninout, "segsize": rule.segsize, "max_requests": rule.max_requests}
    carried = CARRIED.get((collective, rule.alg), {})
    given = {name: fields[field] for name, field in carried.items() if fields[field]}
    return Choice(algorithm, algorithm.resolve_params(given))


def _rule(step: Step, collective: Collective) -> OmpiRule:
    if step.choice is None or is_han(step.choice.algorithm):  # coll/han's calls: tuned's fixed decision where it is asked
        return OmpiRule(step.nbytes_lo, step.nbytes_hi, 0)
    alg, faninout, segsize, max_requests = rule_fields(step.choice, collective)
    return OmpiRule(step.nbytes_lo, step.nbytes_hi, alg, faninout, segsize, max_requests)


def _blocks(selection: Selection) -> tuple[OmpiBlock, ...]:
    """The Selection's bands as Open MPI blocks; bands of block collectives split into one block per P."""
    collective = selection.collective
    out: list[OmpiBlock] = []
    for band in bands(selection):
        if collective not in BLOCK_COLLECTIVES or band.empty:
            out.append(OmpiBlock(band.procs_lo, band.procs_hi, tuple(_rule(s, collective) for s in band.steps)))
            continue
        assert band.procs_hi is not None  # the unbounded band lies beyond every rule, so it is empty
        if band.procs_hi - band.procs_lo >= MAX_BLOCKS:
            raise InputError(f"{collective.value}: communicator sizes {band.procs_lo}..{band.procs_hi} would need "
                             f"one block per size (Open MPI keys {collective.value} on P x block); "
                             f"at most {MAX_BLOCKS}", where=selection.source or collective.value)
        for nprocs in range(band.procs_lo, band.procs_hi + 1):
            one = scaled(Band(nprocs, nprocs, band.steps), nprocs)
            out.append(OmpiBlock(nprocs, nprocs, tuple(_rule(s, collective) for s in one.steps)))
    return tuple(out)


def rules_from(selections: Iterable[Selection]) -> OmpiRules:
    """The rules a file written from ``selections`` holds (one Selection per collective)."""
    collectives: dict[str, tuple[OmpiBlock, ...]] = {}
    for selection in selections:
        name = selection.collective.value
        if name in collectives:
            raise InputError(f"two selections for {name}; a rules file holds one table per collective", where=name)
        collectives[name] = _blocks(selection)
    return OmpiRules("classic", collectives)


def _classic_text(rules: OmpiRules, sources: list[str], provenance: Iterable[str] = ()) -> str:
    lines = ["rule-file-version-2",  # must be the file's first bytes: Open MPI fscanf()s it before anything else
             "# Open MPI coll/tuned dynamic rules, written by commcost"]
    lines += [f"# {line}" for line in provenance]
    lines += [f"# from: {source}" for source in dict.fromkeys(sources) if source]
    lines += [f"{len(rules.collectives)}  # collectives"]
    for name, blocks in rules.collectives.items():
        lines += [f"{COLLECTIVE_NAMES.index(name)}  # collective id: {name}", f"{len(blocks)}  # communicator sizes"]
        for block in blocks:
            upto = "" if block.comm_hi is None else f" .. {block.comm_hi}"
            lines += [f"{block.comm_lo}  # communicator size {block.comm_lo}{upto}", f"{len(block.rules)}  # rules",
                      "# bytes alg faninout segsize [max_requests]"]
            for rule in block.rules:
                fields = [rule.msg_lo, rule.alg, rule.faninout, rule.segsize]
                fields += [] if rule.max_requests is None else [rule.max_requests]
                # one rule per line: version 2 reads a fifth number on the same line as max requests
                lines.append(" ".join(str(f) for f in fields))
    return "\n".join(lines) + "\n"


def as_json_rules(rules: OmpiRules) -> OmpiRules:
    """The same decisions in the JSON reader's terms: algorithm-0 rules and empty blocks left out
    (no match is the fixed decision there)."""
    collectives = {}
    for name, blocks in rules.collectives.items():
        kept = (OmpiBlock(b.comm_lo, b.comm_hi, tuple(r for r in b.rules if r.alg != 0)) for b in blocks)
        collectives[name] = tuple(b for b in kept if b.rules)
    return OmpiRules("json", collectives, 3)


def _json_text(rules: OmpiRules) -> str:
    collectives: dict[str, list[dict]] = {}
    for name, blocks in rules.collectives.items():
        entries = []
        for block in blocks:
            entry: dict = {"comm_size_min": block.comm_lo}
            if block.comm_hi is not None:
                entry["comm_size_max"] = block.comm_hi
            entry["rules"] = []
            for rule in block.rules:
                item: dict = {"msg_size_min": rule.msg_lo}
                if rule.msg_hi is not None:
                    item["msg_size_max"] = rule.msg_hi
                item.update(alg=rule.alg, faninout=rule.faninout, seg_size=rule.segsize)
                if rule.max_requests is not None:
                    item["reqs"] = rule.max_requests
                entry["rules"].append(item)
            entries.append(entry)
        collectives[name] = entries
    return json.dumps({"rule_file_version": 3, "module": "tuned", "collectives": collectives}, indent=2) + "\n"


def write_ompi_rules(selections: Iterable[Selection], path: str | Path, format: str = "classic",
                     provenance: Iterable[str] = ()) -> OmpiRules:
    """Write ``selections`` (Open MPI algorithms, one per collective) as a coll/tuned rules file.

    ``format``: ``classic`` (Open MPI 5.0.x and later) or ``json`` (Open
    MPI 6.0 and later only). ``provenance``: comment lines after the
    version line (classic only). Returns the rules written, for inspection.
    """
    selections = list(selections)
    if format not in ("classic", "json"):
        raise InputError(f"format must be 'classic' or 'json', got {format!r}", where="format")
    rules = rules_from(selections)
    if format == "json":
        rules = as_json_rules(rules)
        Path(path).write_text(_json_text(rules))
    else:
        Path(path).write_text(_classic_text(rules, [s.source for s in selections], provenance))
    return rules
