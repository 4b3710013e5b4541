"""Array helpers numpy lacks in the form the pricing needs.

:func:`unique_inverse` is ``np.unique(values, return_inverse=True)`` without
its sort of every value: numpy (2.3 on) finds the distinct values by hashing,
but asked for the inverse it sorts the whole array, which for the few sizes
of a million-transmission schedule was most of a floor's time (tau-Lop's
receivers' and domains' loads: 4.3 s of a 14.7 s select of 41 sizes on
1,024 ranks).
"""

from __future__ import annotations

import numpy as np


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct, inverse): the distinct values ascending and each value's index among them, as
    ``np.unique(values, return_inverse=True)`` gives for a one-dimensional array, found by hashing and a
    binary search per value (O(n log k) for k distinct) instead of a sort of all n; whole numbers in a range
    not much wider than their count (domain ids, channel and size pairs) by counting them, O(n)."""
    values = np.asarray(values).ravel()
    if values.dtype.kind in "iu" and len(values):
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * len(values) + 1024:  # ids in a small range (domains, pairs): counted, not hashed
            offset = values - low if low else values
            present = np.bincount(offset, minlength=high - low + 1) > 0
            rank = np.cumsum(present) - 1
            return (np.flatnonzero(present) + low).astype(values.dtype, copy=False), \
                rank[offset].astype(np.intp, copy=False)
    distinct = np.unique(values)
    return distinct, np.searchsorted(distinct, values).astype(np.intp, copy=False)
