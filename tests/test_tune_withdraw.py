"""Rules the measured check found slower than Open MPI's default are withdrawn from the files tune deploys
(issue 12: check every output a user deploys against a real run)."""

from __future__ import annotations

import argparse
import json

from commcost.workflows.tune_files import withdraw_after_check, write_ompi_files
from commcost.collectives import Collective, find
from commcost.io.deployed_rules import DeployedRules
from commcost.io.ompi_rules_read import read_ompi_rules
from commcost.selection.decision import Choice, compress
from commcost.selection.withdraw import withdraw_measured_slower

LINEAR = Choice(find(Collective.BCAST, "basic_linear"), {})
CHAIN = Choice(find(Collective.BCAST, "chain"), {"segsize": 8192, "fanout": 4})
RD = Choice(find(Collective.ALLREDUCE, "recursive_doubling"), {})


def _selections():
    bcast = compress(Collective.BCAST, "ompi", [2, 4], [1, 1024, 1 << 20],
                     [[LINEAR, None, CHAIN], [LINEAR, LINEAR, CHAIN]], "test")
    allreduce = compress(Collective.ALLREDUCE, "ompi", [2], [1, 1 << 20], [[RD, RD]], "test")
    return [bcast, allreduce]


def test_a_rule_measured_slower_goes_and_the_others_stay():
    """bcast has rules P 2..3: linear 1..1023 B, chain 1 MiB; P 4: linear 1 B..1 MiB - 1, chain 1 MiB (a
    rule ends at the last size priced). A slower point at (P 2, 1 MiB) takes out P 2..3's chain rule only; 'same' and 'faster' points and another
    collective's rules stay; a point no rule covers withdraws nothing."""
    selections = _selections()
    points = [{"collective": "bcast", "nprocs": 2, "nbytes": 1 << 20, "verdict": "slower"},
              {"collective": "bcast", "nprocs": 4, "nbytes": 100, "verdict": "same"},
              {"collective": "bcast", "nprocs": 4, "nbytes": 1 << 20, "verdict": "faster"},
              {"collective": "bcast", "nprocs": 2, "nbytes": 2000, "verdict": "slower"},  # the default's gap
              {"collective": "allreduce", "nprocs": 2, "nbytes": 10, "verdict": "not measured"}]
    kept, gone = withdraw_measured_slower(selections, points)
    assert [(s.collective, r.procs_lo, r.nbytes_lo, r.choice) for s, r, _ in gone] == \
        [(Collective.BCAST, 2, 1 << 20, CHAIN)]
    assert kept[0].choice(2, 1 << 20) is None and kept[0].choice(3, 1 << 20) is None
    assert kept[0].choice(2, 10) == LINEAR and kept[0].choice(4, 1 << 20) == CHAIN
    assert kept[1] == selections[1]


def test_tune_rewrites_its_files_without_the_withdrawn_rules(tmp_path, capsys):
    """After this run's check the files are written again: tuned's rules lose the withdrawn rule (the default
    runs there), the provenance says how many went, and report.json gets one row per rule; without a check in
    this run (a verify.json left by an earlier one) nothing changes."""
    selections = _selections()
    write_ompi_files(tmp_path, selections, [], ["made by a test"])
    (tmp_path / "verify.json").write_text(json.dumps({"points": [
        {"collective": "bcast", "nprocs": 2, "nbytes": 1 << 20, "verdict": "slower", "measured_gain": 0.58,
         "predicted_gain": 1.35}]}))
    args = argparse.Namespace(out=tmp_path, deployed=(selections, [], ["made by a test"]), warnings=[])
    assert withdraw_after_check(args, checked=False) == []
    assert read_ompi_rules(tmp_path / "ompi-rules.conf").decide_call(Collective.BCAST, 2, 1 << 20) is not None
    rows = withdraw_after_check(args, checked=True)
    assert rows == [{"collective": "bcast", "procs": [2, 3], "nbytes": [1 << 20, 1 << 20], "algorithm": CHAIN.label,
                     "measured_at": {"nprocs": 2, "nbytes": 1 << 20}, "measured_gain": 0.58,
                     "predicted_gain": 1.35}]
    out = capsys.readouterr().out
    assert "withdrawn: 1 rule(s)" in out and "0.58x" in out
    rules = read_ompi_rules(tmp_path / "ompi-rules.conf")
    assert rules.decide_call(Collective.BCAST, 2, 1 << 20) is None  # the fixed decision again
    assert rules.decide_call(Collective.BCAST, 4, 1 << 20) is not None
    text = (tmp_path / "ompi-rules.conf").read_text()
    assert "made by a test" in text and "1 rules withdrawn after the measured check" in text
    deployed = DeployedRules.load(tmp_path / "mca-params.conf")
    assert deployed.runs(Collective.BCAST, 2, 1 << 20, nnodes=1).label.startswith("fixed:")
    assert args.warnings and "withdrawn" in args.warnings[0]


