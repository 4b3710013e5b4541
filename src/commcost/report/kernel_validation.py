"""Measured against predicted kernel costs: proportional error per configuration and paper 000 Table 2.

mu = max(r, e) / min(r, e) for a measured cost r and an estimate e (paper
000 section 5.5; 1 when they agree), per configuration and model; Table 2
gives its mean mu-bar by kernel, network and model. The plot shows measured
and predicted costs per configuration (paper 000 Fig. 12, 13).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from commcost.calibration.robust_fit import proportional_error
from commcost.report.palette import MARKERS, style
from commcost.units import format_seconds


@dataclass
class KernelRun:
    """One configuration: a kernel measured on a partition, and what each model predicts for it."""

    kernel: str
    network: str
    config: str
    nprocs: int
    n: int
    measured_s: float
    predicted_s: dict[str, float] = field(default_factory=dict)

    def mu(self) -> dict[str, float]:
        """Proportional error of each model's prediction."""
        return {m: float(proportional_error(np.array([self.measured_s]), np.array([e]))[0])
                for m, e in self.predicted_s.items()}

    def to_dict(self) -> dict[str, Any]:
        """Plain data, mu included."""
        return {"kernel": self.kernel, "network": self.network, "config": self.config, "nprocs": self.nprocs,
                "n": self.n, "measured_s": self.measured_s, "predicted_s": self.predicted_s, "mu": self.mu()}


def mean_mu(runs: list[KernelRun]) -> dict[tuple[str, str, str], float]:
    """Paper 000 Table 2: mean mu by (kernel, network, model) over the configurations."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for run in runs:
        for model, mu in run.mu().items():
            groups.setdefault((run.kernel, run.network, model), []).append(mu)
    return {key: float(np.mean(values)) for key, values in groups.items()}


def render_validation(runs: list[KernelRun], unit: str | None = None) -> str:
    """Per configuration: measured, predicted and mu per model, times in ``unit`` (None: each in its own); then
    the Table 2 of mean mu."""
    models = list(dict.fromkeys(m for run in runs for m in run.predicted_s))
    lines = [f"  {'kernel':<7} {'net':<4} {'config':<16} {'P':>3} {'measured':>10}"
             + "".join(f" {m:>16} {'mu':>6}" for m in models)]
    for run in runs:
        mu = run.mu()
        cells = "".join(f" {format_seconds(run.predicted_s[m], unit):>16} {mu[m]:>6.2f}" if m in mu else " " * 24
                        for m in models)
        lines.append(f"  {run.kernel:<7} {run.network:<4} {run.config:<16} {run.nprocs:>3} "
                     f"{format_seconds(run.measured_s, unit):>10}{cells}")
    lines += ["", "  mean proportional error (paper 000 Table 2 form):",
              f"  {'kernel':<7} {'network':<8}" + "".join(f" {m:>16}" for m in models)]
    table = mean_mu(runs)
    for kernel, network in dict.fromkeys((r.kernel, r.network) for r in runs):
        cells = "".join(f" {table[(kernel, network, m)]:>16.3f}" if (kernel, network, m) in table else " " * 17
                        for m in models)
        lines.append(f"  {kernel:<7} {network:<8}{cells}")
    return "\n".join(lines)


def plot_validation(runs: list[KernelRun], path: str | Path) -> None:
    """PNG: measured and predicted cost per configuration (log scale), like paper 000 Fig. 12."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(m for run in runs for m in run.predicted_s))
    x = np.arange(len(runs))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.0 + 0.9 * len(runs)), 4))
    ax.plot(x, [r.measured_s for r in runs], "ko-", label="measured", linewidth=2)
    for k, model in enumerate(models):
        look = style(k)
        ax.plot(x, [r.predicted_s.get(model, np.nan) for r in runs], marker=MARKERS[(k + 1) % len(MARKERS)],
                color=look.colour, markeredgecolor="black", linestyle="--", label=model)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r.config}\n{r.network}" for r in runs], fontsize=7, rotation=30)
    ax.set_yscale("log")
    ax.set_ylabel("communication cost (s)")
    kernels = ", ".join(dict.fromkeys(r.kernel for r in runs))
    ax.set_title(f"{kernels}: measured (Algorithm 1 timing) vs predicted")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
