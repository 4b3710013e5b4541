"""Selections an admin can trust: midpoints priced where picks change, Open MPI's default kept where the
predicted gain is small, each pick's margin to another algorithm, and which points are extrapolated."""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Collective, find
from commcost.selection.confidence import margins, region_counts, regions
from commcost.selection.decision import Choice
from commcost.selection.select import keep_default, refine, select

LINEAR = find(Collective.BCAST, "basic_linear")
BINOMIAL = find(Collective.BCAST, "binomial")
CHOICES = [Choice(LINEAR, LINEAR.resolve_params()), Choice(BINOMIAL, BINOMIAL.resolve_params()),
           Choice(BINOMIAL, BINOMIAL.resolve_params({"segsize": 8192}))]


def _price(choice, nprocs, sizes, bound=None):
    """Linear costs (P - 1)(1 + n/100), binomial 1.2 ceil(log2 P)(1 + n/100): linear wins up to P = 3,
    binomial from P = 4, at every size; the segmented binomial is 1% dearer than the plain one."""
    n = np.asarray(sizes, float)
    if choice.algorithm is LINEAR:
        return (nprocs - 1) * (1 + n / 100)
    cost = 1.2 * np.ceil(np.log2(nprocs)) * (1 + n / 100)
    return cost * (1.01 if choice.params.get("segsize") else 1.0)


def test_refine_prices_the_midpoints_between_picks_that_differ_and_nowhere_else():
    priced = []

    def price(choice, nprocs, sizes, bound=None):
        priced.append((nprocs, tuple(sizes)))
        return _price(choice, nprocs, sizes)

    result = select(Collective.BCAST, "ompi", CHOICES, [2, 8], [1, 100, 10000], price, prune=False)
    assert [[c.label for c in row] for row in result.chosen] == [["basic_linear"] * 3, ["binomial"] * 3]
    priced.clear()
    refined = refine(result, price, prune=False)
    # the picks change between P = 2 and P = 8 at every size: P = round(sqrt(16)) = 4 is priced at the three
    # sizes; along the sizes no pick changes, so no size midpoint
    assert refined.procs == (2, 4, 8) and refined.sizes == (1, 100, 10000)
    assert set(priced) == {(4, (1, 100, 10000))}
    assert [c.label for c in refined.chosen[1]] == ["binomial"] * 3  # 3 (1 + n/100) > 2.4 (1 + n/100)
    # the refined grid's rules: linear for P 2..3, binomial from 4 (not from 8 as the coarse grid had it)
    assert [(r.procs_lo, r.procs_hi, r.choice.label) for r in refined.selection.rules] == \
        [(2, 3, "basic_linear"), (4, 8, "binomial")]
    unchanged = select(Collective.BCAST, "ompi", CHOICES, [8, 16], [1, 100], price, prune=False)
    assert refine(unchanged, price) is unchanged


def test_keep_default_writes_no_rule_where_the_gain_is_under_the_bound():
    result = select(Collective.BCAST, "ompi", CHOICES, [2, 3, 8], [1, 1000], _price, prune=False)
    factor = np.array([[1.05, 1.3], [1.2, 1.0], [np.inf, 1.1]])  # the default's predicted time over the best
    selection, kept = keep_default(result, result.best_time_s * factor, 0.1)
    assert kept.tolist() == [[True, False], [False, True], [False, True]]
    assert selection.choice(2, 1) is None and selection.choice(2, 1000).label == "basic_linear"
    assert selection.choice(3, 1).label == "basic_linear" and selection.choice(3, 1000) is None
    assert selection.choice(8, 1).label == "binomial"  # an unpriced default (inf): the pick stands
    _, none_kept = keep_default(result, result.best_time_s * factor, 0.0)
    assert none_kept.tolist() == [[False, False], [False, True], [False, False]]  # equal to the default: no rule


def test_margin_is_to_the_fastest_other_algorithm_not_a_segment_variant():
    result = select(Collective.BCAST, "ompi", CHOICES, [2, 8], [1, 1000], _price, prune=False)
    margin, runner = margins(result.time_s, [c.algorithm.key for c in CHOICES])
    # P = 8: binomial 3.6 (1 + n/100) against linear 7 (1 + n/100); the segmented binomial, 1% dearer, is a
    # variant of the pick, not the runner-up. P = 2: linear 1 against binomial 1.2.
    assert margin[1].tolist() == pytest.approx([7 / 3.6 - 1] * 2)
    assert CHOICES[runner[1, 0]].algorithm is LINEAR
    assert margin[0].tolist() == pytest.approx([0.2, 0.2]) and CHOICES[runner[0, 0]].algorithm is BINOMIAL
    lone, none = margins(result.time_s[:1], ["x"])
    assert np.isinf(lone).all() and (none == -1).all()


def test_regions_name_measured_interpolated_and_extrapolated_points():
    table = regions([2, 4, 64], [1, 1024, 1 << 22, 1 << 23], calibrated_procs=4, size_range=(1, 1 << 22),
                    measured=[(4, 1024)])
    assert table == [["interpolated", "interpolated", "interpolated", "extrapolated"],
                     ["interpolated", "measured", "interpolated", "extrapolated"],
                     ["extrapolated"] * 4]
    assert region_counts(table) == {"measured": 1, "interpolated": 5, "extrapolated": 6}
