"""tau-Lop on the tables the model's authors published (libtaulop), and agreement with their library.

The reference numbers in ``data/libtaulop_metropolis.tsv`` come from the
authors' C++ library, hpc-unex/libtaulop at commit bbcb7e2 (v1.2), built
once as its README says::

    ./configure CXXFLAGS='-O3' --prefix=$HOME/taulop --with-params=<src>/params/metropolis
    make && make install
    make tests CXXFLAGS='-O3 -std=c++11 -include algorithm'   # one test lacks <algorithm> on gcc 12

and run through a small driver linking the library (``Communicator(P)``
with ``Mapping(P, M, Q, Sequential|RoundRobin)``, channels
``{"SHM", "IB"}``, root 0; ``BcastBinomial::evaluate``,
``AllgatherRing::evaluate``, ``AllreduceRDA`` and ``ReduceBinomialOpenMPI``
(their code run through the library's evaluation classes without the
Computation elements: transmissions only, since the library cannot turn
its gamma terms off), and ``TauLopParam::getTime(m, tau, chn)`` for single
transmissions), the library's ``stof`` table parsing replaced by
``stod`` so both tools read the same doubles (with ``stof`` the values move
by about 1e-8 relative). libtaulop's own ``tests/basics/colls/bcast``
program prints the same 3.00141e-4 s for the P = 1024 case.

Where the two tools are compared they run the same shapes under the same
rules: the binomial broadcast of paper 000 eq. 4 (MPICH's order,
``mpich.binomial``) on power-of-two P, single transmissions on every
channel (SHM: o + 2 L, IB: o + L, TCP: o + 2 L^shm + L^tcp) at every
tau including past tau_max (libtaulop holds L(m, 8): ``beyond_tau =
"hold"``) and past the table's 4 MiB (whole chunks), the ring allgather
inside one node and round-robin over nodes, and the recursive-doubling
allreduce and binomial reduce where their trees coincide (one node; the
allreduce on 8 ranks per node), transmissions only and, from the library's
own ``tests/basics/colls/reduce`` and ``allreduce`` programs (``-P P -M
nodes -Q ppn -m bytes -o def -d Sequential -u fs``, which prints
picoseconds), with the reductions gamma(m) of ``gamma.txt``'s SUM_I column
(``[reduction.sum_int]``). Where they differ on purpose is in
docs/collectives.md ("libtaulop").
"""

from __future__ import annotations

import csv
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from commcost.cli.main import main
from commcost.collectives import Case, Collective, build, find
from commcost.errors import InputError
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.io.taulop_table import read_taulop_table
from commcost.models import PlacedSchedule
from commcost.models.taulop.dependency_engine import simulate_dependencies
from commcost.models.taulop.model import TauLop
from commcost.models.taulop.params import TauLopChannel, TauLopParams
from commcost.models.taulop.repair import repair_channel
from commcost.platform import Mapping

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "examples" / "params"
MACHINES = ("metropolis", "lusitania", "ciemat")
DATA = Path(__file__).parent / "data"
MiB = 1 << 20


