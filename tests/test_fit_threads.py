"""Issue 37: a fit prices its points on threads (the models' compiled loops release the GIL), each point by one
thread, so its numbers, steps and parameters are the ones a single thread gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.calibration import fit_pricer
from commcost.calibration.fit_from_collectives import Point, fit_model, layout_of, pricer
from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.platform_file import load_platform
from commcost.models import PlacedSchedule
from commcost.platform import Mapping

EX = Path(__file__).resolve().parent.parent / "examples"
PLATFORM = load_platform(EX / "cluster" / "platform.toml")[0]
CASES = [("bcast", "ompi.binomial"), ("bcast", "ompi.chain"), ("reduce", "ompi.binary"),
         ("allreduce", "ompi.ring"), ("allgather", "ompi.ring"), ("gather", "ompi.basic_linear")]


def _truth(layout) -> np.ndarray:
    """Plausible parameters: latencies and overheads of half a microsecond, 0.2 ns a byte, ib's twice shm's,
    each a little apart from the one before."""
    return np.array([(0.5e-6 if name.endswith("_s") else 0.2e-9) * (2.0 if unit == "ib" else 1.0) * (1 + 0.3 * j)
                     for j, (unit, name) in enumerate(layout)])


def _points(model):
    placed, statistics = [], []
    for collective, name in CASES:
        for nprocs, ppn in ((16, 4), (24, 8)):
            for nbytes in (256, 65536):
                algorithm = find(Collective(collective), name)
                schedule = build(algorithm, Case(Collective(collective), nprocs, nbytes)).schedule
                placed.append(PlacedSchedule.of(schedule, PLATFORM, Mapping.sequential(PLATFORM, nprocs, ppn)))
                statistics.append("mean" if nbytes == 256 else "max")
    return pricer(model, placed, ["shm", "ib"], statistics)


@pytest.mark.parametrize("model", ["hockney", "loggph", "taulop"])
def test_points_priced_on_threads_are_the_numbers_of_one_thread(model, monkeypatch):
    """Every point priced at three thetas, one by one and as columns of sets (the fit's finite differences), on
    four threads and on one: the same numbers, bit for bit."""
    monkeypatch.setattr(fit_pricer, "THREAD_FROM", 0)
    price = _points(model)
    rng = np.random.default_rng(3)
    base = _truth(price.layout)
    thetas = [base * np.exp(rng.normal(0, 0.2, len(base))) for _ in range(3)]
    which = rng.random((len(price.placed), len(thetas))) < 0.8
    pools = []

    class Counted(fit_pricer.ThreadPoolExecutor):
        def __init__(self, threads):
            pools.append(threads)
            super().__init__(threads)
    monkeypatch.setattr(fit_pricer, "ThreadPoolExecutor", Counted)
    got = {}
    for threads in ("1", "4"):
        monkeypatch.setenv(fit_pricer.THREADS_VARIABLE, threads)
        got[threads] = ([price(theta) for theta in thetas], price.columns(thetas, which))
    assert pools and set(pools) == {4}  # on one thread no pool; on four, every pricing on four
    for one, four in zip(got["1"][0], got["4"][0]):
        assert np.array_equal(one, four)
    assert np.array_equal(got["1"][1], got["4"][1], equal_nan=True)
    assert np.isfinite(got["4"][1][which]).all()


def test_a_fit_on_threads_writes_the_parameters_of_one_thread(monkeypatch):
    """Rows priced from known Hockney parameters, fitted on four threads and on one: the same parameters."""
    monkeypatch.setattr(fit_pricer, "THREAD_FROM", 0)
    price = _points("hockney")
    layout = layout_of("hockney", ["shm", "ib"])
    truth = _truth(layout)
    y = price(truth) * np.exp(np.random.default_rng(5).normal(0, 0.05, len(price.placed)))
    points = [Point("bcast", "x", 2, 1, float(t)) for t in y]
    fits = []
    for threads in ("1", "4"):
        monkeypatch.setenv(fit_pricer.THREADS_VARIABLE, threads)
        fits.append(fit_model("hockney", points, ["shm", "ib"], price, layout=layout, max_steps=3))
    assert np.array_equal(fits[0].theta, fits[1].theta)


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", "9" * 5000])  # 5,000 digits: int() raised
def test_a_thread_count_that_is_not_a_whole_number_is_refused(text, monkeypatch):
    monkeypatch.setenv(fit_pricer.THREADS_VARIABLE, text)
    with pytest.raises(InputError, match=fit_pricer.THREADS_VARIABLE):
        fit_pricer.fit_threads()
