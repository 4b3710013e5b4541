"""From a measurements table to model parameters: group point-to-point rows by channel and fit.

The table comes as numpy columns (``commcost.io.measurements.measurement_columns``);
this module knows nothing of files. Rows taken:

* hockney: point-to-point rows (no collective) with a channel, at tau 1 or
  no tau; one Hockney fit per channel (Huber loss, paper 004 section 5.2),
  and in its report the eager/rendezvous segments where the data shows a
  break (:func:`commcost.calibration.fit_p2p.fit_hockney_segments`);
* loggp: the same rows; per channel what a ping-pong identifies of LogGP,
  G and 2o + L (:func:`commcost.calibration.fit_p2p.fit_loggp`);
* taulop: point-to-point rows with a channel and a tau (Ring_tau, paper 000
  section 5.2); one tau-Lop table per channel, the channel made of
  ``transfers[channel]`` transfers (default: 2 for ``shm``, 1 otherwise,
  paper 000 eq. 1 and 3).

Rows of the benchmarks in :data:`NOT_ONE_MESSAGE` are left out unless asked
for by name: their time is not one message's (a stream's inverse
throughput, messages crossing at once, commcost's NBFT, broadcast and
HighVolumePingPong experiments), so mixing them with ping-pong times
(osu_latency, IMB PingPong, commcost's pingpong) would bend the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from commcost.errors import InputError

FITTABLE = ("hockney", "loggp", "taulop")

_STREAM = "time per message of a stream of messages, not one message's latency"
_CROSSING = "messages in both directions at once, not one message's latency"
NOT_ONE_MESSAGE = {
    "osu_bw": _STREAM, "osu_bibw": _STREAM, "osu_mbw_mr": _STREAM,
    "imb_uniband": _STREAM, "imb_biband": _STREAM,
    "osu_multi_lat": "several pairs at once, not one pair's latency",
    "imb_pingping": _CROSSING, "imb_pingpingspecificsource": _CROSSING, "imb_pingpinganysource": _CROSSING,
    "imb_sendrecv": _CROSSING, "imb_exchange": _CROSSING,
    "nbft": "a root's non-blocking sends to several ranks at once (paper 004 NBFT)",
    "bcast_gather": "a broadcast followed by a gather, not one message",
    "hvpp": "many messages at once, received in order or reversed (paper 001 Algorithm 1)",
    "crossing": "several pairs at once across the network's links (paper 001 Fig. 6)",
    "reduction": "a local reduction (MPI_Reduce_local), no message",
    "collective": "a whole collective with a forced algorithm, not one message",
}


@dataclass(frozen=True)
class ChannelFit:
    """One channel's fitted parameters, as a parameter-file section body, and its fit report."""

    channel: str
    npoints: int
    params: dict[str, Any]
    report: dict[str, Any]
    benchmarks: dict[str, int] = field(default_factory=dict)  # rows fitted, per benchmark


def benchmark_rows(columns: dict[str, np.ndarray], benchmarks: Sequence[str] | None = None
                   ) -> tuple[np.ndarray, dict[str, int]]:
    """Which rows a fit may take, and the rows left out per benchmark.

    With ``benchmarks``, the rows of those benchmarks (each must have rows);
    without, every row but those of :data:`NOT_ONE_MESSAGE`.
    """
    names = np.asarray(columns["benchmark"]).astype(str)
    if benchmarks:
        missing = sorted(set(benchmarks) - set(names.tolist()))
        if missing:
            raise InputError(f"no rows of benchmark {missing[0]!r}; the file has "
                             f"{', '.join(sorted(set(names.tolist())))}", where="--benchmark")
        keep = np.isin(names, list(benchmarks))
    else:
        keep = ~np.isin(names, list(NOT_ONE_MESSAGE))
    left, counts = np.unique(names[~keep], return_counts=True)
    return keep, {str(n): int(c) for n, c in zip(left, counts)}


def default_transfers(channel: str) -> int:
    """Transfers a transmission through ``channel`` is made of: shm 2 (eq. 1), others 1 (eq. 3)."""
    return 2 if channel == "shm" else 1


