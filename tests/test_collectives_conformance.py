"""Every registered algorithm implements its collective: the data-flow checker over P = 1..65, three roots.

Segmented algorithms run with small segments so that messages cut into
several segments, the last one short.
"""

from __future__ import annotations

import numpy as np
import pytest

from commcost.collectives import Case, algorithms, build
from commcost.collectives.dataflow import check
from commcost.collectives.registry import Unsupported

ALL = algorithms()
NBYTES = 11  # odd on purpose: blocks and segments do not divide it


def small_params(algorithm) -> dict[str, int]:
    """Segments of 3 bytes (several per message, the last one short); other tunables at defaults."""
    return {p.name: 3 for p in algorithm.params if p.name.startswith("seg")}


def test_the_registry_is_complete():
    names = {(a.collective.value, a.key) for a in ALL}
    ompi_bcast = {a.id for a in ALL if a.collective.value == "bcast" and a.library == "ompi" and a.id is not None}
    assert ompi_bcast == set(range(1, 10))
    assert {c for c, _ in names} == {"bcast", "scatter", "gather", "allgather", "reduce", "allreduce", "alltoall",
                                     "reduce_scatter"}


@pytest.mark.parametrize("algorithm", ALL, ids=lambda a: f"{a.collective.value}:{a.key}")
def test_dataflow_holds_for_p_1_to_65_and_three_roots(algorithm):
    rooted = algorithm.collective.rooted
    for nprocs in range(1, 66):
        if not algorithm.supports(nprocs):
            continue
        roots = sorted({0, nprocs // 2, nprocs - 1}) if rooted else [0]
        nbytes = NBYTES if algorithm.collective.value != "alltoall" or nprocs <= 33 else 2
        for root in roots:
            cs = build(algorithm, Case(algorithm.collective, nprocs, nbytes, root), small_params(algorithm),
                       data=True)
            check(cs)


@pytest.mark.parametrize("algorithm", ALL, ids=lambda a: f"{a.collective.value}:{a.key}")
def test_defaults_and_large_messages_build_and_check(algorithm):
    for nprocs, nbytes in ((1, 0), (2, 1), (5, 1000), (16, 4096), (13, 70_000)):
        if algorithm.collective.value == "alltoall" and nbytes > 1000:
            nbytes = 100
        if not algorithm.supports(nprocs):
            nprocs = 2
        cs = build(algorithm, Case(algorithm.collective, nprocs, nbytes, nprocs - 1), data=True)
        check(cs)
        assert np.all(cs.schedule.src != cs.schedule.dst)


@pytest.mark.parametrize("algorithm", ALL, ids=lambda a: f"{a.collective.value}:{a.key}")
def test_payloads_do_not_change_the_schedule(algorithm):
    nprocs = 23 if algorithm.supports(23) else 2
    case = Case(algorithm.collective, nprocs, 300, 7 % nprocs if algorithm.collective.rooted else 0)
    with_data = _unrolled(build(algorithm, case, data=True).schedule)
    without = _unrolled(build(algorithm, case).schedule)
    for field in ("src", "dst", "nbytes", "phase", "posted"):
        assert np.array_equal(with_data[field], without[field]), field


def _unrolled(schedule) -> dict[str, np.ndarray]:
    """The schedule's transmissions with every repeated phase written out as often as it runs (a build
    without payloads may store equal steps once, with a repeat count)."""
    parts: dict[str, list[np.ndarray]] = {f: [] for f in ("src", "dst", "nbytes", "phase", "posted")}
    step = 0
    for k, rows in enumerate(schedule.phase_slices()):
        for _ in range(int(schedule.repeat[k])):
            for field in ("src", "dst", "nbytes", "posted"):
                parts[field].append(getattr(schedule, field)[rows])
            parts["phase"].append(np.full(rows.stop - rows.start, step))
            step += 1
    return {f: np.concatenate(v) if v else np.zeros(0) for f, v in parts.items()}


@pytest.mark.parametrize("algorithm", [a for a in ALL if a.nprocs_ok is not None],
                         ids=lambda a: f"{a.collective.value}:{a.key}")
def test_unsupported_sizes_fail_as_the_library_does(algorithm):
    """Open MPI's two_proc algorithms return MPI_ERR_UNSUPPORTED_OPERATION on P != 2; so does build."""
    for nprocs in (3, 4, 7):
        with pytest.raises(Unsupported):
            build(algorithm, Case(algorithm.collective, nprocs, 8))
    assert len(build(algorithm, Case(algorithm.collective, 1, 8)).schedule.src) == 0
