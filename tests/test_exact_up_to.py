"""Issue 36 item 1: how far a pipeline whose steps drift under tau-Lop is priced whole, exactly, before it is
folded from its mean step (commcost.selection.long_pipeline.whole_budget, ``commcost --exact-up-to N``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping
from commcost.selection.grid import price_sizes
from commcost.selection.long_pipeline import (APPROXIMATE_NOTE, APPROXIMATE_TOLERANCE, WHOLE_BUDGET,
                                              pipeline_statistic_s, whole_budget)

EX = Path(__file__).resolve().parent.parent / "examples"
PLATFORM = load_platform(EX / "cluster" / "platform.toml")[0]
PARAMS = load_params(EX / "params" / "illustrative.toml")
NBYTES = 2047 * 1024 + 700  # 2,048 segments of 1 KiB: 47,104 transmissions on 24 ranks


def _binomial_on_24():
    algorithm = find(Collective.BCAST, "ompi.binomial")
    values = algorithm.resolve_params({"segsize": 1024})
    mapping = Mapping.sequential(PLATFORM, 24, 4)
    model = MODELS["taulop"](PARAMS.for_model("taulop"))
    schedule = build(algorithm, Case(algorithm.collective, 24, NBYTES, 0), values).schedule
    whole = model.statistic_s(PlacedSchedule.of(schedule, PLATFORM, mapping), "max")
    return algorithm, values, mapping, model, schedule.ntransmissions, whole


def test_the_budget_is_the_variable_or_the_default_and_never_past_the_transmission_limit(monkeypatch):
    monkeypatch.delenv("COMMCOST_EXACT_UP_TO", raising=False)
    monkeypatch.delenv("COMMCOST_MAX_TRANSMISSIONS", raising=False)
    assert whole_budget() == WHOLE_BUDGET
    monkeypatch.setenv("COMMCOST_EXACT_UP_TO", "0")
    assert whole_budget() == 0
    monkeypatch.setenv("COMMCOST_EXACT_UP_TO", "1000000000000")
    assert whole_budget() == 8_000_000  # the transmission limit: no whole is priced past it
    monkeypatch.setenv("COMMCOST_MAX_TRANSMISSIONS", "20000")
    assert whole_budget() == 20_000
    for bad in ("-1", "lots", "1e6", "9" * 40):
        monkeypatch.setenv("COMMCOST_EXACT_UP_TO", bad)
        with pytest.raises(InputError, match="COMMCOST_EXACT_UP_TO.*whole number of transmissions >= 0"):
            whole_budget()


def test_a_drifting_pipeline_within_the_budget_is_priced_whole_and_past_it_folded_and_said(monkeypatch):
    """Binomial bcast under tau-Lop, 24 ranks, 2,048 segments: no exact fold passes (its steps drift). Within
    the budget the fold declines (None: the caller prices the whole, exactly); with the budget under its
    47,104 transmissions it is folded within the tolerance and said; with the transmission limit under them,
    where no whole is priced, it is folded too, not refused."""
    algorithm, values, mapping, model, count, whole = _binomial_on_24()
    assert count == 2048 * 23
    monkeypatch.delenv("COMMCOST_MAX_TRANSMISSIONS", raising=False)
    monkeypatch.setenv("COMMCOST_EXACT_UP_TO", str(count))
    assert pipeline_statistic_s(algorithm, values, 24, NBYTES, PLATFORM, mapping, model) is None
    got = price_sizes(algorithm, {"segsize": 1024}, 24, [NBYTES], PLATFORM, mapping, model)
    assert got[0] == whole  # the whole schedule, bit for bit
    for variable, value in (("COMMCOST_EXACT_UP_TO", str(count - 1)), ("COMMCOST_MAX_TRANSMISSIONS", "40000")):
        monkeypatch.delenv("COMMCOST_EXACT_UP_TO", raising=False)
        monkeypatch.setenv(variable, value)
        notes: list[str] = []
        got = price_sizes(algorithm, {"segsize": 1024}, 24, [NBYTES], PLATFORM, mapping, model, refused=notes)
        assert got[0] == pytest.approx(whole, rel=APPROXIMATE_TOLERANCE) and got[0] != whole
        assert len(notes) == 1 and notes[0].startswith(APPROXIMATE_NOTE) and "steps drift" in notes[0]
        monkeypatch.delenv(variable)


def test_the_option_sets_the_budget_for_one_command_and_a_bad_one_is_one_line(capsys, monkeypatch):
    from commcost.cli.main import main

    monkeypatch.delenv("COMMCOST_EXACT_UP_TO", raising=False)
    argv = ["select", "bcast", "--params", str(EX / "params" / "illustrative.toml"), "--platform",
            str(EX / "cluster" / "platform.toml"), "--model", "taulop", "--procs", "24", "--ppn", "4",
            "--sizes", str(NBYTES), "--algorithms", "binomial", "--segsizes", "1KiB"]
    assert main(argv) == 0
    assert APPROXIMATE_NOTE not in capsys.readouterr().err
    assert main(["--exact-up-to", "0", *argv]) == 0
    assert "commcost: " + APPROXIMATE_NOTE + "ompi.binomial on 24 ranks" in capsys.readouterr().err
    assert "COMMCOST_EXACT_UP_TO" not in os.environ
    for bad in ("-1", "many"):
        with pytest.raises(SystemExit) as exit_code:
            main(["--exact-up-to", bad, *argv])
        err = capsys.readouterr().err.strip()
        assert exit_code.value.code == 2 and len(err.splitlines()) == 1 and "--exact-up-to" in err
    monkeypatch.setenv("COMMCOST_EXACT_UP_TO", "many")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "COMMCOST_EXACT_UP_TO" in err and "'many'" in err


def test_han_reduce_below_the_segments_it_records_is_whole_within_the_budget_and_folded_past_it(monkeypatch):
    """coll/han's reduce under tau-Lop (its leaders' channels drift: no exact fold) at 600 segments of 64 KiB on
    24 ranks: recorded whole, so priced whole within the budget (None here: the caller prices the whole) and,
    as any drifting pipeline, folded past it, within the tolerance, with a note saying how to have it whole.
    Before, han's reduce was priced whole below 1,025 segments whatever its size (3.1 million transmissions
    at 1,024 segments on 1,024 ranks, 4 a node)."""
    algorithm = find(Collective.REDUCE, "ompi.han")
    values = algorithm.resolve_params({"segsize": 65536, "ppn": 4})
    mapping = Mapping.sequential(PLATFORM, 24, 4)
    model = MODELS["taulop"](PARAMS.for_model("taulop"))
    nbytes = 599 * 65536 + 1000
    monkeypatch.delenv("COMMCOST_EXACT_UP_TO", raising=False)
    assert pipeline_statistic_s(algorithm, values, 24, nbytes, PLATFORM, mapping, model) is None
    monkeypatch.setenv("COMMCOST_EXACT_UP_TO", "0")
    notes: list[str] = []
    folded = pipeline_statistic_s(algorithm, values, 24, nbytes, PLATFORM, mapping, model, notes=notes)
    schedule = build(algorithm, Case(algorithm.collective, 24, nbytes, 0), values).schedule
    whole = model.statistic_s(PlacedSchedule.of(schedule, PLATFORM, mapping), "max")
    assert folded == pytest.approx(whole, rel=APPROXIMATE_TOLERANCE) and folded != whole
    assert len(notes) == 1 and notes[0].startswith(APPROXIMATE_NOTE) and "--exact-up-to" in notes[0]
