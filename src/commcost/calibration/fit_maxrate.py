"""The max-rate model's parameters (paper 001 Table 1's form) from a machine's own ping-pongs.

Per channel, the Hockney fit of its ping-pong rows with the protocol
breaks the data shows (:func:`commcost.calibration.fit_p2p.fit_hockney_segments`,
at most two segments) gives alpha and R_b = 1 / beta per protocol: one
segment, the same row for short, eager and rendezvous; two, the first for
short and eager (one break cannot tell them apart) and the second for
rendezvous, ``eager_max_bytes`` the last size of the first segment. A
channel within a node fills the intra-socket and intra-node rows (a
ping-pong between two ranks of one node measures wherever the launcher put
them), any other channel the inter-node rows.

The node's injection rate R_N is not identified by one pair of ranks at a
time; Ring_tau rows of the inter-node channel (tau ranks sending at once,
ceil(tau / nodes) of them per node) identify it where it binds: R_N
minimizes sum (ln(T / y))^2 of eq. 2, T = alpha + a m / min(R_N, a R_b),
a the ranks sending per node (a bounded one-dimensional search on ln R_N),
and is kept when it lowers that loss by at least 5% against no limit (then
on every inter-node row: the node's link limits messages of every size).
The contention delta (eq. 5) comes from ``crossing`` rows (paper 001 Fig.
6: k pairs across the links between two halves of the nodes, at once) on a
platform with a ``[network]``: each row's k transmissions are placed as
the run placed them (its ranks per node, in order), priced by the max-rate
rows just fitted (no queue search, no contention) as T0, and l is the
busiest link's bytes routed over the platform's network; delta >= 0 fits
y = T0 + delta l (Huber on relative residuals) and is kept, with
``contention = "topology"``, when it lowers their loss by at least 5%.
Without such rows or such a platform, paper 001's 1e-10 s/B is written and
said (on a switch or one shared link contention cannot be told from R_N). The queue search gamma comes from
HighVolumePingPong rows (``hvpp``) where measured, else paper 001's 8.4e-9
s, also said.
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


def maxrate_from_pingpongs(columns: dict[str, np.ndarray], intra: set[str], benchmarks=None,
                           platform=None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``[maxrate]`` section and a report (per channel: rows, points, notes) from ping-pong rows;
    ``intra`` names the channels within a node; ``platform`` (with a ``[network]``) lets crossing rows
    fit delta."""
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
    if eager_max:
        section["eager_max_bytes"] = min(eager_max)
        section["short_max_bytes"] = min(500.0, min(eager_max))
        report["notes"].append("short and eager rows are the same: one protocol break found per channel")
    missing = [loc for loc in ("intra_socket", "intra_node", "inter_node") if loc not in section]
    if missing:
        have = ", ".join(f.channel for f in fits) or "none"
        raise InputError(f"no ping-pong rows for the {' and '.join(missing)} rows (channels measured: {have}); "
                         f"expected a channel within a node and one between nodes")
    inter = section["inter_node"].pop("_from")
    for loc in ("intra_socket", "intra_node"):
        section[loc].pop("_from")
    node_rate, why = fit_node_rate(columns, inter, section["inter_node"],
                                   section.get("short_max_bytes", 500.0), section.get("eager_max_bytes", 8192.0))
    if node_rate is not None:
        for row in section["inter_node"].values():
            row["node_rate_bytes_per_s"] = node_rate
        report["node_rate"] = why
    else:
        report["notes"].append(why)
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
    delta, why = fit_delta(columns, inter, section, platform)
    if delta is None:
        section["contention_delta_s_per_byte"] = 1.0e-10
        report["notes"].append(why)
    else:
        section["contention_delta_s_per_byte"] = delta
        section["contention"] = "topology"
        report["contention"] = why
    return section, report


