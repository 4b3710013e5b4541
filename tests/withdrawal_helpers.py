"""What tune's measured check took back, read from its report.json: for tests that compare what verify
measured under the files with what the files (rewritten after the withdrawal) say now."""

from __future__ import annotations

import re
from typing import Any, Mapping


def withdrawn_at(report: Mapping[str, Any], point: Mapping[str, Any]) -> str | None:
    """Why the files no longer say, at a point of the check, what verify measured there, or None where they
    still do: ``"slower"`` (the point measured slower: its rule went), ``"band"`` (a withdrawn rule's band
    covers it: a rule goes whole), ``"reset"`` (it ran han under a configuration the check reset to han's
    defaults for its collective: han's pick stays, without the configuration)."""
    if point["verdict"] == "slower":
        return "slower"
    mine = [gone for gone in report.get("withdrawn", []) if gone["collective"] == point["collective"]]
    for gone in mine:
        if "procs" in gone and gone["procs"][0] <= point["nprocs"] <= gone["procs"][1] \
                and gone["nbytes"][0] <= point["nbytes"] <= gone["nbytes"][1]:
            return "band"
    if any("han_config" in gone for gone in mine) and str(point["rules_run"]).startswith("han"):
        return "reset"
    return None


def without_configuration(label: str) -> str:
    """A label of what runs without han's configuration shown in it: ``han rule: han (segsize=16384)`` ->
    ``han rule: han``."""
    return re.sub(r" \([a-z_]+=[^)]*\)", "", label)


def check_two_node_point(report: Mapping[str, Any], point: Mapping[str, Any], now: Any,
                         tunables: Mapping[str, Any]) -> None:
    """On several nodes (han decides): what the rewritten files run at a point of the check (``now``,
    DeployedRules.runs) against what verify measured there. Nothing withdrawn: the same label; a reset han
    configuration: han's pick under han's defaults (``tunables``: the files' han settings, per collective);
    a withdrawn rule: han again."""
    why = withdrawn_at(report, point)
    if why == "reset":
        assert without_configuration(point["rules_run"]) == now.label and not tunables.get(point["collective"])
    elif why:
        assert now.choice is not None and now.choice.algorithm.key == "ompi.han", now.label
    else:
        assert point["rules_run"] == now.label