def _quiet_load(path, strict=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_params(path, strict=strict)


@pytest.fixture(scope="module")
def metropolis():
    params = _quiet_load(PARAMS / "metropolis.toml").for_model("taulop")
    platform, _ = load_platform(ROOT / "examples" / "metropolis" / "platform.toml")
    return params, platform


def _reference_rows():
    with open(DATA / "libtaulop_metropolis.tsv") as f:
        lines = [line for line in f if not line.startswith("#")]
    names = ["kind", "name", "P", "ppn", "mapping", "nbytes", "tau", "libtaulop_s"]
    return [dict(zip(names, row)) for row in csv.reader(lines, delimiter="\t")]


ROWS = _reference_rows()


def test_reference_file_has_the_cases_the_issue_names():
    kinds = {(r["kind"], r["name"]) for r in ROWS}
    assert {("p2p", "SHM"), ("p2p", "IB"), ("p2p", "TCP"), ("bcast", "mpich.binomial"),
            ("allgather", "ompi.ring"), ("allreduce", "ompi.recursive_doubling"), ("reduce", "ompi.binomial"),
            ("reduce+sum_int", "ompi.binomial"), ("allreduce+sum_int", "ompi.recursive_doubling")} <= kinds
    assert any(r["kind"] == "allgather" and r["mapping"] == "roundrobin" for r in ROWS)
    assert len(ROWS) > 180


@pytest.mark.parametrize("row", [r for r in ROWS if r["kind"] == "p2p"],
                         ids=lambda r: f"{r['name']}-m{r['nbytes']}-tau{r['tau']}")
def test_single_transmission_equals_libtaulop(metropolis, row):
    params, _ = metropolis
    transfers = {"SHM": ("shm", ("shm", "shm")), "IB": ("ib", ("ib",)), "TCP": ("tcp", ("shm", "tcp", "shm"))}
    law = params.law(*transfers[row["name"]])
    assert law.time(float(row["nbytes"]), int(row["tau"])) == pytest.approx(float(row["libtaulop_s"]), rel=1e-9)


@pytest.mark.parametrize("row", [r for r in ROWS if r["kind"] != "p2p"],
                         ids=lambda r: f"{r['name']}-P{r['P']}-ppn{r['ppn']}-{r['mapping']}-m{r['nbytes']}")
def test_collective_equals_libtaulop(metropolis, row):
    """Rows ``reduce+sum_int`` / ``allreduce+sum_int`` include the reductions: libtaulop's own reduce and
    allreduce test programs against commcost with gamma(m) read from the same gamma.txt (SUM_I column),
    past its 4 MiB in whole chunks as libtaulop does (8 MiB rows)."""
    params, platform = metropolis
    nprocs, ppn = int(row["P"]), int(row["ppn"])
    nodes = -(-nprocs // ppn)
    mapping = (Mapping.sequential(platform, nprocs, ppn) if row["mapping"] == "sequential"
               else Mapping.round_robin(platform, nprocs, nodes))
    kind, _, op = row["kind"].partition("+")
    collective = Collective(kind)
    schedule = build(find(collective, row["name"]), Case(collective, nprocs, int(row["nbytes"]))).schedule
    model = TauLop(params)
    if op:
        model = model.with_reduction(_quiet_load(PARAMS / "metropolis.toml").reduction(op))
    got = model.total_time_s(PlacedSchedule.of(schedule, platform, mapping))
    assert got == pytest.approx(float(row["libtaulop_s"]), rel=1e-6)


def test_predict_binomial_1024_ranks_on_metropolis_equals_libtaulop(capsys):
    """The issue's must-show: the command runs on the published tables (warnings allowed) and agrees."""
    code = main(["predict", "--collective", "bcast", "--algorithm", "mpich.binomial", "--procs", "1024",
                 "--ppn", "8", "--nbytes", "64KiB", "--params", str(PARAMS / "metropolis.toml"),
                 "--platform", str(ROOT / "examples" / "metropolis" / "platform.toml"), "--model", "taulop",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0
    import json
    assert json.loads(out)["time_s"] == pytest.approx(3.0014125e-4, rel=1e-6)  # libtaulop: 3.00141245e-4
    assert err.count("commcost: warning:") == 4 and "Traceback" not in err  # SHM, IB, TCP and gamma.txt


# --- beyond the table -------------------------------------------------------------------------------------

def _table_to_4mib(**rules) -> TauLopChannel:
    m = np.array([1.0, 1024.0, 65536.0, 4 * MiB])
    o = np.array([1e-6, 1.1e-6, 2e-6, 5e-5])
    L1 = np.array([2e-7, 1e-6, 3e-5, 1.2e-3])
    return TauLopChannel(m, o, np.column_stack([L1, 1.5 * L1]), **rules)


def test_16_mib_on_a_table_ending_at_4_mib_is_four_times_4_mib():
    """Paper 000 section 3, L(A m, tau) = A L(m, tau), as whole chunks of the last size (libtaulop too)."""
    law = TauLopParams({"x": _table_to_4mib()}).law("x", ("x",))
    t4 = law.time(4.0 * MiB, 1)
    assert t4 == pytest.approx(5e-5 + 1.2e-3)
    assert law.time(16.0 * MiB, 1) == pytest.approx(4 * t4, rel=1e-12)
    assert law.times(np.array([16.0 * MiB]), np.array([1]))[0] == pytest.approx(4 * t4, rel=1e-12)
    # the remainder priced from the table: 2 chunks + T(1024)
    assert law.time(8.0 * MiB + 1024, 1) == pytest.approx(2 * t4 + 1.1e-6 + 1e-6, rel=1e-12)
    assert law.time(16.0 * MiB, 2) == pytest.approx(4 * (5e-5 + 1.8e-3), rel=1e-12)


def test_the_compiled_engine_prices_past_the_table_in_chunks():
    """The dependency engine (compiled) follows the same rule: one lone transmission of 16 MiB."""
    law = TauLopParams({"x": _table_to_4mib()}).law("x", ("x",))
    run = simulate_dependencies(np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([16.0 * MiB]),
                                np.array([0]), np.array([1]), 2, np.zeros(2, np.int64), np.zeros(0, np.int64), [law])
    assert run.end_s[0] == pytest.approx(4 * law.time(4.0 * MiB, 1), rel=1e-12)


def test_slope_rule_extends_the_last_segment():
    law = TauLopParams({"x": _table_to_4mib()}, beyond_m="slope").law("x", ("x",))
    slope = ((5e-5 + 1.2e-3) - (2e-6 + 3e-5)) / (4 * MiB - 65536)
    assert law.time(16.0 * MiB, 1) == pytest.approx(5e-5 + 1.2e-3 + slope * 12 * MiB, rel=1e-9)


def test_beyond_tau_hold_keeps_tau_max_and_linear_grows():
    table = _table_to_4mib()
    hold = TauLopParams({"x": table}, beyond_tau="hold").law("x", ("x",))
    linear = TauLopParams({"x": table}).law("x", ("x",))
    m = 65536.0
    assert hold.time(m, 9) == hold.time(m, 2) == pytest.approx(2e-6 + 4.5e-5)
    assert linear.time(m, 4) == pytest.approx(2e-6 + 4.5e-5 * 2)
    assert np.allclose(hold.times(np.full(3, m), np.array([2, 5, 40])), hold.time(m, 2))


def test_chunks_refuse_a_channel_whose_tables_end_at_different_sizes():
    short = TauLopChannel([1.0, 1024.0], [1e-6, 1e-6], [[1e-7], [1e-6]])
    with pytest.raises(InputError, match="end at different sizes"):
        TauLopParams({"tcp": _table_to_4mib(), "shm": short}).law("tcp", ("shm", "tcp", "shm"))
    TauLopParams({"tcp": _table_to_4mib(), "shm": short}, beyond_m="slope").law("tcp", ("shm", "tcp", "shm"))


def test_rules_are_read_from_the_file_and_echoed_by_explain(tmp_path, capsys):
    shutil.copytree(PARAMS / "metropolis", tmp_path / "metropolis")
    text = (PARAMS / "metropolis.toml").read_text().replace('beyond_tau = "hold"', 'beyond_tau = "linear"')
    (tmp_path / "m.toml").write_text(text.replace('beyond_m = "chunks"', 'beyond_m = "slope"'))
    params = _quiet_load(tmp_path / "m.toml").for_model("taulop")
    assert (params.beyond_m, params.beyond_tau) == ("slope", "linear")
    code = main(["predict", "--collective", "bcast", "--algorithm", "mpich.binomial", "--procs", "16",
                 "--nbytes", "8MiB", "--params", str(tmp_path / "m.toml"), "--platform",
                 str(ROOT / "examples" / "metropolis" / "platform.toml"), "--model", "taulop", "--explain"])
    out = capsys.readouterr().out
    assert code == 0
    assert "beyond their range: m past the last size along the last segment, tau past tau_max grows" in out


def test_an_unknown_rule_is_one_line_naming_the_key(tmp_path, capsys):
    (tmp_path / "p.toml").write_text('[taulop]\nbeyond_tau = "clamp"\n[taulop.shm]\nm = [0]\no_s = [1e-7]\nL_s = [[1e-6]]\n')
    code = main(["predict", "--collective", "bcast", "--procs", "2", "--nbytes", "1", "--params",
                 str(tmp_path / "p.toml"), "--platform", str(ROOT / "examples" / "metropolis" / "platform.toml"),
                 "--model", "taulop"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "p.toml" in err and "beyond_tau" in err and "'hold'" in err


# --- measured tables: warnings, strict, repair ------------------------------------------------------------

@pytest.mark.parametrize("machine", MACHINES)
def test_published_tables_load_with_one_warning_per_table(machine):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        params = load_params(PARAMS / f"{machine}.toml")
    lines = [str(w.message) for w in caught]
    assert len(lines) == 4 and params.warnings == lines
    for channel, line in zip(("SHM", "IB", "TCP"), lines):
        assert f"{machine}/{channel}.txt" in line and "cells break" in line and "worst at line" in line
    # the reduction times (gamma.txt) are measured too: one size below the one before, loaded as measured
    assert f"{machine}/gamma.txt" in lines[3] and "worst at line" in lines[3] and "strict refuses" in lines[3]


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("channel", ("SHM", "IB", "TCP"))
def test_strict_refuses_each_published_table_naming_its_worst_cell(machine, channel):
    path = PARAMS / machine / f"{channel}.txt"
    loose = read_taulop_table(path, strict=False)
    worst = loose.constraint_violations()[0]
    with pytest.raises(InputError) as info:
        read_taulop_table(path, strict=True)
    assert info.value.source == str(path) and info.value.where.startswith("line ")
    assert worst.what in info.value.message


def test_strict_option_and_key_refuse_with_the_worst_cell(tmp_path, capsys):
    argv = ["predict", "--collective", "bcast", "--procs", "16", "--nbytes", "1KiB",
            "--platform", str(ROOT / "examples" / "metropolis" / "platform.toml"), "--model", "taulop"]
    code = main([*argv, "--params", str(PARAMS / "metropolis.toml"), "--strict"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "metropolis/SHM.txt:line 6: L(m=128, tau=5)" in err
    shutil.copytree(PARAMS / "metropolis", tmp_path / "metropolis")
    text = (PARAMS / "metropolis.toml").read_text().replace("[taulop]\n", "[taulop]\nstrict = true\n")
    (tmp_path / "m.toml").write_text(text)
    code = main([*argv, "--params", str(tmp_path / "m.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "SHM.txt:line 6" in err


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("channel", ("SHM", "IB", "TCP"))
def test_repair_projects_every_published_table_onto_the_constraints(machine, channel):
    table = read_taulop_table(PARAMS / machine / f"{channel}.txt", strict=False)
    repair = repair_channel(table)
    assert repair.after.violations() == []
    assert table.constraint_violations()
    summary = repair.summary()
    assert 0 < summary["moved"] < summary["cells"]
    assert repair_channel(repair.after).summary()["moved"] == 0  # a projection: repairing again moves nothing


def test_repair_leaves_a_valid_table_alone():
    m = np.array([1.0, 1024.0, 65536.0])
    L1 = np.array([1e-7, 1e-6, 3e-5])
    table = TauLopChannel(m, [1e-6, 1.1e-6, 2e-6], np.column_stack([L1, 1.5 * L1]))
    repair = repair_channel(table)
    assert repair.summary()["moved"] == 0
    assert np.array_equal(repair.after.L_s, table.L_s)


def test_repair_command_on_a_table_and_on_a_parameter_file(tmp_path, capsys):
    out = tmp_path / "SHM.txt"
    assert main(["params", "repair", str(PARAMS / "metropolis" / "SHM.txt"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "cells moved" in text and "largest" in text
    assert read_taulop_table(out, strict=True).violations() == []
    toml_out = tmp_path / "metropolis-repaired.toml"
    assert main(["params", "repair", str(PARAMS / "metropolis.toml"), "-o", str(toml_out), "--format", "json"]) == 0
    import json
    report = json.loads(capsys.readouterr().out)
    assert set(report["tables"]) == {"[taulop.shm]", "[taulop.ib]", "[taulop.tcp]", "[reduction.sum_int]"}
    assert report["tables"]["[reduction.sum_int]"]["moved"] == 2  # 4 B and 64 B pooled to their mean
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repaired = load_params(toml_out, strict=True)
    assert repaired.for_model("taulop").beyond_tau == "hold"
    gamma = repaired.reduction("sum_int")
    assert gamma.times([1 << 20])[0] == pytest.approx(5.41771e-4)  # libtaulop's g(1 MiB), untouched


def test_repair_refuses_to_overwrite_its_input(capsys):
    path = PARAMS / "metropolis" / "SHM.txt"
    assert main(["params", "repair", str(path), "-o", str(path)]) == 2
    assert "--out" in capsys.readouterr().err


@pytest.mark.parametrize("machine", MACHINES)
def test_engines_stay_non_negative_and_finite_on_unrepaired_tables(machine):
    """Tables whose T(m, tau) falls as m grows: no piece may last less than zero, nothing NaN."""
    params = _quiet_load(PARAMS / f"{machine}.toml").for_model("taulop")
    platform, _ = load_platform(ROOT / "examples" / machine / "platform.toml")
    model = TauLop(params)
    for name, nprocs, nbytes in (("mpich.binomial", 24, 3000), ("ompi.pipeline", 16, 200_000),
                                 ("ompi.scatter_allgather_ring", 12, 5 * MiB + 7), ("ompi.knomial", 40, 129)):
        algorithm = find(Collective.BCAST, name)
        schedule = build(algorithm, Case(Collective.BCAST, nprocs, nbytes)).schedule
        for mapping in (Mapping.sequential(platform, nprocs, 8), Mapping.round_robin(platform, nprocs, 3)):
            for sched in (schedule, schedule.without_dependencies()):
                placed = PlacedSchedule.of(sched, platform, mapping)
                cost = model.price(placed, explain=True)
                assert np.isfinite(cost.time_s) and cost.time_s > 0
                for piece in cost.explain["timeline"]:
                    assert piece["end_s"] >= piece["start_s"] and np.isfinite(piece["end_s"])
                    assert piece["nbytes"] >= 0
