"""Every registered algorithm is priced under every model, with sequential, round-robin and file mappings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.collectives import Case, algorithms, build
from commcost.io.mapping_spec import parse_mapping_option
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule

EX = Path(__file__).resolve().parent.parent / "examples"
PLATFORM, _ = load_platform(EX / "paper000" / "platform.toml")
PARAMS = load_params(EX / "params" / "illustrative.toml")
NPROCS = 12


@pytest.fixture(scope="module")
def mappings(tmp_path_factory):
    path = tmp_path_factory.mktemp("map") / "ranks.txt"
    path.write_text("\n".join(["node1", "node0"] * (NPROCS // 2)) + "\n")
    return {text: parse_mapping_option(text).build(PLATFORM, NPROCS)
            for text in ("sequential:6", "round-robin", f"file:{path}")}


@pytest.mark.parametrize("algorithm", algorithms(), ids=lambda a: f"{a.collective.value}:{a.key}")
def test_every_algorithm_under_every_model_and_mapping(algorithm, mappings):
    nprocs = NPROCS if algorithm.supports(NPROCS) else 2  # two_proc: Open MPI runs it on 2 ranks only
    schedule = build(algorithm, Case(algorithm.collective, nprocs, 3000, 5 % nprocs if algorithm.collective.rooted
                                     else 0)).schedule
    if nprocs != NPROCS:
        mappings = {"round-robin": parse_mapping_option("round-robin").build(PLATFORM, nprocs)}
    for mapping in mappings.values():
        placed = PlacedSchedule.of(schedule, PLATFORM, mapping)
        times = {name: MODELS[name](PARAMS.for_model(name)).price(placed).time_s for name in MODELS}
        assert all(np.isfinite(t) and t > 0 for t in times.values()), times


def test_mapping_changes_the_price_of_a_ring(mappings):
    from commcost.collectives import Collective, find

    schedule = build(find(Collective.ALLGATHER, "ring"), Case(Collective.ALLGATHER, NPROCS, 65536)).schedule
    taulop = MODELS["taulop"](PARAMS.for_model("taulop"))
    seq = taulop.price(PlacedSchedule.of(schedule, PLATFORM, mappings["sequential:6"])).time_s
    rr = taulop.price(PlacedSchedule.of(schedule, PLATFORM, mappings["round-robin"])).time_s
    assert rr > seq  # every step crosses the network under round-robin (paper 003 eq. 5-8)