def _complete_sizes(nbytes: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """Rows of the sizes measured at every tau = 1..max(tau), and the sizes left out."""
    want = set(range(1, int(tau.max()) + 1))
    dropped = [float(m) for m in np.unique(nbytes) if set(tau[nbytes == m].astype(int).tolist()) != want]
    return ~np.isin(nbytes, dropped), dropped


def fit_channels(columns: dict[str, np.ndarray], model: str, transfers: dict[str, int] | None = None,
                 benchmarks: Sequence[str] | None = None, *, complete_only: bool = False) -> list[ChannelFit]:
    """Fit ``model`` per channel from the point-to-point rows of ``columns`` (of ``benchmarks``, see
    :func:`benchmark_rows`).

    With ``complete_only``, tau-Lop leaves out the sizes not measured at
    every tau (a run stopped by its budget) instead of refusing the channel;
    the report lists them under ``sizes_dropped``.
    """
    from commcost.calibration.fit_p2p import fit_hockney, fit_hockney_segments, fit_loggp  # scipy: on use
    from commcost.calibration.fit_taulop import fit_taulop_channel

    if model not in FITTABLE:
        raise InputError(f"cannot fit {model!r} from measurements yet; expected one of {list(FITTABLE)}",
                         where="--model")
    collective = columns["collective"]
    channel = columns["channel"]
    tau = np.asarray(columns["tau"], dtype=np.float64)
    p2p = (collective == "") & (channel != "") & benchmark_rows(columns, benchmarks)[0]
    if model in ("hockney", "loggp"):
        p2p &= np.isnan(tau) | (tau == 1)
    else:
        p2p &= ~np.isnan(tau)
    if not p2p.any():
        need = "rows with a channel and a tau (Ring_tau)" if model == "taulop" else "point-to-point rows with a channel"
        no_channel = int(((collective == "") & (channel == "")).sum())
        hint = (f" ({no_channel} point-to-point rows have no channel: import them with --channel shm|net, or "
                "--nnodes/--ppn)" if no_channel else "")
        raise InputError(f"no measurements to fit {model} from; expected {need}{hint}")
    fits = []
    for name in sorted(set(channel[p2p].tolist())):
        rows = p2p & (channel == name)
        nbytes = np.asarray(columns["nbytes"], dtype=np.float64)[rows]
        time_s = np.asarray(columns["time_s_mean"], dtype=np.float64)[rows]
        try:
            if model == "hockney":
                fit = fit_hockney(nbytes, time_s)
                params, report = fit.to_dict(), fit.report()
                if np.unique(nbytes).size >= 6:  # room for two segments of 3 sizes
                    segments = fit_hockney_segments(nbytes, time_s)
                    report["segments"] = segments.report()
            elif model == "loggp":
                fit = fit_loggp(nbytes, time_s)
                params = {"two_o_plus_L_s": fit.two_o_plus_L_s, "G_s_per_byte": fit.G_s_per_byte}
                report = fit.report()
            else:
                k = (transfers or {}).get(name, default_transfers(name))
                taus, dropped = tau[rows], []
                if complete_only:
                    keep, dropped = _complete_sizes(nbytes, taus)
                    nbytes, taus, time_s = nbytes[keep], taus[keep], time_s[keep]
                fit = fit_taulop_channel(nbytes, taus.astype(np.int64), time_s, transfers=k)
                params, report = fit.channel.to_dict(), fit.report()
                if dropped:
                    report["sizes_dropped"] = dropped
        except InputError as exc:
            raise InputError(f"channel {name}: {exc.message}", where=exc.where) from None
        used, counts = np.unique(np.asarray(columns["benchmark"]).astype(str)[rows], return_counts=True)
        fits.append(ChannelFit(name, int(time_s.size), params, report,
                               {str(b): int(c) for b, c in zip(used, counts)}))
    return fits


def model_section(model: str, fits: Sequence[ChannelFit]) -> dict[str, Any]:
    """The parameter-file section of ``model`` from its channels' fits.

    tau-Lop's default rule past a table's last size, ``beyond_m = "chunks"``
    (paper 000 eq. 1-3: whole chunks of the last size), holds for a sum of
    tables only when they end at the same size; a channel's transmission sums
    its own table and another's (a node's shm leg of a tcp transfer). When
    the fitted tables end at different sizes (a calibration whose budget
    stopped one channel's largest sizes), the section says
    ``beyond_m = "slope"``, so what calibrate or fit writes is what predict reads.
    """
    section: dict[str, Any] = {f.channel: f.params for f in fits}
    if model == "taulop" and len({f.params["m"][-1] for f in fits}) > 1:
        section["beyond_m"] = "slope"
    return section


def fit_queue_search_channels(columns: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """Paper 001's queue-search gamma per channel from HighVolumePingPong rows (``hvpp``; tau = messages).

    Counts measured both in order and reversed are paired; a channel with
    fewer than three such counts is left out. Returns each channel's report.
    """
    from commcost.calibration.fit_queue_search import fit_queue_search

    out = {}
    rows = columns["benchmark"] == "hvpp"
    for name in sorted(set(columns["channel"][rows].tolist())):
        sel = rows & (columns["channel"] == name)
        times = {}
        for order, n, t in zip(columns["algorithm"][sel], columns["tau"][sel], columns["time_s_mean"][sel]):
            times.setdefault(int(n), {})[str(order)] = float(t)
        pairs = sorted(n for n, v in times.items() if {"in_order", "reversed"} <= set(v))
        if len(pairs) >= 3:
            fit = fit_queue_search(np.array(pairs), np.array([times[n]["in_order"] for n in pairs]),
                                   np.array([times[n]["reversed"] for n in pairs]))
            out[name] = fit.report()
    return out
