"""Integer shares that sum exactly: the largest-remainder rule, with every share at least one."""

from __future__ import annotations

import numpy as np

from commcost.errors import InputError


def apportion(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers proportional to ``weights``, each >= 1, summing exactly to ``total``.

    Each share starts at floor(total * w_i / sum w); the units still missing
    go to the largest remainders (ties to the lower index). Shares forced up
    to 1 are paid for by the largest shares.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if total < len(weights):
        raise InputError(f"cannot give {len(weights)} parts at least one of {total} units; "
                         f"expected at most {total} parts")
    exact = total * weights / weights.sum()
    shares = np.maximum(np.floor(exact + 1e-9).astype(np.int64), 1)
    remainder = exact - shares
    while shares.sum() < total:
        i = int(np.argmax(remainder))
        shares[i] += 1
        remainder[i] -= 1
    while shares.sum() > total:
        candidates = np.flatnonzero(shares > 1)
        i = int(candidates[np.argmin(remainder[candidates])])
        shares[i] -= 1
        remainder[i] += 1
    return shares
