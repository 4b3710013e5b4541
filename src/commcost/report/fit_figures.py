"""How well the fitted channels explain what was measured: a table of mu, and a residual plot.

mu = max(r, e) / min(r, e) for a measured time r and the model's e (paper
000 section 5.5; 1 when they agree). The plot shows, per channel, each
measured ping-pong time and the fitted Hockney law T(n) = alpha + beta n
(paper 000 eq. 1's one-transfer case), and below it their ratio
measured / fitted against the size, where a systematic bend (a protocol
switch the law does not have) shows at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from commcost.models.hockney import HockneyChannel
from commcost.report.palette import styles


@dataclass(frozen=True)
class ChannelResiduals:
    """One channel's measured ping-pong times beside its fitted law."""

    channel: str
    nbytes: np.ndarray
    measured_s: np.ndarray
    fitted_s: np.ndarray

    @property
    def mu(self) -> np.ndarray:
        """Proportional error per point (paper 000 section 5.5)."""
        return np.maximum(self.measured_s, self.fitted_s) / np.minimum(self.measured_s, self.fitted_s)


def hockney_residuals(columns: Mapping[str, np.ndarray], channels: Mapping[str, HockneyChannel]
                      ) -> list[ChannelResiduals]:
    """The ping-pong rows of measurement ``columns`` (as :func:`commcost.io.measurements.fit_times` gives
    them) against the fitted law of their channel (``HockneyParams.channels``); channels without one are left
    out."""
    benchmark = np.asarray(columns["benchmark"]).astype(str)
    channel = np.asarray(columns["channel"]).astype(str)
    collective = np.asarray(columns["collective"]).astype(str)
    tau = np.asarray(columns["tau"], dtype=np.float64)
    nbytes = np.asarray(columns["nbytes"], dtype=np.float64)
    time_s = np.asarray(columns["time_s_mean"], dtype=np.float64)
    out = []
    for name, law in sorted(channels.items()):
        rows = ((benchmark == "pingpong") & (channel == name) & (collective == "") & (np.isnan(tau) | (tau == 1))
                & np.isfinite(time_s) & (time_s > 0))
        if not rows.any():
            continue
        order = np.argsort(nbytes[rows], kind="stable")
        n = nbytes[rows][order]
        out.append(ChannelResiduals(name, n, time_s[rows][order], law.alpha_s + law.beta_s_per_byte * n))
    return out


def residual_figure(fits: list[ChannelResiduals]) -> Any:
    """A two-row matplotlib Figure: measured points and fitted law per channel (log-log), then the ratio
    measured / fitted per point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    look = styles([f.channel for f in fits])
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    for f in fits:
        s = look[f.channel]
        x = np.maximum(f.nbytes, 1)
        top.plot(x, f.measured_s * 1e6, linestyle="none", marker=s.marker, color=s.colour, markeredgecolor="black",
                 markeredgewidth=0.4, label=f"{f.channel} measured")
        top.plot(x, f.fitted_s * 1e6, color=s.colour, label=f"{f.channel} fitted (mu mean {np.mean(f.mu):.3f})")
        bottom.plot(x, f.measured_s / f.fitted_s, marker=s.marker, color=s.colour, markeredgecolor="black",
                    markeredgewidth=0.4, linewidth=0.8, label=f.channel)
    top.set_xscale("log", base=2)
    top.set_yscale("log")
    top.set_ylabel("ping-pong time, one way (us)")
    top.legend(fontsize=8)
    top.set_title("point-to-point fit: measured against Hockney T(n) = alpha + beta n")
    bottom.axhline(1.0, color="black", linewidth=0.8)
    bottom.set_xlabel("message size (bytes)")
    bottom.set_ylabel("measured / fitted")
    fig.tight_layout()
    return fig


QUALITY_HEADERS = ("model", "channel or algorithm", "points", "mu mean", "mu max", "note")


def quality_rows(quality: Mapping[str, Any]) -> list[list[Any]]:
    """Rows (model, channel or algorithm, points, mu mean, mu max, note) of a parameter file's
    ``meta.quality`` (:data:`QUALITY_HEADERS`)."""
    rows = []
    for model, per in sorted(quality.items()):
        if not isinstance(per, Mapping):
            continue
        if model == "algorithm_fit":
            for coll, fits in sorted(per.items()):
                for name, q in sorted(fits.items()):
                    raw = q.get("unscaled_mu_mean")
                    rows.append(["algorithm fit", f"{coll} {name}", q.get("points"), q.get("mu_mean"), q.get("mu_max"),
                                 "" if raw is None else f"unscaled model: mu mean {raw:.3f}"])
            continue
        for name, q in sorted(per.items()):
            if isinstance(q, Mapping) and "mu_mean" in q:
                pieces = len(q.get("segments", []))
                rows.append([model, name, q.get("points"), q.get("mu_mean"), q.get("mu_max"),
                             f"{pieces} segments by size" if pieces > 1 else ""])
    return rows
