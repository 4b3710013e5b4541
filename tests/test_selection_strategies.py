"""Choosing how to choose (commcost.selection.strategies): forward cross-validation over P among the model,
the anchored model, the best constant algorithm and the library's default, on measured tables made by hand."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.selection.strategies import anchored_pick, choose_strategy, model_pick, strategy_picks

PROCS = (8, 16, 32, 64)
SIZES = (1024, 65536)


def table(times):
    """{(P, n): {algorithm: seconds}} from times(algorithm, P, n) for algorithms a and b."""
    return {(p, n): {"a": times("a", p, n), "b": times("b", p, n)} for p in PROCS for n in SIZES}


def test_a_model_that_ranks_right_is_kept_where_one_algorithm_does_not_win_everywhere():
    """a wins below 32 ranks, b from 32 on; the model knows (it prices the truth times 2): the constant loses
    at the held-out 32 and 64, the default is worse still, the model and its anchored form are exact; the tie
    keeps the anchored form (listed before the model)."""
    def truth(alg, p, n):
        return p * (1.0 if alg == "a" else 0.0) + (40.0 if alg == "b" else 10.0) + n * 1e-6
    measured = table(truth)
    defaults = {pt: 2 * max(t.values()) for pt, t in measured.items()}
    times = lambda alg, p, sizes: np.array([2 * truth(alg, p, n) for n in sizes])  # noqa: E731
    choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: times)
    assert choice.folds == [16, 32, 64]
    assert choice.penalties["model"] == pytest.approx(0.0) and choice.penalties["anchored"] == pytest.approx(0.0)
    assert choice.penalties["constant"] > 0 and choice.penalties["default"] > choice.penalties["constant"]
    assert choice.chosen == "anchored"
    assert set(choice.per_fold["constant"]) == {16, 32, 64}  # each held-out P's figure, whose mean is above
    assert np.mean(list(choice.per_fold["constant"].values())) == pytest.approx(choice.penalties["constant"])
    assert choice.to_dict()["cv_penalty_pct_per_fold"]["model"] == {"16": 0.0, "32": 0.0, "64": 0.0}


def test_where_nothing_beats_the_default_the_default_is_kept():
    """The library's own choice is measured as fast as the best algorithm everywhere, and the model ranks
    wrong: no rule."""
    def truth(alg, p, n):
        return (1.0 if alg == "a" else 2.0) * p
    measured = table(truth)
    defaults = {pt: min(t.values()) for pt, t in measured.items()}
    wrong = lambda alg, p, sizes: np.array([(2.0 if alg == "a" else 1.0) * p for _ in sizes])  # noqa: E731
    choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: wrong)
    assert choice.penalties["default"] == 0.0 and choice.penalties["constant"] == 0.0
    assert choice.chosen == "default"  # a tie keeps the safest


def test_a_model_some_fold_cannot_price_is_not_chosen():
    """The refit below 64 ranks cannot price 64 (one node's rows know no network): whatever it does
    elsewhere, nothing vouches for it there."""
    def truth(alg, p, n):
        return p * (1.0 if alg == "a" else 0.0) + (40.0 if alg == "b" else 10.0)
    measured = table(truth)
    defaults = {pt: 2 * max(t.values()) for pt, t in measured.items()}
    good = lambda alg, p, sizes: np.array([truth(alg, p, n) for n in sizes])  # noqa: E731
    choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: None if p == 64 else good)
    assert "model" not in choice.penalties and "anchored" not in choice.penalties
    assert choice.scored_in["model"] == 2 and choice.chosen in ("constant", "default")


def test_the_anchor_carries_each_algorithm_s_measured_level_by_the_model_s_growth():
    """At the anchor (P* = 16) a measured 10 us, b 12 us; the model says both double to 32 but gives b a
    tenth of a's level: the model alone picks b, the anchored form a (20 us against 24)."""
    measured = {(16, 1024): {"a": 10.0, "b": 12.0}}
    times = lambda alg, p, sizes: np.array([(1.0 if alg == "a" else 0.1) * p for _ in sizes])  # noqa: E731
    assert model_pick(times, ["a", "b"])(32, 1024) == "b"
    assert anchored_pick(times, ["a", "b"], measured)(32, 1024) == "a"
    picks = strategy_picks(None, ["a", "b"], measured)
    assert set(picks) == {"default", "constant"} and picks["default"](32, 1024) is None
    assert picks["constant"](32, 1024) == "a"


def test_only_the_regime_of_the_largest_trained_p_is_held_out():
    """a wins on one node (P <= 16), b across nodes (32, 64): held out over every P the constant a looks
    fine; held out across nodes only (32 and 64, each trained below it) the constant picked on fewer ranks
    is a at 32 and costs there, while the model that knows the switch does not."""
    def truth(alg, p, n):
        return 1.0 if (alg == "a") == (p <= 16) else 3.0
    measured = table(truth)
    defaults = {pt: 2.0 for pt in measured}
    times = lambda alg, p, sizes: np.array([truth(alg, p, n) for n in sizes])  # noqa: E731
    across = choose_strategy(measured, defaults, ["a", "b"], lambda p: times, regime=lambda p: p >= 32)
    assert across.folds == [32, 64] and across.chosen == "anchored" and across.penalties["constant"] > 0
    one = choose_strategy(measured, defaults, ["a", "b"], lambda p: None, regime=lambda p: p >= 32)
    assert one.chosen == "default"  # the constant loses at 32 and the model is not there to vouch for


def test_with_one_held_out_p_another_way_must_beat_the_default_by_the_tolerance():
    """Only P = 64 is across nodes: one fold. The model beats the default there by 10 points (a gain one
    sample cannot vouch for): the default is kept; by 50 points, the model is."""
    from commcost.selection.strategies import SINGLE_FOLD_MARGIN_PCT

    def truth(alg, p, n):
        return 1.0 if (alg == "a") == (p <= 32) else 3.0
    measured = table(truth)
    times = lambda alg, p, sizes: np.array([truth(alg, p, n) for n in sizes])  # noqa: E731
    regime = lambda p: p >= 64  # noqa: E731
    for default_s, kept in ((1.10, "default"), (1.50, "anchored")):
        defaults = {pt: default_s for pt in measured}
        choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: times, regime=regime)
        assert choice.folds == [64] and choice.penalties["default"] == pytest.approx(100 * (default_s - 1))
        assert choice.penalties["anchored"] == pytest.approx(0.0) and choice.chosen == kept
    assert SINGLE_FOLD_MARGIN_PCT == 15.0


