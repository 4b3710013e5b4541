"""``--format json`` everywhere (issue 16 item 3): every command that prints a result takes it, and prints one
document whose top-level keys are those docs/json-output.md promises (the table there is read here)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from commcost.cli import main as cli_main
from commcost.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
DOC = ROOT / "docs" / "json-output.md"
CLUSTER = ["--platform", str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"),
           "--model", "taulop"]


def promised() -> dict[str, set[str]]:
    """The doc's table: command (as written there) -> its top-level keys."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"^\| `([^`]+)`[^|]* \| (.+) \|$", line)
        if m and "`" in m.group(2):
            rows[line.split("|")[1].strip()] = set(re.findall(r"`([a-z_]+)`", m.group(2)))
    return rows


def leaf_parsers(parser, path=()):
    """The parsers that run something: commands, and the actions of commands that have them."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from leaf_parsers(sub, (*path, name))


def test_every_command_takes_format_json():
    leaves = list(leaf_parsers(cli_main.build_parser()))
    assert len(leaves) > 20
    for path, parser in leaves:
        fmt = [a for a in parser._actions if "--format" in a.option_strings]
        assert fmt and "json" in fmt[0].choices, f"commcost {' '.join(path)} has no --format json"


def test_the_doc_names_every_command():
    documented = " ".join(promised())
    for path, _ in leaf_parsers(cli_main.build_parser()):
        assert path[0] in documented, path


def run_json(capsys, *argv: str) -> dict:
    code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def keys(row: str) -> set[str]:
    return promised()[row]


def test_documented_keys_are_printed(capsys, tmp_path):
    doc = run_json(capsys, "algorithms", "--collective", "bcast")
    assert keys("`algorithms`") <= set(doc)
    binomial = next(a for a in doc["algorithms"] if a["key"] == "ompi.binomial")
    assert binomial["id"] == 6 and binomial["component"] == "tuned"
    assert binomial["forced_by"] == "coll_tuned_bcast_algorithm=6"
    assert binomial["params"][0]["name"] == "segsize" and binomial["params"][0]["default"] == 0
    han = next(a for a in doc["algorithms"] if a["key"] == "ompi.han")
    assert han["component"] == "han" and han["forced_by"] is None
    assert {a["library"] for a in doc["algorithms"]} == {"ompi", "mpich"}

    doc = run_json(capsys, "models")
    assert keys("`models`") <= set(doc)
    assert {m["name"] for m in doc["models"]} >= {"hockney", "taulop", "ompi_bcast_model"}

    base = ["predict", "--collective", "bcast", *CLUSTER]
    one = run_json(capsys, *base, "--algorithm", "6", "--procs", "8", "--nbytes", "1K")
    assert keys("`predict --collective` (one point, one algorithm)") <= set(one)
    every = run_json(capsys, *base, "--all-algorithms", "--procs", "8", "--nbytes", "1K")
    assert keys("`predict --collective --all-algorithms` (one point)") <= set(every)
    sweep = run_json(capsys, *base, "--algorithm", "6", "--procs", "8", "--nbytes", "1K..4K")
    assert keys("`predict --collective` (a sweep)") <= set(sweep)
    assert sweep["points"][0]["times_s"]["ompi.binomial"] == pytest.approx(one["time_s"], rel=1e-12)

    goal = run_json(capsys, "export-goal", "--collective", "bcast", "--algorithm", "6", "--procs", "4",
                    "--nbytes", "1K", "-o", str(tmp_path / "b.goal"))
    receives = re.findall(r"^r\d+: recv ", (tmp_path / "b.goal").read_text(), re.M)
    assert keys("`export-goal`") <= set(goal) and len(receives) == 3

    part = run_json(capsys, "partition", "--layout", str(EX / "paper000" / "fig8_layout.txt"), "--speeds",
                    str(EX / "paper000" / "fig8_speeds.txt"), "--n", "32", "-o", str(tmp_path / "p.txt"))
    assert keys("`partition`") <= set(part) and sum(part["column_widths"]) == 32

    plan = run_json(capsys, "calibrate", "--procs", "2", "--out", str(tmp_path / "cal"), "--budget", "60",
                    "--dry-run")
    assert keys("`calibrate --dry-run`") <= set(plan) and plan["runs"] and not (tmp_path / "cal").exists()
    assert all("commcost.launch.mpi_worker" in r["command"] for r in plan["runs"])

    osu = sorted(str(p) for p in (ROOT / "tests" / "data" / "osu" / "bcast").glob("*.out"))
    imported = run_json(capsys, "import", "osu", *osu, "--ppn", "32", "--name-pattern",
                        "{algorithm}_{nprocs}ranks_run{run}.out", "-o", str(tmp_path / "m.csv"))
    assert keys("`import osu` / `import imb`") <= set(imported)
    assert imported["appended"] == imported["points"] == 44 and imported["collectives"] == ["bcast"]


def test_json_keeps_standard_output_clean_of_progress(capsys, tmp_path):
    """calibrate's plan lines go to standard error with --format json: standard output parses whole."""
    code = main(["calibrate", "--procs", "2", "--out", str(tmp_path / "c"), "--budget", "60", "--dry-run",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0 and "dry run:" in err and json.loads(out)["dry_run"] is True
