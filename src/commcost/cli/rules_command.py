"""``commcost rules show FILE`` and ``commcost rules diff A B``: collective rules files as tables a person reads.

``show`` prints every rule of an Open MPI coll/tuned file (classic or
JSON), a coll/han dynamic rules file or an MPICH selection file, ours or
written by hand (:mod:`commcost.io.rules_view`). ``diff`` compares two
Open MPI coll/tuned files at every communicator and message size where
either file starts a rule (and one byte below each start), prints where
they choose differently, and, given ``--params``, ``--platform`` and
``--model``, the predicted time of each choice and the penalty of the
slower one (a rule with algorithm 0, or no rule, is Open MPI's fixed
decision there).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import add_strict_option, add_unit_option
from commcost.workflows.pricing import load_mapping, model_from, strictness
from commcost.cli.registry import OutputFormat, Parser, command
from commcost.errors import InputError


def _configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=Parser)
    show = sub.add_parser("show", help="every rule of a rules file, as a table")
    show.add_argument("file", type=Path, help="Open MPI (classic or JSON), coll/han or MPICH rules file")
    show.add_argument("--kind", choices=["ompi", "han", "mpich"], help="the file's kind (default: from its content)")
    show.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])
    diff = sub.add_parser("diff", help="where two Open MPI coll/tuned rules files choose differently")
    diff.add_argument("a", type=Path, help="first Open MPI rules file (classic or JSON)")
    diff.add_argument("b", type=Path, help="second Open MPI rules file")
    diff.add_argument("--collective", help="only this collective (Open MPI's name: bcast, allreduce, ...)")
    diff.add_argument("--params", type=Path, help="model parameters: price both choices at every difference")
    diff.add_argument("--platform", type=Path, help="platform file (with --params)")
    diff.add_argument("--model", help="cost model (with --params)")
    diff.add_argument("--ppn", type=int, help="ranks per node, sequential placement (default: the platform's)")
    add_strict_option(diff)
    diff.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])
    add_unit_option(diff)


@command("rules", "show a collective rules file (Open MPI, han, MPICH) or diff two Open MPI ones", _configure)
def _rules(args: argparse.Namespace) -> int:
    return _show(args) if args.action == "show" else _diff(args)


def _show(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from commcost.io.rules_view import rows_of

    kind, rows = rows_of(args.file, args.kind)
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"file": str(args.file), "kind": kind, "rules": [asdict(r) for r in rows]}, indent=2))
        return 0
    print(f"{args.file}: {kind}, {len(rows)} rules")
    level = any(r.level for r in rows)
    head = ["collective", *(["level"] if level else []), "ranks", "message bytes", "algorithm", "parameters"]
    table = [[r.collective, *([r.level] if level else []), r.procs, r.nbytes, r.algorithm,
              ", ".join(f"{k}={v}" for k, v in r.params.items()) or "-"] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    for line in [head, *table]:
        print("  " + "  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())
    return 0


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


def _diff(args: argparse.Namespace) -> int:
    from commcost.io.ompi_rules_read import read_ompi_rules

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
    if args.format == OutputFormat.JSON.value:
        print(json.dumps({"a": str(args.a), "b": str(args.b), "differences": rows}, indent=2))
        return 0
    print(f"A = {args.a} ({rules_a.format}), B = {args.b} ({rules_b.format}): {len(rows)} ranges choose differently "
          "(message bytes in Open MPI's measure; times at each range's smallest size)")
    for r in rows:
        timing = ""
        if "a_s" in r:
            from commcost.units import format_seconds

            timing = (f"   A {format_seconds(r['a_s'], args.unit)}  B {format_seconds(r['b_s'], args.unit)}  "
                      f"({r['slower']} {r['penalty']:.2f}x)"
                      if r["a_s"] is not None and r["b_s"] is not None else "   (not modelled)")
        span = f"{r['msg_lo']}..{r['msg_hi']}" if r["msg_hi"] != r["msg_lo"] else str(r["msg_lo"])
        print(f"  {r['collective']:<10} P={r['procs']:<6} {span:>17} B   A: {r['a']:<30} B: {r['b']}{timing}")
    return 0


def _pricer(args: argparse.Namespace):
    """With --params: price(collective, P, msg, rule_a, rule_b) -> times and penalty; None without."""
    given = [args.params, args.platform, args.model]
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

    args.mapping = None  # the placement: --ppn, else the platform file's [mapping]
    if args.model not in MODELS:
        raise InputError(f"expected a model among {', '.join(sorted(MODELS))}, got {args.model!r}", where="--model")
    platform, spec = load_platform(args.platform)
    params = load_params(args.params, strict=strictness(args))
    model = model_from(params, args.model)

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
