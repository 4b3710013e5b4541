"""tau-Lop tables: the model's constraints, the rules beyond the table, the C++ table format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commcost.errors import InputError
from commcost.io.taulop_table import read_taulop_table, write_taulop_table
from commcost.models.taulop.params import TauLopChannel, TauLopParams

from taulop_fixtures import SIZES, linear_table

DATA = Path(__file__).parent / "data"


def test_concurrent_transfer_between_one_and_tau_transfers():
    table = linear_table(1e-6, 1e-9, 0.7, 1e-7)
    for tau in range(1, 20):
        L = table.L(SIZES, tau)
        assert np.all(L >= table.L(SIZES, 1) - 1e-18)
        assert np.all(L <= tau * table.L(SIZES, 1) + 1e-18)


@given(st.floats(0, 8e6), st.floats(0, 8e6), st.integers(1, 40))
def test_transfer_time_never_falls_when_message_grows(m1, m2, tau):
    table = linear_table(1e-6, 1e-9, 0.7, 1e-7)
    small, large = sorted((m1, m2))
    assert table.L(large, tau) >= table.L(small, tau)
    assert table.o(large) >= table.o(small)


def test_beyond_the_table_in_m_continues_the_last_segment_under_the_slope_rule():
    from dataclasses import replace

    table = replace(linear_table(1e-6, 1e-9, 0.5, 1e-7), beyond_m="slope")
    last, before = SIZES[-1], SIZES[-2]
    slope = (table.L(last, 2) - table.L(before, 2)) / (last - before)
    assert table.L(3 * last, 2) == pytest.approx(table.L(last, 2) + slope * 2 * last)


def test_below_the_table_in_m_is_flat():
    m = np.array([1024.0, 2048.0])
    table = TauLopChannel(m, [1e-6, 1e-6], [[1e-6], [2e-6]])
    assert table.L(0, 1) == pytest.approx(1e-6)


def test_beyond_the_table_in_tau_the_channel_is_saturated():
    table = linear_table(1e-6, 1e-9, 0.5, 1e-7, tau_max=4)
    assert np.allclose(table.L(SIZES, 12), table.L(SIZES, 4) * 3)


def test_loading_rejects_concurrent_cost_above_tau_times_single():
    L = np.array([[1e-6, 2.5e-6]])
    with pytest.raises(InputError, match=r"row 0.*exceeds 2 \* L\(m, 1\)"):
        TauLopChannel([0.0], [1e-7], L).check()


def test_loading_rejects_concurrent_cost_below_single():
    with pytest.raises(InputError, match="below L"):
        TauLopChannel([0.0], [1e-7], [[1e-6, 0.9e-6]]).check()


def test_loading_rejects_cost_that_falls_with_size():
    with pytest.raises(InputError, match=r"row 1.*non-decreasing in m"):
        TauLopChannel([0.0, 10.0], [1e-7, 1e-7], [[2e-6], [1e-6]]).check()


def test_cpp_table_round_trip(tmp_path):
    table = linear_table(1e-6, 1e-9, 0.5, 1e-7, tau_max=5)
    path = tmp_path / "ib.tsv"
    write_taulop_table(table, path)
    again = read_taulop_table(path)
    assert np.array_equal(again.m, table.m)
    assert np.array_equal(again.o_s, table.o_s)
    assert np.array_equal(again.L_s, table.L_s)


def test_cpp_table_error_names_file_and_line_of_offending_row():
    with pytest.raises(InputError) as info:
        read_taulop_table(DATA / "taulop_bad_row.tsv")
    message = str(info.value)
    assert "taulop_bad_row.tsv:line 6:" in message and "L(m=1024, tau=2)" in message


def test_cpp_table_error_names_wrong_column_count():
    with pytest.raises(InputError, match=r"line 5: expected 4 columns"):
        read_taulop_table(DATA / "taulop_short_row.tsv")


def test_cpp_table_error_names_bad_header():
    with pytest.raises(InputError, match=r"line 2: expected '#tau <count>'"):
        read_taulop_table(DATA / "taulop_bad_header.tsv")


def test_params_name_the_missing_table():
    params = TauLopParams({"shm": linear_table(1e-6, 1e-9, 0.5, 1e-7)})
    with pytest.raises(InputError, match="no table 'tcp'"):
        params.law("tcp", ("shm", "ib", "shm"))


def test_tcp_channel_costs_shm_plus_net_plus_shm():
    """Paper 000 eq. 2: T^1(m) = o^1(m) + 2 L^0(m, 1) + L^1(m, 1), and under ||, every transfer at tau."""
    shm = linear_table(2e-7, 2e-10, 0.5, 3e-7)
    tcp = linear_table(2e-5, 1e-8, 0.9, 5e-6)
    law = TauLopParams({"shm": shm, "tcp": tcp}).law("tcp", ("shm", "tcp", "shm"))
    for m in (0.0, 100.0, 5000.0, 3e6):
        for tau in (1, 3, 9):
            assert law.time(m, tau) == pytest.approx(tcp.o(m) + 2 * shm.L(m, tau) + tcp.L(m, tau))


@settings(max_examples=50)
@given(st.lists(st.floats(0, 5e6), min_size=1, max_size=30), st.lists(st.integers(1, 40), min_size=1, max_size=30))
def test_vectorized_law_equals_scalar_law(sizes, taus):
    law = TauLopParams({"a": linear_table(1e-6, 1e-9, 0.5, 1e-7, tau_max=4),
                        "b": linear_table(2e-6, 2e-9, 0.8, 1e-7, tau_max=7)}).law("a", ("a", "b"))
    n = min(len(sizes), len(taus))
    many = law.times(np.array(sizes[:n]), np.array(taus[:n]))
    assert np.allclose(many, [law.time(m, t) for m, t in zip(sizes[:n], taus[:n])], rtol=1e-12)
