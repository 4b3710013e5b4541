"""Rules a real run measured slower than the library's default, taken back out of a selection.

A rule is a prediction; ``commcost verify`` times the collective at a few
sizes per rule band with and without the files (Open MPI's default on one
side, the rules on the other). Where it measures the rules slower beyond
run-to-run noise (verdict ``slower``), the model was wrong there, and a file
that keeps the rule would make every job on the machine slower. So ``tune``
withdraws each rule that covers such a point: the whole rule (its band of
communicator sizes and message sizes, which shared the one pick the probe
measured) goes, and the library's own decision runs there again. Rules the
check did not reach stay as predicted; the report says which is which.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

from commcost.selection.decision import Rule, Selection


def withdraw_measured_slower(selections: Sequence[Selection], points: Iterable[Mapping[str, Any]]
                             ) -> tuple[list[Selection], list[tuple[Selection, Rule, Mapping[str, Any]]]]:
    """``selections`` without every rule that covers a point ``verify`` measured slower (its ``points`` of
    verify.json: ``collective``, ``nprocs``, ``nbytes``, ``verdict``), and what was withdrawn: (the
    selection it came from, the rule, the point that measured it)."""
    slower = [p for p in points if p.get("verdict") == "slower"]
    out: list[Selection] = []
    gone: list[tuple[Selection, Rule, Mapping[str, Any]]] = []
    for selection in selections:
        drop: dict[Rule, Mapping[str, Any]] = {}
        for point in slower:
            if point.get("collective") != selection.collective.value:
                continue
            for rule in selection.rules:
                if rule.covers(int(point["nprocs"]), int(point["nbytes"])) and rule not in drop:
                    drop[rule] = point
        out.append(replace(selection, rules=tuple(r for r in selection.rules if r not in drop)))
        gone += [(selection, rule, point) for rule, point in drop.items()]
    return out, gone
