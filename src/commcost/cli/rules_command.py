"""``commcost rules show FILE`` and ``commcost rules diff A B``: collective rules files as tables a person reads.

``show`` prints every rule of a rules file, ``diff`` where two Open MPI
coll/tuned files choose differently, priced with ``--params``,
``--platform`` and ``--model`` (:mod:`commcost.workflows.rules`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commcost.cli.options import add_strict_option, add_unit_option
from commcost.cli.registry import OutputFormat, Parser, command
from commcost.workflows.options import from_namespace
from commcost.workflows.rules import RulesDiffOptions, diff_rules, show_rules


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
    listing = show_rules(args.file, args.kind)
    kind, rows = listing.kind, listing.rows
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(listing.document(), indent=2))
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


def _diff(args: argparse.Namespace) -> int:
    diff = diff_rules(from_namespace(RulesDiffOptions, args))
    rows = diff.differences
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(diff.document(), indent=2))
        return 0
    print(f"A = {args.a} ({diff.format_a}), B = {args.b} ({diff.format_b}): {len(rows)} ranges choose differently "
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
