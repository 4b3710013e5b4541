"""The max-rate model's parameters (paper 001 Table 1's form) from a machine's own ping-pongs.

Per channel, the Hockney fit of its ping-pong rows with the protocol
breaks the data shows (:func:`commcost.calibration.fit_p2p.fit_hockney_segments`,
at most two segments) gives alpha and R_b = 1 / beta per protocol: one
segment, the same row for short, eager and rendezvous; two, the first for
short and eager (one break cannot tell them apart) and the second for
rendezvous, ``eager_max_bytes`` the last size of the first segment. A
channel within a node fills the intra-socket and intra-node rows (a
ping-pong between two ranks of one node measures wherever the launcher put
them), any other channel the inter-node rows. Not identified by one pair
of ranks at a time, and said so in the report: the node's injection rate
R_N (left unlimited) and the contention delta (paper 001's 1e-10 s/B). The
queue search gamma comes from HighVolumePingPong rows (``hvpp``) where
measured, else paper 001's 8.4e-9 s, also said.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from commcost.errors import InputError


def _rows(segments: list[dict[str, Any]]) -> tuple[dict[str, dict[str, float]], float | None]:
    def row(seg: dict[str, Any]) -> dict[str, float]:
        beta = max(float(seg["params"]["beta_s_per_byte"]), 1e-15)
        return {"alpha_s": float(seg["params"]["alpha_s"]), "rate_bytes_per_s": 1.0 / beta}
    if len(segments) == 1:
        return {p: row(segments[0]) for p in ("short", "eager", "rend")}, None
    first, last = segments[0], segments[-1]
    return {"short": row(first), "eager": row(first), "rend": row(last)}, float(first["nbytes_range"][1])


def maxrate_from_pingpongs(columns: dict[str, np.ndarray], intra: set[str],
                           benchmarks=None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``[maxrate]`` section and a report (per channel: rows, points, notes) from ping-pong rows;
    ``intra`` names the channels within a node."""
    from commcost.calibration.from_measurements import fit_channels, fit_queue_search_channels

    fits = fit_channels(columns, "hockney", None, benchmarks)
    section: dict[str, Any] = {}
    report: dict[str, Any] = {"channels": {}, "notes": []}
    eager_max: list[float] = []
    for fit in fits:
        one = {"nbytes_range": [0, 0], "params": fit.params}
        segments = fit.report.get("segments", {}).get("segments") or [one]
        rows, limit = _rows(segments)
        if limit is not None:
            eager_max.append(limit)
        where = ("intra_socket", "intra_node") if fit.channel in intra else ("inter_node",)
        for loc in where:
            if loc in section:
                raise InputError(f"channels {section[loc]['_from']!r} and {fit.channel!r} both give the {loc} rows; "
                                 f"expected one channel per locality")
            section[loc] = {**rows, "_from": fit.channel}
        report["channels"][fit.channel] = {"localities": list(where), "points": fit.npoints,
                                           "segments": len(segments), "rows": rows}
    missing = [loc for loc in ("intra_socket", "intra_node", "inter_node") if loc not in section]
    if missing:
        have = ", ".join(f.channel for f in fits) or "none"
        raise InputError(f"no ping-pong rows for the {' and '.join(missing)} rows (channels measured: {have}); "
                         f"expected a channel within a node and one between nodes")
    for loc in section:
        section[loc].pop("_from")
    if eager_max:
        section["eager_max_bytes"] = min(eager_max)
        section["short_max_bytes"] = min(500.0, min(eager_max))
        report["notes"].append("short and eager rows are the same: one protocol break found per channel")
    try:
        queue = fit_queue_search_channels(columns)
    except InputError:
        queue = {}
    gammas = [float(q["gamma_s"]) for q in queue.values() if isinstance(q, dict) and "gamma_s" in q]
    if gammas:
        section["queue_gamma_s"] = max(gammas)
        report["queue_gamma_from"] = "hvpp rows (the largest channel's gamma)"
    else:
        section["queue_gamma_s"] = 8.4e-9
        report["notes"].append("no HighVolumePingPong rows: queue_gamma_s is paper 001's 8.4e-9 s "
                               "(calibrate --benchmarks hvpp measures it)")
    section["contention_delta_s_per_byte"] = 1.0e-10
    report["notes"].append("node_rate_bytes_per_s (R_N) not identified by one pair at a time: left unlimited; "
                           "contention delta is paper 001's 1e-10 s/B")
    return section, report
