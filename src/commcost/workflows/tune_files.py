"""The Open MPI files ``commcost tune`` deploys, and their rewrite once the measured check has run.

``write_ompi_files`` writes coll/tuned's rules (classic for 5.0.x, JSON for
6.0+), coll/han's rules and the ``mca-params.conf`` that turns both on and
sets han's configuration, each with the run's provenance.
``withdraw_after_check`` reads what ``commcost verify`` measured in this run
and, where a rule measured slower than Open MPI's default beyond noise,
takes the rule out and writes the files again
(:mod:`commcost.selection.withdraw`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def write_ompi_files(out: Path, selections: Sequence, han_configs: Sequence, provenance: Sequence[str]
                     ) -> tuple[list[Path], str]:
    """Write ompi-rules.conf, ompi-rules.json, han-rules.conf and mca-params.conf into ``out``; returns the
    paths written and the mca-params text."""
    from commcost.io.han_rules import mca_params_text, write_han_rules
    from commcost.io.ompi_rules import write_ompi_rules
    from commcost.selection.han_config import han_mca_settings

    written = []
    for fmt, name in (("classic", "ompi-rules.conf"), ("json", "ompi-rules.json")):
        write_ompi_rules(selections, out / name, fmt, provenance)
        written.append(out / name)
    write_han_rules(selections, out / "han-rules.conf", provenance)
    conf = mca_params_text(out / "ompi-rules.conf", out / "han-rules.conf", provenance,
                           han_mca_settings(han_configs))
    (out / "mca-params.conf").write_text(conf)
    return written + [out / "han-rules.conf", out / "mca-params.conf"], conf


def withdraw_after_check(args: Any, checked: bool) -> list[dict[str, Any]]:
    """After this run's measured check (``checked``: verify ran and wrote OUT/verify.json): withdraw the rules
    it measured slower than the default, rewrite the files, print what went; the list for report.json."""
    import json

    from commcost.selection.withdraw import withdraw_measured_slower

    path = args.out / "verify.json"
    deployed = getattr(args, "deployed", None)
    if not checked or deployed is None or not path.is_file():
        return []
    selections, han_configs, provenance = deployed
    points = json.loads(path.read_text()).get("points", [])
    kept, gone = withdraw_measured_slower(selections, points)
    configs, reset = reset_han_configs(han_configs, points)
    if not gone and not reset:
        return []
    note = f"{len(gone)} rules withdrawn after the measured check (slower than Open MPI's default)"
    if reset:
        note += f"; han's configuration back to its defaults for {', '.join(c.collective.value for c in reset)}"
    write_ompi_files(args.out, kept, configs, [*provenance, note])
    args.deployed = (kept, configs, provenance)
    rows = []
    for config in reset:
        print(f"\n  withdrawn: coll/han's configuration for {config.collective.value} "
              f"({', '.join(f'{k}={v}' for k, v in sorted(config.changed.items()))}): han under it measured slower "
              "than Open MPI's default; mca-params.conf keeps han's defaults")
        rows.append({"collective": config.collective.value, "han_config": config.changed})
    if gone:
        print(f"\n  withdrawn: {len(gone)} rule(s) the check measured slower than Open MPI's default; the files "
              "now keep the default there (rewritten):")
    for selection, rule, point in gone:
        span = f"P {rule.procs_lo}..{rule.procs_hi}, {rule.nbytes_lo}..{rule.nbytes_hi} B"
        gain = point.get("measured_gain")
        print(f"    {selection.collective.value:<10} {span:<36} {rule.choice.label:<36} measured "
              f"{'?' if gain is None else f'{gain:.2f}x'} at P={point['nprocs']}, {point['nbytes']} B")
        rows.append({"collective": selection.collective.value, "procs": [rule.procs_lo, rule.procs_hi],
                     "nbytes": [rule.nbytes_lo, rule.nbytes_hi], "algorithm": rule.choice.label,
                     "measured_at": {"nprocs": point["nprocs"], "nbytes": point["nbytes"]},
                     "measured_gain": gain, "predicted_gain": point.get("predicted_gain")})
    if hasattr(args, "warnings"):
        args.warnings.append(note)
    return rows


def reset_han_configs(configs: Sequence, points: Sequence[dict[str, Any]]) -> tuple[list, list]:
    """``configs`` with han's defaults back for every collective where the check measured han, run under the
    changed configuration, slower than the default (a han pick or a band left to han); and those reset."""
    from dataclasses import replace

    slower = {p["collective"] for p in points
              if p.get("verdict") == "slower" and str(p.get("rules_run", "")).startswith("han")}
    out, reset = [], []
    for config in configs:
        if config.changed and config.collective.value in slower:
            reset.append(config)
            config = replace(config, values=dict(config.defaults), geomean_s=config.default_geomean_s)
        out.append(config)
    return out, reset