def fit_delta(columns: dict[str, np.ndarray], channel: str, section: dict[str, Any],
              platform) -> tuple[float | None, str]:
    """delta from the crossing rows of ``channel`` (module docstring): (delta, how) or (None, why not)."""
    from scipy.optimize import least_squares

    from commcost.models.base import PlacedSchedule
    from commcost.models.maxrate import MaxRate, MaxRateParams
    from commcost.kernels.sparse import exchange_schedule
    from commcost.platform import Mapping

    default = "contention delta is paper 001's 1e-10 s/B"
    bench = np.asarray(columns["benchmark"]).astype(str)
    sel = np.flatnonzero((bench == "crossing") & (np.asarray(columns["channel"]).astype(str) == channel))
    if len(sel) == 0:
        return None, (f"{default}: no crossing rows of {channel} (calibrate --benchmarks crossing with the "
                      f"halves of the ranks on nodes joined through shared links)")
    if platform is None or platform.network is None:
        return None, (f"{default}: the crossing rows need a platform with a [network] to route their bytes "
                      f"(--platform)")
    params = MaxRateParams.from_dict({**section, "queue_search": "none", "contention": "none"})
    model = MaxRate(params)
    t0, load, y = [], [], []
    for i in sel:
        nprocs, pairs, m = int(columns["nprocs"][i]), int(columns["tau"][i]), float(columns["nbytes"][i])
        ppn = columns["ppn"][i]
        ppn = int(ppn) if np.isfinite(ppn) and ppn >= 1 else nprocs
        src = np.arange(pairs)
        dst = src + nprocs // 2
        schedule = exchange_schedule(nprocs, src, dst, np.full(pairs, m), "crossing")
        try:
            placed = PlacedSchedule.of(schedule, platform, Mapping.sequential(platform, nprocs, ppn))
        except InputError as exc:
            return None, f"{default}: a crossing row of {nprocs} ranks, {ppn} per node, does not fit the platform " \
                         f"({exc.message})"
        node = placed.mapping.node_of_rank
        t0.append(model.total_time_s(placed))
        load.append(float(platform.network.link_bytes(node[src], node[dst], schedule.nbytes).max(initial=0.0)))
        y.append(float(columns["time_s_mean"][i]))
    t0, load, y = np.array(t0), np.array(load), np.array(y)
    if not np.any(load > 0):
        return None, f"{default}: no crossing row sends over a link of the platform's network"

    def residual(v: np.ndarray) -> np.ndarray:
        return (t0 + v[0] * load - y) / y
    scale = float(np.median(np.maximum(y - t0, 1e-12 * y)[load > 0] / load[load > 0])) or 1e-10
    fit = least_squares(residual, [scale], bounds=([0.0], [np.inf]), loss="huber", f_scale=0.05, x_scale=[scale])
    before = float(np.sum(np.log(t0 / y) ** 2))
    after = float(np.sum(np.log((t0 + fit.x[0] * load) / y) ** 2))
    if after > (1 - MIN_GAIN) * before:
        return None, (f"{default}: the {len(sel)} crossing rows of {channel} show no link contention beyond the "
                      f"max-rate rows (delta lowers their loss by {100 * (1 - after / max(before, 1e-300)):.0f}%)")
    return float(fit.x[0]), (f"delta = {fit.x[0]:.4g} s/B from {len(sel)} crossing rows of {channel} routed over "
                             f"the platform's network (loss {before:.3g} -> {after:.3g}); contention = topology")


MIN_GAIN = 0.05  # R_N is kept when it lowers the ring rows' loss by at least this share


def fit_node_rate(columns: dict[str, np.ndarray], channel: str, rows: dict[str, dict[str, float]],
                  short_max: float, eager_max: float) -> tuple[float | None, str]:
    """R_N from the Ring_tau rows of ``channel`` (module docstring): (R_N, how) or (None, why not)."""
    from scipy.optimize import minimize_scalar

    bench = np.asarray(columns["benchmark"]).astype(str)
    tau = np.asarray(columns["tau"], dtype=np.float64)
    sel = (bench == "ring_tau") & (np.asarray(columns["channel"]).astype(str) == channel) & (tau >= 2)
    if not sel.any():
        return None, (f"node_rate_bytes_per_s (R_N) left unlimited: no Ring_tau rows of {channel} with tau >= 2 "
                      f"(calibrate --benchmarks ringtau measures them)")
    m = np.asarray(columns["nbytes"], dtype=np.float64)[sel]
    y = np.asarray(columns["time_s_mean"], dtype=np.float64)[sel]
    nodes = np.asarray(columns["nnodes"], dtype=np.float64)[sel]
    active = np.ceil(tau[sel] / np.where(np.isfinite(nodes) & (nodes >= 1), nodes, 1.0))
    protocol = np.where(m <= short_max, "short", np.where(m <= eager_max, "eager", "rend"))
    alpha = np.array([rows[p]["alpha_s"] for p in protocol])
    rate = np.array([rows[p]["rate_bytes_per_s"] for p in protocol])

    def loss(log_rn: float) -> float:
        t = alpha + active * m / np.minimum(np.exp(log_rn), active * rate)
        return float(np.sum(np.log(t / y) ** 2))
    unlimited = loss(np.log(1e300))
    lo, hi = np.log(rate.min() / 100), np.log(rate.max() * active.max() * 10)
    best = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    rn = float(np.exp(best.x))
    binds = bool(np.any(active * rate > rn))
    if not binds or best.fun > (1 - MIN_GAIN) * unlimited:
        return None, (f"node_rate_bytes_per_s (R_N) left unlimited: the {int(sel.sum())} Ring_tau rows of "
                      f"{channel} show no node limit (best R_N lowers their loss by "
                      f"{100 * (1 - best.fun / unlimited):.0f}%, under {100 * MIN_GAIN:.0f}%)")
    return rn, (f"R_N = {rn:.4g} B/s from {int(sel.sum())} Ring_tau rows of {channel} (loss "
                f"{unlimited:.3g} -> {best.fun:.3g})")
