"""TransmissionLaw.compiled_all: every concurrency's compiled grid at once, bit for bit what compiling them one by one gives
(the example tables under both rules beyond the last size, one transfer and two, and a fitted family's
tables of 300 concurrencies)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from commcost.calibration.fit_from_collectives import taulop_tables
from commcost.io.params_file import load_params
from commcost.models.taulop.params import TauLopParams, TransmissionLaw

EX = Path(__file__).resolve().parent.parent / "examples"


def _tables():
    fitted = taulop_tables(np.array([0.3e-6, 0.5e-6, 0.15e-9, 1.0e-6, 2.0e-6, 0.4e-9]), ["shm", "ib"], 300)
    sets = [load_params(EX / "params" / "illustrative.toml").for_model("taulop"),
            TauLopParams.from_dict({"beyond_m": "slope", **fitted})]
    return [(name, table) for params in sets for name, table in params.tables.items()]


@pytest.mark.parametrize("name, table", _tables(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_concurrency_at_once_equals_one_by_one(name, table):
    for transfers in ((table,), (table, table)):
        together, alone = TransmissionLaw(table, transfers), TransmissionLaw(table, transfers)
        grids = together.compiled_all()
        assert len(grids) == together.tau_saturated
        for tau, grid in enumerate(grids, start=1):
            one = alone._compiled(tau)
            assert grid == one  # the same numbers: a fit's path depends on its prices to the last bit
