"""How well a collective fit holds: its figures over points (mu, median and 90th percentile |error|), and which
parameters the data identify only in combination."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def figures(ratio: np.ndarray) -> dict[str, float]:
    """A fit's figures over ``ratio`` (measured / model per point): how many points, the geometric-mean ratio
    mu, and the median and 90th percentile of |error| in percent."""
    lr = np.abs(np.log(ratio))
    return {"points": int(len(ratio)), "mu": float(np.exp(np.mean(np.log(ratio)))),
            "median_abs_pct": float(100 * np.expm1(np.median(lr))),
            "p90_abs_pct": float(100 * np.expm1(np.percentile(lr, 90)))}


CONFOUNDED = 0.02  # a direction of the relative Jacobian this much weaker than the strongest is not identified


def confounded(G: np.ndarray, modelled: np.ndarray, used: np.ndarray,
               names: Sequence[str]) -> list[str]:
    """Groups of parameters only whose combination the data identify (tau-Lop's o and L of one channel when
    every transmission pays o + k L alike): the right singular vectors of the relative Jacobian
    J_ik = (d T_i / d theta_k) / T_i, its columns scaled to unit length (collinear columns, whatever their
    units), with singular value under :data:`CONFOUNDED` times the largest, each named by its parameters of
    loading over 0.25 (two or more)."""
    cols = np.flatnonzero(used)
    if len(cols) < 2:
        return []
    J = G[:, cols] / np.maximum(modelled, 1e-300)[:, None]
    J = J / np.maximum(np.linalg.norm(J, axis=0), 1e-300)[None, :]  # unit columns: collinearity, not scale
    _, sv, vt = np.linalg.svd(J, full_matrices=False)
    out = []
    for value, vector in zip(sv, vt):
        members = cols[np.abs(vector) > 0.25]
        if value < CONFOUNDED * sv[0] and len(members) >= 2:
            out.append(f"{', '.join(names[j] for j in members)}: the data move them together; only a "
                       f"combination of them is identified")
    return out
