"""Fits recover known parameters from synthetic measurements (issue 4 item 4, point-to-point and tau-Lop).

Synthetic data: every measurement is the model's time times (1 + 0.1 N(0, 1))
(10 % multiplicative noise), and 5 % of them, drawn at random, are further
multiplied by U(3, 10) (outliers, e.g. a descheduled repetition). Seeds are fixed.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.calibration import (
    fit_hockney, fit_hockney_segments, fit_loggp, fit_taulop_channel, proportional_error,
)
from commcost.errors import InputError
from commcost.models.hockney import HockneyParams
from commcost.models.loggp import LogGPParams
from commcost.models.taulop.params import TauLopChannel

SIZES = 2.0 ** np.arange(0, 23)  # 1 B .. 4 MiB
ALPHA, BETA = 2e-6, 1e-10       # crossover alpha = beta m at 20 KB


def noisy(rng, truth, noise=0.1, outliers=0.05):
    t = truth * (1.0 + noise * rng.standard_normal(truth.size))
    if outliers:
        hit = rng.random(truth.size) < outliers
        t[hit] *= rng.uniform(3.0, 10.0, int(hit.sum()))
    return t


def pingpong(seed, law, reps=10, **kw):
    rng = np.random.default_rng(seed)
    m = np.repeat(SIZES, reps)
    return m, noisy(rng, law(m), **kw)


def hockney_law(m):
    return ALPHA + BETA * m


def eager_rendezvous(m):
    """Eager up to 64 KiB; rendezvous above adds a handshake (larger alpha) and copies faster."""
    return np.where(m <= 65536, 2e-6 + 2e-10 * m, 20e-6 + 1e-10 * m)


def rel(a, b):
    return abs(a / b - 1.0)


# --- Hockney -----------------------------------------------------------------


def test_huber_hockney_recovers_alpha_beta_within_5_percent_and_its_ci_holds_the_truth():
    m, t = pingpong(0, hockney_law)
    fit = fit_hockney(m, t)
    assert rel(fit.alpha_s, ALPHA) < 0.05 and rel(fit.beta_s_per_byte, BETA) < 0.05
    assert fit.alpha_ci95[0] <= ALPHA <= fit.alpha_ci95[1]
    assert fit.beta_ci95[0] <= BETA <= fit.beta_ci95[1]
    # the intervals are informative, not the whole half-line
    assert fit.alpha_ci95[1] - fit.alpha_ci95[0] < 0.2 * ALPHA
    assert fit.beta_ci95[1] - fit.beta_ci95[0] < 0.2 * BETA
    # f_scale is 1.345 robust sigma of the log residuals: about 0.1345 for 10 % noise
    assert 0.1 < fit.law.f_scale < 0.2
    assert np.allclose(fit.residuals_s, t - (fit.alpha_s + fit.beta_s_per_byte * m))
    assert HockneyParams.from_dict({"shm": fit.to_dict()}).channels["shm"] == fit.channel()


def test_plain_least_squares_does_worse_with_outliers():
    """Squared loss lets the x3..x10 outliers pull both parameters up (here by more than 5 %)."""
    m, t = pingpong(0, hockney_law)
    huber = fit_hockney(m, t, loss="huber")
    plain = fit_hockney(m, t, loss="linear")
    err_h = max(rel(huber.alpha_s, ALPHA), rel(huber.beta_s_per_byte, BETA))
    err_p = max(rel(plain.alpha_s, ALPHA), rel(plain.beta_s_per_byte, BETA))
    assert err_p > err_h and err_p > 0.05
    # without outliers the two agree closely
    m, t = pingpong(0, hockney_law, outliers=0.0)
    a, b = fit_hockney(m, t, loss="huber"), fit_hockney(m, t, loss="linear")
    assert rel(a.alpha_s, b.alpha_s) < 0.03 and rel(a.beta_s_per_byte, b.beta_s_per_byte) < 0.03


def test_proportional_error_is_at_least_one_and_exactly_one_on_exact_data():
    m = np.repeat(SIZES, 2)
    exact = fit_hockney(m, hockney_law(m))
    assert rel(exact.alpha_s, ALPHA) < 1e-6 and rel(exact.beta_s_per_byte, BETA) < 1e-6
    assert np.allclose(exact.mu, 1.0, rtol=1e-9, atol=0) and exact.mu_max == pytest.approx(1.0, abs=1e-9)
    m, t = pingpong(1, hockney_law)
    fit = fit_hockney(m, t)
    assert np.all(fit.mu >= 1.0) and fit.mu_mean >= 1.0 and fit.mu_max >= fit.mu_mean
    assert fit.mu_max > 3.0  # the outliers show
    assert np.array_equal(proportional_error([2.0, 1.0, 3.0], [1.0, 2.0, 3.0]), [2.0, 2.0, 1.0])


def test_eager_rendezvous_break_is_found_at_the_right_size():
    m, t = pingpong(2, eager_rendezvous)
    seg = fit_hockney_segments(m, t, max_segments=3)
    assert seg.breaks == ((65536.0, 131072.0),)
    eager, rendezvous = seg.segments
    assert (eager.nbytes_lo, eager.nbytes_hi) == (1.0, 65536.0)
    assert (rendezvous.nbytes_lo, rendezvous.nbytes_hi) == (131072.0, 4194304.0)
    assert rel(eager.fit.alpha_s, 2e-6) < 0.05 and rel(eager.fit.beta_s_per_byte, 2e-10) < 0.05
    assert rel(rendezvous.fit.alpha_s, 20e-6) < 0.1 and rel(rendezvous.fit.beta_s_per_byte, 1e-10) < 0.05
    assert seg.bic[1] < seg.bic[0]
    one = fit_hockney(m, t)
    assert np.median(seg.mu) < np.median(one.mu)


@pytest.mark.parametrize("seed", [0, 3])
def test_no_break_is_invented_on_one_segment_data(seed):
    m, t = pingpong(seed, hockney_law)
    seg = fit_hockney_segments(m, t, max_segments=3)
    assert len(seg.segments) == 1 and seg.breaks == ()
    assert seg.segments[0].fit.alpha_s == fit_hockney(m, t).alpha_s
    m = np.repeat(SIZES, 2)
    assert len(fit_hockney_segments(m, hockney_law(m)).segments) == 1  # exact data: no split either


# --- LogGP -------------------------------------------------------------------

L_TRUE, O_TRUE, G_TRUE, GAP_TRUE = 3e-6, 1e-6, 1e-10, 1.5e-6


def loggp_law(m):
    return 2 * O_TRUE + L_TRUE + np.maximum(m - 1, 0) * G_TRUE


def test_loggp_identifies_G_and_2o_plus_L_only_from_pingpong():
    m, t = pingpong(4, loggp_law)
    fit = fit_loggp(m, t)
    assert rel(fit.G_s_per_byte, G_TRUE) < 0.05
    assert rel(fit.two_o_plus_L_s, 2 * O_TRUE + L_TRUE) < 0.05
    assert fit.G_ci95[0] <= G_TRUE <= fit.G_ci95[1]
    assert fit.o_s is None and fit.L_s is None and fit.g_s is None
    assert fit.unidentified() == ["L_s", "o_s", "g_s"]
    with pytest.raises(InputError, match="do not identify L_s, o_s, g_s"):
        fit.to_params()


def test_loggp_takes_o_from_a_measured_overhead_and_g_from_a_measured_gap():
    m, t = pingpong(5, loggp_law)
    rng = np.random.default_rng(6)
    overhead = noisy(rng, np.full(200, O_TRUE))
    gap = noisy(rng, np.full(200, GAP_TRUE))
    fit = fit_loggp(m, t, overhead_s=overhead, gap_s=gap)
    assert rel(fit.o_s, O_TRUE) < 0.05 and rel(fit.g_s, GAP_TRUE) < 0.05
    assert rel(fit.L_s, L_TRUE) < 0.05 and rel(fit.G_s_per_byte, G_TRUE) < 0.05
    assert fit.o_ci95[0] <= O_TRUE <= fit.o_ci95[1]
    lo, hi = fit.L_ci95
    assert lo <= L_TRUE <= hi
    params = fit.to_params()
    assert isinstance(params, LogGPParams) and params.to_dict() == fit.params_dict()
    assert fit.report()["unidentified"] == []


def test_loggp_flags_an_overhead_larger_than_the_message_time():
    m, t = pingpong(7, loggp_law, outliers=0.0)
    fit = fit_loggp(m, t, overhead_s=5e-6)
    assert fit.L_s == 0.0 and fit.L_clipped and "warning" in fit.report()


# --- tau-Lop tables --------------------------------------------------------------

TL_SIZES = 4.0 ** np.arange(0, 12)  # 1 B .. 4 MiB
TL_TAUS = np.arange(1, 5)


def o_true(m):
    return 1e-7 + 2e-12 * m


def L_true(m, tau):
    """L(m,1) affine in m; concurrency costs nothing for small messages and tends to tau L(m,1) for large."""
    share = m / (m + 65536.0)
    return (3e-7 + 1e-10 * m) * (1.0 + (tau - 1) * share)


def ring_tau(seed, reps=200, transfers=2):
    rng = np.random.default_rng(seed)
    M, TAU = np.meshgrid(TL_SIZES, TL_TAUS, indexing="ij")
    m, tau = np.repeat(M.ravel(), reps), np.repeat(TAU.ravel(), reps)
    t = noisy(rng, o_true(m) + transfers * L_true(m, tau))
    om = np.repeat(TL_SIZES, reps)
    return m, tau, t, om, noisy(rng, o_true(om))


def test_taulop_table_recovers_L_within_5_percent_and_passes_the_constraints():
    m, tau, t, om, ot = ring_tau(8)
    fit = fit_taulop_channel(m, tau, t, transfers=2, overhead_s=ot, overhead_nbytes=om)
    truth = L_true(TL_SIZES[:, None], TL_TAUS[None, :])
    assert fit.channel.violations() == []
    assert TauLopChannel.from_dict(fit.channel.to_dict()).violations() == []
    assert np.max(np.abs(fit.L_s / truth - 1)) < 0.05
    assert np.max(np.abs(fit.o_s / o_true(TL_SIZES) - 1)) < 0.05
    assert fit.overhead_source == "measured"
    # the projection is reported and only nudges the values (noise-sized moves)
    assert fit.moved_s.shape == truth.shape and np.nanmax(np.abs(fit.moved_rel)) < 0.05
    assert fit.report()["projection"]["L_cells_moved"] == np.count_nonzero(fit.moved_s)
    assert np.all(fit.mu >= 1.0)
    assert np.median(fit.mu) < 1.1


def test_taulop_projection_repairs_a_table_that_breaks_the_constraints():
    m, tau, t, om, ot = ring_tau(9, reps=3)  # few repetitions: raw cells violate the constraints
    fit = fit_taulop_channel(m, tau, t, transfers=2, overhead_s=ot, overhead_nbytes=om)
    raw = TauLopChannel(TL_SIZES, np.maximum(fit.o_raw_s, 0), np.maximum(fit.L_raw_s, 1e-12))
    assert raw.violations() != []
    assert fit.channel.violations() == []
    assert np.count_nonzero(fit.moved_s) > 0


def test_taulop_exact_data_is_kept_and_mu_is_one():
    m, tau, _, _, _ = ring_tau(0, reps=1)
    exact = o_true(m) + 2 * L_true(m, tau)
    fit = fit_taulop_channel(m, tau, exact, transfers=2, overhead_s=o_true(TL_SIZES), overhead_nbytes=TL_SIZES)
    assert np.allclose(fit.L_s, L_true(TL_SIZES[:, None], TL_TAUS[None, :]), rtol=1e-12)
    assert np.allclose(fit.mu, 1.0, rtol=1e-12, atol=0)


def test_taulop_without_overhead_uses_the_intercept_and_keeps_o_plus_kL():
    m, tau, t, _, _ = ring_tau(10)
    fit = fit_taulop_channel(m, tau, t, transfers=2)
    assert fit.overhead_source == "intercept" and fit.channel.violations() == []
    assert np.all(np.diff(fit.o_s) == 0)  # one constant
    total = fit.o_s[:, None] + 2 * fit.L_s
    truth = o_true(TL_SIZES)[:, None] + 2 * L_true(TL_SIZES[:, None], TL_TAUS[None, :])
    assert np.max(np.abs(total / truth - 1)) < 0.05


def test_taulop_needs_every_tau_at_every_size():
    m, tau, t, _, _ = ring_tau(0, reps=1)
    keep = ~((m == 16.0) & (tau == 3))
    with pytest.raises(InputError, match="no measurement at m = 16, tau = 3"):
        fit_taulop_channel(m[keep], tau[keep], t[keep])


@pytest.mark.parametrize("call, message", [
    (lambda: fit_hockney(SIZES, hockney_law(SIZES), loss="cauchy"), "unknown loss 'cauchy'"),
    (lambda: fit_hockney(SIZES, -hockney_law(SIZES)), "must be a finite number > 0"),
    (lambda: fit_hockney(np.full(4, 8.0), np.ones(4)), "cannot separate alpha_s, beta_s_per_byte"),
    (lambda: fit_hockney_segments(SIZES, hockney_law(SIZES), max_segments=0), "max_segments must be >= 1"),
    (lambda: fit_taulop_channel(SIZES, np.zeros(SIZES.size), hockney_law(SIZES)), "tau must be an integer >= 1"),
])
def test_bad_inputs_are_named(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_queue_search_gamma_from_high_volume_pingpong():
    """Paper 001 eq. 3: reversed receives add gamma n^2 to the in-order time."""
    from commcost.calibration.fit_queue_search import fit_queue_search

    n = np.array([1, 4, 16, 64, 256, 1024])
    t_in = 1e-5 + 2e-7 * n
    fit = fit_queue_search(n, t_in, t_in + 8.4e-9 * n ** 2)
    assert fit.gamma_s == pytest.approx(8.4e-9, rel=1e-3)
    lo, hi = fit.report()["gamma_ci95"]
    assert lo <= fit.gamma_s <= hi
    assert fit_queue_search(n, t_in, t_in).gamma_s == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(InputError, match="three message counts"):
        fit_queue_search(n[:2], t_in[:2], t_in[:2])


def test_a_break_needs_two_residual_degrees_of_freedom():
    """Six sizes with an eager/rendezvous jump: two segments (alpha, beta each, and the break: 5 numbers)
    would leave one degree of freedom, so no split is made; twelve sizes of the same law split at the jump."""
    few = np.array([1.0, 16.0, 256.0, 131072.0, 524288.0, 4194304.0])
    assert len(fit_hockney_segments(few, eager_rendezvous(few)).segments) == 1
    many = np.geomspace(1, 4194304, 12)
    assert len(fit_hockney_segments(many, eager_rendezvous(many)).segments) == 2
