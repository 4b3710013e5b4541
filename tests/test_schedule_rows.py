"""commcost.schedule.rows: dependency rows built in one compiled pass equal the rows by definition (each
waiter's waited transmissions, ascending, once each), relabelled or not, and a forward edge is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commcost.schedule.schedule import dependency_rows, relabel_dependencies


def _by_definition(n, waiter, waited):
    rows = [sorted({int(d) for w, d in zip(waiter, waited) if w == i}) for i in range(n)]
    return np.cumsum([0] + [len(r) for r in rows]), [d for r in rows for d in r]


@st.composite
def edges(draw):
    n = draw(st.integers(0, 40))
    pairs = draw(st.lists(st.tuples(st.integers(1, max(n - 1, 1)), st.integers(0, 10**6)), max_size=150)) \
        if n > 1 else []
    return n, np.array([w for w, _ in pairs], np.int64), np.array([d % w for w, d in pairs], np.int64)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(edges(), st.randoms(use_true_random=False))
def test_rows_are_each_waiters_waited_ascending_once(case, rng):
    n, waiter, waited = case
    ptr, idx = dependency_rows(n, waiter, waited)
    want_ptr, want_idx = _by_definition(n, waiter, waited)
    assert ptr.tolist() == list(want_ptr) and idx.tolist() == want_idx
    order = np.array(rng.sample(range(n), n), np.int64)
    new_of_old = np.empty(n, np.int64)
    new_of_old[order] = np.arange(n)
    forward = new_of_old[waited] >= new_of_old[waiter] if len(waiter) else np.zeros(0, bool)
    if forward.any():
        k = int(np.argmax(forward))
        with pytest.raises(ValueError, match=f"transmission {waiter[k]} waits for {waited[k]}, which does not"):
            relabel_dependencies(order, waiter, waited)
    else:
        ptr, idx = relabel_dependencies(order, waiter, waited)
        want_ptr, want_idx = _by_definition(n, new_of_old[waiter], new_of_old[waited])
        assert ptr.tolist() == list(want_ptr) and idx.tolist() == want_idx


@settings(max_examples=200, deadline=None, derandomize=True)
@given(edges())
def test_successors_are_the_rows_transposed(case):
    from commcost.models.dependency_timeline import successors

    n, waiter, waited = case
    ptr, idx = dependency_rows(n, waiter, waited)
    succ_ptr, succ_idx = successors(ptr, idx, n)
    want = [[i for i in range(n) if j in idx[ptr[i]:ptr[i + 1]].tolist()] for j in range(n)]
    assert succ_ptr.tolist() == list(np.cumsum([0] + [len(r) for r in want]))
    assert succ_idx.tolist() == [i for r in want for i in r]