def test_han_configuration_measured_slower_goes_back_to_hans_defaults(tmp_path, capsys):
    """On two nodes the check measured han under the deployed configuration (adapt between the leaders) slower
    than Open MPI's default: the settings leave mca-params.conf (han's defaults again), a configuration of
    another collective stays, and report.json says so."""
    from commcost.io.han_rules import read_mca_params
    from commcost.selection.han_config import HanConfig

    han = find(Collective.BCAST, "ompi.han")
    defaults = {"segsize": 65536, "up": 0, "low": 0}
    bcast_config = HanConfig(Collective.BCAST, {"segsize": 262144, "up": 1, "low": 0}, defaults, 1.0, 1.1)
    reduce_config = HanConfig(Collective.REDUCE, {"segsize": 16384}, {"segsize": 65536}, 1.0, 1.2)
    pick = bcast_config.apply(Choice(han, han.resolve_params()))
    selections = [compress(Collective.BCAST, "ompi", [4], [1, 1 << 20], [[pick, None]], "test")]
    write_ompi_files(tmp_path, selections, [bcast_config, reduce_config], ["test"])
    conf = read_mca_params(tmp_path / "mca-params.conf")
    assert conf["coll_han_bcast_up_module"][1] == "1" and conf["coll_han_reduce_segsize"][1] == "16384"
    (tmp_path / "verify.json").write_text(json.dumps({"points": [
        {"collective": "bcast", "nprocs": 4, "nbytes": 2048, "verdict": "slower", "measured_gain": 0.56,
         "rules_run": "han rule: han (segsize=262144, up=1)", "predicted_gain": 1.0}]}))
    args = argparse.Namespace(out=tmp_path, deployed=(selections, [bcast_config, reduce_config], ["test"]),
                              warnings=[])
    rows = withdraw_after_check(args, checked=True)
    assert {"collective": "bcast", "han_config": {"segsize": 262144, "up": 1}} in rows
    conf = read_mca_params(tmp_path / "mca-params.conf")
    assert not any(name.startswith("coll_han_bcast_") and name != "coll_han_bcast_" for name in conf
                   if name not in ("coll_han_use_dynamic_file_rules", "coll_han_dynamic_rules_filename"))
    assert conf["coll_han_reduce_segsize"][1] == "16384"
    assert "han's configuration back to its defaults for bcast" in (tmp_path / "mca-params.conf").read_text()
    assert "coll/han's configuration for bcast" in capsys.readouterr().out


def test_after_a_han_reset_the_points_measured_under_it_run_hans_pick_unconfigured(tmp_path):
    """CI's case on two nodes: han's bcast configured with 16 KiB segments, the check measured 2 MiB slower
    under it, 128 B the same and han_simple at 128 KiB faster. After the reset han's picks stay and run under
    han's defaults (their labels lose the configuration), the slower point's rule goes whole; the tests'
    helper (tests/withdrawal_helpers.py) says which point is which."""
    from commcost.selection.han_config import HanConfig
    from withdrawal_helpers import withdrawn_at, without_configuration

    config = HanConfig(Collective.BCAST, {"segsize": 16384}, {"segsize": 65536}, 1.0, 1.1)
    picks = [config.apply(Choice(a, a.resolve_params()))
             for a in (find(Collective.BCAST, "ompi.han"), find(Collective.BCAST, "ompi.han_simple"),
                       find(Collective.BCAST, "ompi.han"))]
    sizes = [128, 131072, 2097152]
    selections = [compress(Collective.BCAST, "ompi", [4], sizes, [picks], "test")]
    write_ompi_files(tmp_path, selections, [config], ["test"])
    before = DeployedRules.load(tmp_path / "mca-params.conf")
    verdicts = ("same", "faster", "slower")
    points = [{"collective": "bcast", "nprocs": 4, "nbytes": n, "verdict": v,
               "rules_run": before.runs(Collective.BCAST, 4, n, 2).label} for n, v in zip(sizes, verdicts)]
    assert points[0]["rules_run"] == "han rule: han (segsize=16384)"
    (tmp_path / "verify.json").write_text(json.dumps({"points": points}))
    args = argparse.Namespace(out=tmp_path, deployed=(selections, [config], ["test"]), warnings=[])
    report = {"withdrawn": withdraw_after_check(args, checked=True)}
    now = DeployedRules.load(tmp_path / "mca-params.conf")
    assert not now.han_tunables.get("bcast")
    assert [withdrawn_at(report, p) for p in points] == ["reset", "reset", "slower"]
    for p in points[:2]:
        assert now.runs(Collective.BCAST, 4, p["nbytes"], 2).label == without_configuration(p["rules_run"])
    assert now.runs(Collective.BCAST, 4, 128, 2).label == "han rule: han"
    gone = now.runs(Collective.BCAST, 4, 2097152, 2)
    assert gone.choice.algorithm.key == "ompi.han" and "segsize" not in gone.label  # han's own, unconfigured
