"""Issue 15 item 2: paper 002's group bandwidths derived from a calibrated model (`arrange --bandwidths-from`)
instead of a measured table: b(A, B; s) = s / t(s) on the channel joining two nodes of the groups."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS
from commcost.partition.arrangement import mpdata_volumes
from commcost.partition.model_bandwidths import model_bandwidths

EX = Path(__file__).resolve().parent.parent / "examples" / "grid5000"
BASE = ["arrange", "mpdata", "--platform", str(EX / "platform.toml")]


def test_hockney_bandwidths_are_size_over_time_on_each_pair_s_channel():
    platform, _ = load_platform(EX / "platform.toml")
    model = MODELS["hockney"](load_params(EX / "params.toml").for_model("hockney"))
    members = [[0, 1, 2], [3, 4, 5, 6], [7, 8]]  # Grimoire, Parasilo (Rennes), Grisou (Nancy, as Grimoire)
    h, w = mpdata_volumes((512, 512, 64), (1, 1), 3, 4)
    bh, bv = model_bandwidths(model, platform, members, h, w)
    law = {"eth": (30e-6, 2.08e-9), "site": (60e-6, 2.04e-9), "renater": (5e-3, 1.79e-6)}

    def b(channel, s):
        alpha, beta = law[channel]
        return s / (alpha + beta * s)

    assert bh[0, 0] == pytest.approx(b("eth", h)) and bv[1, 1] == pytest.approx(b("eth", w))
    assert bh[0, 2] == pytest.approx(b("site", h)) and bv[2, 0] == pytest.approx(b("site", w))
    assert bh[0, 1] == pytest.approx(b("renater", h)) and bv[1, 2] == pytest.approx(b("renater", w))
    assert np.allclose(bh, bh.T) and np.allclose(bv, bv.T)


def test_arrange_with_derived_bandwidths_writes_a_table_that_gives_the_same_arrangement(tmp_path, capsys):
    assert main([*BASE, "--params", str(EX / "params.toml"), "--bandwidths-from", "hockney", "--out",
                 str(tmp_path), "--format", "json"]) == 0
    derived = json.loads(capsys.readouterr().out)
    assert derived["level"] == "cluster" and derived["derived_bandwidths"]["groups"] == [
        "Grimoire", "Parasilo", "Grisou", "Paravance"]
    assert derived["ratio"] > 1.2  # the model sees the sequential 3 x 4 send its bars across Renater too
    assert main([*BASE, "--bandwidths", str(tmp_path / "bandwidths.toml"), "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["heuristic"]["cost_s"] == pytest.approx(derived["heuristic"]["cost_s"], rel=1e-12)


@pytest.mark.parametrize("extra, message", [
    (["--bandwidths-from", "hockney"], "expected --params"),
    (["--bandwidths-from", "nope", "--params", str(EX / "params.toml")], "expected one of"),
    (["--bandwidths-from", "loggp", "--params", str(EX / "params.toml")], "params.toml"),
])
def test_bad_derivations_give_one_line_and_exit_2(extra, message, capsys):
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
