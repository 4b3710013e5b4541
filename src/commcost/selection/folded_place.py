"""A collective's schedule built and placed for pricing: folded by one node's ranks where the model and the
placement allow it (a ring allreduce on 1,024 ranks of 4 per node records 4 of every 1,024 transmissions),
else built whole. Shared by the selection grid and the folds that price long schedules from their first
segments or rounds."""

from __future__ import annotations

from commcost.collectives import Algorithm, Case, build, build_folded
from commcost.models import Model, PlacedSchedule
from commcost.models.symmetry import fold_shift
from commcost.platform import Mapping, Platform

FOLD_BUILD_FROM = 128  # ranks: a smaller schedule is built whole (folding it saves little)


def placed_folded(algorithm: Algorithm, case: Case, values: dict[str, int], platform: Platform, mapping: Mapping,
                  model: Model) -> PlacedSchedule | None:
    """``case``'s schedule built and placed folded by one node's ranks (a ring allreduce on 1,024 ranks of 4
    per node: 4 of every 1,024 transmissions; :func:`commcost.collectives.build_folded`,
    :meth:`PlacedSchedule.of_folded`), where the model prices such a fold as the whole
    (:attr:`Model.folds_by_rank_shift`) and the schedule and its placement are invariant under the shift;
    else None (build it whole). From :data:`FOLD_BUILD_FROM` ranks."""
    if not model.folds_by_rank_shift or case.nprocs < FOLD_BUILD_FROM:
        return None
    folded = build_folded(algorithm, case, fold_shift(mapping.node_of_rank[:case.nprocs]), values)
    if folded is None:
        return None
    return PlacedSchedule.of_folded(folded[0].schedule, folded[1], case.nprocs, platform, mapping,
                                    model.fold_checks_domains)


def placed(algorithm: Algorithm, case: Case, values: dict[str, int], platform: Platform, mapping: Mapping,
           model: Model) -> PlacedSchedule:
    """``case``'s schedule placed: folded where :func:`placed_folded` can, else built whole."""
    return placed_folded(algorithm, case, values, platform, mapping, model) or \
        PlacedSchedule.of(build(algorithm, case, values).schedule, platform, mapping)