def test_ways_within_the_tie_tolerance_keep_the_anchored_form_before_the_constant():
    """a is best at every trained P, so the constant (a) and the anchored form (which also picks a there) score
    the same in cross-validation; the model ranks wrong. The tie keeps the anchored form: it reproduces the
    largest trained P's measurements and, past it, follows the model's growth, which here says b overtakes a
    at 256 ranks (as the truth does); the constant would keep a."""
    from commcost.selection.strategies import TIE_PCT

    def truth(alg, p, n):
        return 100.0 + p * (1.0 if alg == "a" else 0.5) if alg == "a" else 150.0 + 0.5 * p
    measured = table(truth)
    defaults = {pt: 2 * max(t.values()) for pt, t in measured.items()}
    times = lambda alg, p, sizes: np.array([truth(alg, p, n) for n in sizes])  # noqa: E731
    choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: times)
    assert choice.penalties["constant"] == pytest.approx(0.0) and choice.penalties["anchored"] == pytest.approx(0.0)
    assert choice.chosen == "anchored"
    picks = strategy_picks(times, ["a", "b"], measured)
    assert picks["constant"](256, 1024) == "a" and picks["anchored"](256, 1024) == "b"
    assert TIE_PCT == 1.0


def test_with_two_held_out_p_the_margin_over_the_default_shrinks_as_their_square_root():
    """Two folds across nodes (32, 64): the anchored form is exact there and the default 5 points off at each
    (under 15 / sqrt(2) = 10.6): the default is kept; 20 points off, the anchored form is."""
    from commcost.selection.strategies import margin_pct

    def truth(alg, p, n):
        return 1.0 if (alg == "a") == (p <= 16) else 3.0
    measured = table(truth)
    times = lambda alg, p, sizes: np.array([truth(alg, p, n) for n in sizes])  # noqa: E731
    for default_s, kept in ((1.05, "default"), (1.20, "anchored")):
        defaults = {pt: default_s for pt in measured}
        choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: times, regime=lambda p: p >= 32)
        assert choice.folds == [32, 64] and choice.penalties["anchored"] == pytest.approx(0.0)
        assert choice.chosen == kept
    assert margin_pct(2) == pytest.approx(15.0 / 2 ** 0.5) and margin_pct(1) == 15.0


