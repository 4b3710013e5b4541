"""Projecting a measured tau-Lop table onto the model's constraints.

Paper 000 section 3 asks of every channel table: o(m) and L(m, tau)
non-decreasing in m, and L(m, 1) <= L(m, tau) <= tau L(m, 1). Measured tables
break these through noise (the authors' published metropolis SHM table has
64 such cells). :func:`repair_channel` makes a table that holds them, in two
steps:

1. each column (o, and L at every tau) is replaced by its least-squares
   non-decreasing fit (isotonic regression, ``scipy.optimize.isotonic_regression``);
2. every L(m, tau) is clamped into [L(m, 1), tau L(m, 1)].

Step 2 keeps step 1's monotonicity: the bounds are non-decreasing in m and
the max/min of non-decreasing functions is non-decreasing. The result
satisfies every constraint; :class:`Repair` says how far each cell moved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from commcost.models.taulop.params import TauLopChannel


def nondecreasing(y: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The (weighted) least-squares non-decreasing fit of ``y`` (isotonic regression)."""
    y = np.asarray(y, dtype=np.float64)
    if len(y) < 2:
        return y.copy()
    return isotonic_regression(y, weights=weights, increasing=True).x


@dataclass(frozen=True)
class Repair:
    """A table before and after :func:`repair_channel`."""

    before: TauLopChannel
    after: TauLopChannel

    def cell_name(self, row: int, col: int) -> str:
        """The cell at (row, col) of the table's columns o, L(m, 1), ..., L(m, tau_max), as the model writes
        it."""
        m = self.before.m[row]
        return f"o(m={m:g})" if col == 0 else f"L(m={m:g}, tau={col})"

    def summary(self) -> dict:
        """How many cells moved, the largest move (cell, before, after, relative) and the median move."""
        old = np.column_stack([self.before.o_s, self.before.L_s])
        new = np.column_stack([self.after.o_s, self.after.L_s])
        names = [self.cell_name(row, col) for row in range(old.shape[0]) for col in range(old.shape[1])]
        return moves(old.ravel(), new.ravel(), names)


def moves(before: np.ndarray, after: np.ndarray, names: list[str]) -> dict:
    """How many cells moved from ``before`` to ``after``, the largest move relative to the value before (a
    zero cell that moved counts as 100%; its name, before, after) and the median relative move."""
    before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
    move = np.abs(after - before)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(before) > 0, move / np.abs(before), np.where(move > 0, 1.0, 0.0))
    changed = rel > 1e-12
    out: dict = {"cells": int(rel.size), "moved": int(changed.sum())}
    if changed.any():
        k = int(np.argmax(rel))
        out.update(largest={"cell": names[k], "before_s": float(before[k]), "after_s": float(after[k]),
                            "relative": float(rel[k])},
                   median_relative=float(np.median(rel[changed])))
    return out


def repair_channel(channel: TauLopChannel) -> Repair:
    """The table projected onto the constraints (module docstring), with the moves."""
    o = np.maximum(nondecreasing(channel.o_s), 0.0)
    L = np.column_stack([np.maximum(nondecreasing(channel.L_s[:, j]), 0.0) for j in range(channel.tau_max)])
    L1 = L[:, :1]
    L[:, 1:] = np.minimum(np.maximum(L[:, 1:], L1), L1 * np.arange(2, channel.tau_max + 1))
    after = TauLopChannel(channel.m, o, L, channel.beyond_m, channel.beyond_tau)
    return Repair(channel, after)
