"""From a measurements table to model parameters: group point-to-point rows by channel and fit.

The table comes as numpy columns (``commcost.io.measurements.measurement_columns``);
this module knows nothing of files. Rows taken:

* hockney: point-to-point rows (no collective) with a channel, at tau 1 or
  no tau; one Hockney fit per channel (Huber loss, paper 004 section 5.2);
* taulop: point-to-point rows with a channel and a tau (Ring_tau, paper 000
  section 5.2); one tau-Lop table per channel, the channel made of
  ``transfers[channel]`` transfers (default: 2 for ``shm``, 1 otherwise,
  paper 000 eq. 1 and 3).

Rows of the benchmarks in :data:`NOT_ONE_MESSAGE` are left out unless asked
for by name: their time is not one message's (a stream's inverse
throughput, or messages crossing at once), so mixing them with ping-pong
times (osu_latency, IMB PingPong, commcost's pingpong) would bend the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from commcost.errors import InputError

FITTABLE = ("hockney", "taulop")

_STREAM = "time per message of a stream of messages, not one message's latency"
_CROSSING = "messages in both directions at once, not one message's latency"
NOT_ONE_MESSAGE = {
    "osu_bw": _STREAM, "osu_bibw": _STREAM, "osu_mbw_mr": _STREAM,
    "imb_uniband": _STREAM, "imb_biband": _STREAM,
    "osu_multi_lat": "several pairs at once, not one pair's latency",
    "imb_pingping": _CROSSING, "imb_pingpingspecificsource": _CROSSING, "imb_pingpinganysource": _CROSSING,
    "imb_sendrecv": _CROSSING, "imb_exchange": _CROSSING,
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


def fit_channels(columns: dict[str, np.ndarray], model: str, transfers: dict[str, int] | None = None,
                 benchmarks: Sequence[str] | None = None) -> list[ChannelFit]:
    """Fit ``model`` per channel from the point-to-point rows of ``columns`` (of ``benchmarks``, see
    :func:`benchmark_rows`)."""
    from commcost.calibration.fit_p2p import fit_hockney  # scipy: loaded only when fitting
    from commcost.calibration.fit_taulop import fit_taulop_channel

    if model not in FITTABLE:
        raise InputError(f"cannot fit {model!r} from measurements yet; expected one of {list(FITTABLE)}",
                         where="--model")
    collective = columns["collective"]
    channel = columns["channel"]
    tau = np.asarray(columns["tau"], dtype=np.float64)
    p2p = (collective == "") & (channel != "") & benchmark_rows(columns, benchmarks)[0]
    if model == "hockney":
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
            else:
                k = (transfers or {}).get(name, default_transfers(name))
                fit = fit_taulop_channel(nbytes, tau[rows].astype(np.int64), time_s, transfers=k)
                params, report = fit.channel.to_dict(), fit.report()
        except InputError as exc:
            raise InputError(f"channel {name}: {exc.message}", where=exc.where) from None
        used, counts = np.unique(np.asarray(columns["benchmark"]).astype(str)[rows], return_counts=True)
        fits.append(ChannelFit(name, int(rows.sum()), params, report,
                               {str(b): int(c) for b, c in zip(used, counts)}))
    return fits
