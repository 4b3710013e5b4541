"""commcost.arrays.unique_inverse gives what np.unique(values, return_inverse=True) gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from commcost.arrays import unique_inverse


@settings(max_examples=200, deadline=None, derandomize=True)
@given(arrays(np.int64, st.integers(0, 300), elements=st.integers(-2**62, 2**62))
       | arrays(np.int64, st.integers(0, 300), elements=st.integers(-60, 60))  # counted, a range from below 0
       | arrays(np.int32, st.integers(0, 300), elements=st.integers(10**6, 10**6 + 900))  # counted from far off 0
       | arrays(np.uint8, st.integers(0, 300))
       | arrays(np.float64, st.integers(0, 300), elements=st.floats(-1e300, 1e300)))
def test_unique_inverse_is_numpys(values):
    distinct, inverse = unique_inverse(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    assert np.array_equal(distinct, expected) and np.array_equal(inverse, expected_inverse.ravel())
    assert distinct.dtype == values.dtype
    assert np.array_equal(distinct[inverse], values)


def test_few_sizes_of_many_transmissions():
    values = np.tile(np.array([8192, 100, 8192, 4096], np.int64), 50_000)
    distinct, inverse = unique_inverse(values)
    assert distinct.tolist() == [100, 4096, 8192] and inverse[:4].tolist() == [2, 0, 2, 1]
