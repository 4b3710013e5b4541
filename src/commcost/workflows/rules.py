"""Collective rules files read back for a person: every rule of one file, or where two Open MPI coll/tuned
files choose differently (``commcost rules show`` / ``commcost rules diff`` as functions).

``show_rules`` reads every rule of an Open MPI coll/tuned file (classic or
JSON), a coll/han dynamic rules file or an MPICH selection file, ours or
written by hand (:mod:`commcost.io.rules_view`). ``diff_rules`` compares two
Open MPI coll/tuned files at every communicator and message size where
either file starts a rule (and one byte below each start), keeps where they
choose differently, and, given ``params``, ``platform`` and ``model``, the
predicted time of each choice and the penalty of the slower one (a rule with
algorithm 0, or no rule, is Open MPI's fixed decision there).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from commcost.errors import InputError
from commcost.workflows.pricing import load_mapping, model_from, strictness


@dataclass
class RulesListing:
    """Every rule of one rules file: its kind (ompi, han, mpich) and the rows of :func:`commcost.io.rules_view.rows_of`."""

    file: Path
    kind: str
    rows: list = field(default_factory=list)

    def document(self) -> dict:
        """The JSON document of ``commcost rules show --format json``."""
        return {"file": str(self.file), "kind": self.kind, "rules": [asdict(r) for r in self.rows]}


def show_rules(file: Path, kind: str | None = None) -> RulesListing:
    """Read every rule of ``file`` (``kind``: the file's kind, default from its content)."""
    from commcost.io.rules_view import rows_of

    kind, rows = rows_of(file, kind)
    return RulesListing(file, kind, rows)


@dataclass
class RulesDiffOptions:
    """Two Open MPI rules files to compare, optionally one collective, and what prices both choices at every
    difference (``params``, ``platform`` and ``model`` together; ``ppn``: sequential placement, default the
    platform's). Field names are ``commcost rules diff``'s option names."""

    a: Path | None = None
    b: Path | None = None
    collective: str | None = None
    params: Path | None = None
    platform: Path | None = None
    model: str | None = None
    ppn: int | None = None
    strict: bool = False


@dataclass
class RulesDiff:
    """Where two rules files choose differently: one row per collective, P and run of message sizes choosing
    the same pair (``a``, ``b``: the choices' labels; ``a_s``, ``b_s``, ``slower``, ``penalty`` when priced)."""

    a: Path
    b: Path
    format_a: str
    format_b: str
    differences: list[dict[str, Any]] = field(default_factory=list)

    def document(self) -> dict:
        """The JSON document of ``commcost rules diff --format json``."""
        return {"a": str(self.a), "b": str(self.b), "differences": self.differences}


def _points(rules_a, rules_b, name: str) -> list[tuple[int, int]]:
    """(P, message bytes in Open MPI's measure) where either file starts a rule or a block, and just below."""
    procs, sizes = {1}, {0}
    for rules in (rules_a, rules_b):
        for block in rules.collectives.get(name, ()):
            procs.update({block.comm_lo, max(block.comm_lo - 1, 1)})
            if block.comm_hi is not None:
                procs.update({block.comm_hi, block.comm_hi + 1})
            for rule in block.rules:
                sizes.update({rule.msg_lo, max(rule.msg_lo - 1, 0)})
                if rule.msg_hi is not None:
                    sizes.update({rule.msg_hi, rule.msg_hi + 1})
    return [(p, m) for p in sorted(procs) if p >= 2 for m in sorted(sizes)]


def _label(rule, collective) -> str:
    from commcost.io.rules_view import rule_params, tuned_name

    if rule is None:
        return "fixed decision"
    extra = [f"{k}={v}" for k, v in rule_params(rule).items()]
    return tuned_name(collective, rule.alg) + (f" ({', '.join(extra)})" if extra else "")


def diff_rules(options: RulesDiffOptions) -> RulesDiff:
    """Compare ``options.a`` and ``options.b`` (:class:`RulesDiffOptions`); errors name the option or file."""
    from commcost.io.ompi_rules_read import read_ompi_rules

    args = options
    if args.ppn is not None and args.ppn < 1:
        raise InputError(f"expected --ppn >= 1, got {args.ppn}", where="--ppn")
    if args.collective is not None and not args.collective.strip():
        raise InputError("expected a collective's name (bcast, allreduce, ...), got an empty one", where="--collective")
    rules_a, rules_b = read_ompi_rules(args.a), read_ompi_rules(args.b)
    names = sorted(set(rules_a.collectives) | set(rules_b.collectives))
    if args.collective:
        if args.collective not in names:
            raise InputError(f"neither file has rules for {args.collective!r}; they have {', '.join(names) or 'none'}",
                             where="--collective")
        names = [args.collective]
    price = _pricer(args)
    rows: list[dict] = []
    for name in names:
        for nprocs, msg in _points(rules_a, rules_b, name):
            a, b = rules_a.decide(name, nprocs, msg), rules_b.decide(name, nprocs, msg)
            row = {"collective": name, "procs": nprocs, "msg_lo": msg, "msg_hi": msg, "a": _label(a, name),
                   "b": _label(b, name)}
            if row["a"] == row["b"]:  # the label names the algorithm and every tunable the rule sets
                continue
            last = rows[-1] if rows else None
            if last and all(last[k] == row[k] for k in ("collective", "procs", "a", "b")):
                last["msg_hi"] = msg  # one row per run of sizes choosing the same pair
                continue
            if price is not None:  # priced at the run's smallest size
                row.update(price(name, nprocs, msg, a, b))
            rows.append(row)
    return RulesDiff(args.a, args.b, rules_a.format, rules_b.format, rows)


def _pricer(options: RulesDiffOptions):
    """With params: price(collective, P, msg, rule_a, rule_b) -> times and penalty; None without."""
    from types import SimpleNamespace

    given = [options.params, options.platform, options.model]
    if not any(given):
        return None
    if not all(given):
        raise InputError("pricing a diff needs --params, --platform and --model together", where="--params")
    from commcost.workflows.select import finite_or_none
    from commcost.collectives import Collective
    from commcost.io.deployed_rules import fixed
    from commcost.io.ompi_rules import BLOCK_COLLECTIVES, choice_of_rule
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.models import MODELS
    from commcost.selection.grid import price_sizes

    # the placement: --ppn, else the platform file's [mapping]
    args = SimpleNamespace(platform=options.platform, ppn=options.ppn, mapping=None, strict=options.strict)
    if options.model not in MODELS:
        raise InputError(f"expected a model among {', '.join(sorted(MODELS))}, got {options.model!r}", where="--model")
    platform, spec = load_platform(options.platform)
    params = load_params(options.params, strict=strictness(args))
    model = model_from(params, options.model)

    def seconds(collective, rule, nprocs: int, nbytes: int):
        choice = choice_of_rule(rule, collective) if rule is not None else fixed(collective, nprocs, nbytes).choice
        if choice is None:
            return None
        mapping = load_mapping(args, platform, spec, nprocs)
        value = float(price_sizes(choice.algorithm, dict(choice.params), nprocs, [nbytes], platform, mapping,
                                  model)[0])
        return finite_or_none(value)

    def price(name: str, nprocs: int, msg: int, a, b) -> dict:
        try:
            collective = Collective(name)
        except ValueError:
            return {"a_s": None, "b_s": None}
        nbytes = msg // nprocs if collective in BLOCK_COLLECTIVES else msg
        if nbytes <= 0:
            return {"a_s": None, "b_s": None}
        a_s, b_s = seconds(collective, a, nprocs, nbytes), seconds(collective, b, nprocs, nbytes)
        out = {"a_s": a_s, "b_s": b_s}
        if a_s and b_s:
            out.update(slower="A" if a_s > b_s else "B", penalty=max(a_s, b_s) / min(a_s, b_s))
        return out
    return price