def test_a_way_applied_in_a_regime_no_fold_held_out_is_said_not_cross_validated():
    """Trained on one node only (P <= 64 here, 64 ranks a node), the folds hold out one-node P; applied at
    128 and 256 ranks, across nodes, the strategy line says those P were not cross-validated (Peak trained on
    P <= 32, one node: the way kept lost to Open MPI's default across nodes for allgather, 49.6% against
    6.4%, and won for gather, 25% against 1,342%; nothing in the rows tells which)."""
    from commcost.platform import Mapping

    from commcost.workflows.evaluate import other_regime, strategy_line

    def truth(alg, p, n):
        return 1.0 if alg == "a" else 2.0
    measured = table(truth)
    defaults = {pt: 3.0 for pt in measured}
    times = lambda alg, p, sizes: np.array([truth(alg, p, n) for n in sizes])  # noqa: E731
    choice = choose_strategy(measured, defaults, ["a", "b"], lambda p: times, regime=lambda p: p > 64)
    assert choice.regime is False and choice.chosen != "default"
    node = lambda p: Mapping.on_nodes(np.arange(p) // 64)  # noqa: E731
    choice.unvouched = other_regime(choice, [32, 64, 128, 256], node)
    assert choice.unvouched == [128, 256]
    assert choice.beyond == "default"  # a wins everywhere: the best constant ties the model's ways in the folds
    assert choice.way_at(64) == choice.chosen and choice.way_at(128) == "default"
    assert "not cross-validated at P = 128, 256: the folds held out P on one node only, and these are not; kept " \
           "there: Open MPI's default" in strategy_line(choice)
    assert choice.to_dict()["not_cross_validated_at"] == [128, 256] and choice.to_dict()["kept_there"] == "default"
    assert other_regime(choice, [96, 128], lambda p: Mapping.on_nodes(np.arange(p) // 256)) == []
    choice.chosen = "default"  # no rule written: nothing to warn of
    assert "not cross-validated" not in strategy_line(choice)
    assert other_regime(choose_strategy(measured, defaults, ["a", "b"], lambda p: times), [128], node) == []


def test_the_html_table_says_where_the_way_kept_was_not_cross_validated():
    from commcost.report.selection_page import cross_validation_rows

    info = {"chosen": "anchored", "folds": [8, 16, 32], "cv_mean_penalty_pct": {"anchored": 0.9},
            "not_cross_validated_at": [64, 128]}
    assert cross_validation_rows({"allgather": info})[0][-1] == "anchored (not cross-validated at P = 64, 128)"
    assert cross_validation_rows({"allgather": {**info, "chosen": "default"}})[0][-1] == "default"
    assert cross_validation_rows({"allgather": {**info, "not_cross_validated_at": []}})[0][-1] == "anchored"


def test_past_the_trained_regime_the_model_is_kept_only_where_it_beat_the_best_constant():
    """Where the model's growth in P made its picks in the folds (it beat the best constant algorithm by more
    than a tie) it is kept past the trained regime; where one algorithm won every fold as well, the library's
    default is, and always past a constant (Peak trained on one node: allgather's anchored form tied the
    constant in the folds and lost to the default across nodes; gather's beat it by 6.2 points and won)."""
    from commcost.selection.strategies import TIE_PCT, beyond_regime

    assert beyond_regime("anchored", {"anchored": 7.0, "constant": 50.0, "default": 134.8}) == "anchored"
    assert beyond_regime("model", {"model": 3.0, "constant": 67.4}) == "model"
    assert beyond_regime("anchored", {"anchored": 15.4, "constant": 21.6}) == "anchored"
    assert beyond_regime("anchored", {"anchored": 0.9, "constant": 0.0}) == "default"
    assert beyond_regime("anchored", {"anchored": 1.0, "constant": 1.0 + TIE_PCT}) == "default"  # a tie
    assert beyond_regime("anchored", {"anchored": 1.0, "constant": 1.1 + TIE_PCT}) == "anchored"
    assert beyond_regime("constant", {"constant": 0.0, "default": 50.0}) == "default"
    assert beyond_regime("default", {"default": 1.0}) == "default"
    assert beyond_regime("model", {"model": 1.0}) == "default"  # no constant scored: nothing shows the model mattered
