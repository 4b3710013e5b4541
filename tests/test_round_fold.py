"""Issue 36 item 1: Open MPI's segmented ring allreduce, many alike reduce-scatter rounds, priced from its first
rounds equals the whole schedule priced transmission by transmission (commcost.selection.round_fold)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.collectives import Case, Collective, algorithms, build, find
from commcost.collectives.recorder import ScheduleTooLarge
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS
from commcost.platform import Mapping
from commcost.selection import round_fold
from commcost.selection.folded_place import FOLD_BUILD_FROM, placed
from commcost.selection.grid import price_sizes
from commcost.selection.round_fold import FOLD_FROM, rounds_statistic_s

EX = Path(__file__).resolve().parent.parent / "examples"
PLATFORM = load_platform(EX / "cluster" / "platform.toml")[0]
PARAMS = load_params(EX / "params" / "illustrative.toml")
RING = find(Collective.ALLREDUCE, "ompi.segmented_ring")


def _whole(values, nprocs, nbytes, mapping, model, statistic):
    return model.statistic_s(placed(RING, Case(Collective.ALLREDUCE, nprocs, nbytes, 0), values, PLATFORM, mapping,
                                    model), statistic)


def test_only_the_segmented_ring_is_made_of_rounds():
    assert [a.key for a in algorithms() if a.rounds is not None] == ["ompi.segmented_ring"]


@pytest.mark.parametrize("model_name", ["hockney", "loggp", "loggph", "taulop"])
@pytest.mark.parametrize("nprocs,ppn", [(8, 4), (12, 4), (6, 2)])
def test_the_fold_equals_the_whole_schedule(model_name, nprocs, ppn):
    """Four models, 6 to 12 ranks on one to three nodes (shm and ib), pieces of 64 and 96 bytes, 16 to 96 rounds,
    the last rank's end and the mean over ranks: folded from the first rounds, within 1e-9 of the whole. Under
    LogGPH on 8 ranks the rounds alternate in fours (steps 13.0, 13.0, 13.0 and 10.8 us), folded by those four;
    on 6 ranks of 2 per node in twos (13.17 and 10.82 us), which from the 13th round drift apart (13.16 and
    10.84, 13.15 and 10.85...) while each two still take 23.99 us: folded by twos."""
    model = MODELS[model_name](PARAMS.for_model(model_name))
    mapping = Mapping.sequential(PLATFORM, nprocs, ppn)
    for segsize, rounds in ((64, 16), (64, 37), (96, 96)):
        nbytes = rounds * nprocs * segsize
        values = RING.resolve_params({"segsize": segsize})
        cut = RING.round_cut(values, nprocs, nbytes)
        assert cut is not None and (cut.count, cut.piece) == (rounds, segsize)
        for statistic in ("max", "mean"):
            folded = rounds_statistic_s(RING, values, nprocs, nbytes, PLATFORM, mapping, model, 0, statistic)
            whole = _whole(values, nprocs, nbytes, mapping, model, statistic)
            assert folded is not None, (segsize, rounds, statistic)
            assert folded == pytest.approx(whole, rel=1e-9, abs=0), (segsize, rounds, statistic)


@pytest.mark.parametrize("model_name", ["hockney", "taulop"])
def test_the_fold_of_a_rank_folded_ring_equals_its_whole(model_name):
    """From :data:`FOLD_BUILD_FROM` ranks the rounds are recorded folded by one node's ranks: 128 ranks of 4 per
    node, 24 rounds, folded twice (ranks and rounds) against folded once (ranks)."""
    model = MODELS[model_name](PARAMS.for_model(model_name))
    nprocs, segsize, rounds = FOLD_BUILD_FROM, 256, 24
    mapping = Mapping.sequential(PLATFORM, nprocs, 4)
    values = RING.resolve_params({"segsize": segsize})
    nbytes = rounds * nprocs * segsize
    whole = _whole(values, nprocs, nbytes, mapping, model, "max")
    assert rounds_statistic_s(RING, values, nprocs, nbytes, PLATFORM, mapping, model) == \
        pytest.approx(whole, rel=1e-9, abs=0)


def test_rounds_that_differ_or_are_few_are_priced_whole():
    """Pieces of two sizes (n not R P q) have no alike rounds; fewer than FOLD_FROM rounds are priced whole;
    under P segsize bytes the library runs the ring."""
    values = RING.resolve_params({"segsize": 64})
    assert RING.round_cut(values, 8, 40 * 8 * 64 + 8) is None
    assert RING.round_cut(values, 8, 4 * 8 * 64) is not None
    mapping = Mapping.sequential(PLATFORM, 8, 4)
    model = MODELS["hockney"](PARAMS.for_model("hockney"))
    assert rounds_statistic_s(RING, values, 8, (FOLD_FROM - 1) * 8 * 64, PLATFORM, mapping, model) is None
    assert RING.round_cut(values, 8, 8 * 64 - 1) is None


def test_a_sweep_prices_each_size_as_built_whole(monkeypatch):
    """price_sizes takes the fold for the sizes cut alike (powers of two from P segsize on) and prices the
    others whole: the same numbers as without the fold, every size built."""
    model = MODELS["taulop"](PARAMS.for_model("taulop"))
    mapping = Mapping.sequential(PLATFORM, 8, 4)
    params = {"segsize": 64}
    sizes = [512, 1000, 16 * 512, 64 * 512, 64 * 512 + 40, 128 * 512]
    folded = price_sizes(RING, params, 8, sizes, PLATFORM, mapping, model)
    monkeypatch.setattr(round_fold, "FOLD_FROM", 10 ** 9)
    whole = price_sizes(RING, params, 8, sizes, PLATFORM, mapping, model)
    np.testing.assert_allclose(folded, whole, rtol=1e-9, atol=0)


def test_too_many_rounds_are_refused_before_any_is_recorded(monkeypatch):
    """A segmented ring past the transmission limit is refused up front, naming its rounds, not after
    recording the limit's worth of them."""
    monkeypatch.setenv("COMMCOST_MAX_TRANSMISSIONS", "10000")
    with pytest.raises(ScheduleTooLarge, match="1,024 rounds of a ring"):
        build(RING, Case(Collective.ALLREDUCE, 8, 1024 * 8 * 64, 0), {"segsize": 64})
