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

Rows of benchmarks that are not one message at a time (:data:`NOT_P2P`:
NBFT, broadcast experiments, HighVolumePingPong) are never taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from commcost.errors import InputError

FITTABLE = ("hockney", "loggp", "taulop")
NOT_P2P = ("nbft", "bcast_gather", "hvpp")  # benchmarks whose rows are no single transmission


@dataclass(frozen=True)
class ChannelFit:
    """One channel's fitted parameters, as a parameter-file section body, and its fit report."""

    channel: str
    npoints: int
    params: dict[str, Any]
    report: dict[str, Any]


def default_transfers(channel: str) -> int:
    """Transfers a transmission through ``channel`` is made of: shm 2 (eq. 1), others 1 (eq. 3)."""
    return 2 if channel == "shm" else 1


def _complete_sizes(nbytes: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """Rows of the sizes measured at every tau = 1..max(tau), and the sizes left out."""
    want = set(range(1, int(tau.max()) + 1))
    dropped = [float(m) for m in np.unique(nbytes) if set(tau[nbytes == m].astype(int).tolist()) != want]
    return ~np.isin(nbytes, dropped), dropped


def fit_channels(columns: dict[str, np.ndarray], model: str,
                 transfers: dict[str, int] | None = None, *, complete_only: bool = False) -> list[ChannelFit]:
    """Fit ``model`` per channel from the point-to-point rows of ``columns``.

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
    p2p = (collective == "") & (channel != "") & ~np.isin(columns["benchmark"], NOT_P2P)
    if model in ("hockney", "loggp"):
        p2p &= np.isnan(tau) | (tau == 1)
    else:
        p2p &= ~np.isnan(tau)
    if not p2p.any():
        need = "rows with a channel and a tau (Ring_tau)" if model == "taulop" else "point-to-point rows with a channel"
        raise InputError(f"no measurements to fit {model} from; expected {need}")
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
        fits.append(ChannelFit(name, int(time_s.size), params, report))
    return fits


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
