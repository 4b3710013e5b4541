"""Functional performance models: a process's speed as a function of its task size (paper 000 section 2).

The FPM of p_i is a table of (task size, speed) points, "a table of real
values representing s_i in executing a particular kernel for different
task sizes" (paper 000 section 2; Lastovetsky and Reddy, ref. [17]); the
speed in between is interpolated linearly and held at the end values
beyond the table. A constant performance model is the one-point table.
Task sizes are counted in computational units (blocks of the partitioned
matrix) and speeds in units per second, so the time of p_i for n_i units is
t_i = n_i / s_i(n_i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commcost.errors import InputError


@dataclass(frozen=True, eq=False)
class SpeedFunction:
    """s(x): speed (units per second) at task size x (units), piecewise linear through a table."""

    sizes: np.ndarray
    speeds: np.ndarray

    def __post_init__(self) -> None:
        sizes = np.atleast_1d(np.asarray(self.sizes, dtype=np.float64))
        speeds = np.atleast_1d(np.asarray(self.speeds, dtype=np.float64))
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "speeds", speeds)
        if sizes.shape != speeds.shape or sizes.ndim != 1 or len(sizes) == 0:
            raise InputError("expected one speed per task size, at least one point")
        if np.any(~np.isfinite(speeds)) or np.any(speeds <= 0):
            raise InputError(f"speeds must be finite and > 0, got {speeds.tolist()}")
        if np.any(~np.isfinite(sizes)) or np.any(sizes < 0) or np.any(np.diff(sizes) <= 0):
            raise InputError(f"task sizes must be >= 0 and strictly increasing, got {sizes.tolist()}")

    @classmethod
    def constant(cls, speed: float) -> "SpeedFunction":
        """The constant performance model s(x) = speed (paper 000 section 2)."""
        return cls(np.array([0.0]), np.array([float(speed)]))

    @property
    def is_constant(self) -> bool:
        """True when the table has a single point (a constant performance model)."""
        return len(self.sizes) == 1

    def __call__(self, size: np.ndarray | float) -> np.ndarray:
        """s(x), linear between table points, the end values beyond them."""
        return np.interp(size, self.sizes, self.speeds)

    def time(self, size: np.ndarray | float) -> np.ndarray:
        """t(x) = x / s(x): seconds to compute x units."""
        return np.asarray(size, dtype=np.float64) / self(size)
