"""models.group_max is np.maximum.at on zeros, compiled (the phase, rank and channel times of every price)."""

import numpy as np
import pytest

from commcost.models.group_max import group_max


@pytest.mark.parametrize("seed", range(5))
def test_group_max_equals_numpys_maximum_at(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 50))
    index = rng.integers(0, size, int(rng.integers(0, 2000)))
    values = rng.exponential(1e-5, len(index))
    expected = np.zeros(size)
    np.maximum.at(expected, index, values)
    assert np.array_equal(group_max(size, index, values), expected)


def test_empty_groups_stay_zero_and_nothing_given_is_all_zeros():
    assert group_max(3, np.array([2]), np.array([1.5])).tolist() == [0.0, 0.0, 1.5]
    assert group_max(2, np.array([], dtype=np.int64), np.array([])).tolist() == [0.0, 0.0]
