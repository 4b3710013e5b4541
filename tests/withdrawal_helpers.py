"""What tune's measured check took back, read from its report.json: for tests that compare what verify
measured under the files with what the files (rewritten after the withdrawal) say now."""

from __future__ import annotations

from typing import Any, Mapping


def withdrawn_at(report: Mapping[str, Any], point: Mapping[str, Any]) -> bool:
    """Whether the files no longer say, at a point of the check, what verify measured there: the point was
    measured slower, a withdrawn rule's band covers it (a rule goes whole), or it ran han under a han
    configuration the check reset to han's defaults for its collective."""
    if point["verdict"] == "slower":
        return True
    for gone in report.get("withdrawn", []):
        if gone["collective"] != point["collective"]:
            continue
        if "han_config" in gone and str(point["rules_run"]).startswith("han"):
            return True
        if "procs" in gone and gone["procs"][0] <= point["nprocs"] <= gone["procs"][1] \
                and gone["nbytes"][0] <= point["nbytes"] <= gone["nbytes"][1]:
            return True
    return False


def han_reset(report: Mapping[str, Any], collective: str) -> bool:
    """Whether the check reset han's configuration for ``collective`` to han's defaults."""
    return any("han_config" in gone and gone["collective"] == collective for gone in report.get("withdrawn", []))
