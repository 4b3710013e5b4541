"""The command layer: main loads every command module, --help lists every command, and a command that runs
another (tune runs calibrate and verify) goes through the registry, not main."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from commcost.cli import main as cli_main
from commcost.cli.registry import COMMANDS

CLI = Path(cli_main.__file__).parent


def test_main_loads_every_command_module():
    modules = sorted(p.stem.removesuffix("_command") for p in CLI.glob("*_command.py") if "@command(" in p.read_text())
    assert sorted(cli_main.COMMAND_MODULES) == modules


def test_help_lists_every_registered_command():
    out = subprocess.run([sys.executable, "-m", "commcost", "--help"], capture_output=True, text=True, check=True).stdout
    cli_main.build_parser()
    assert len(COMMANDS) >= 17
    for name in COMMANDS:
        assert f"\n    {name} " in out or f"\n    {name}\n" in out, name


def test_a_bad_option_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "-m", "commcost", "predict", "--nonsense"], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_calibrate_and_tune_dry_runs_print_the_launch_lines_and_write_nothing(tmp_path, capsys):
    """Issue 16 item 8: the plan and the exact launch lines (the embedded mpirun, the tcp run's btl, the
    worker with its deadline), exit 0, and no output folder."""
    from commcost.cli.main import main

    out = tmp_path / "cal"
    assert main(["calibrate", "--procs", "2", "--out", str(out), "--budget", "60", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "dry run: 2 runs" in text and "--mca btl tcp,self" in text and "commcost.launch.mpi_worker" in text
    assert text.count("--deadline-s") == 2 and not out.exists()
    assert main(["tune", "--procs", "2", "--out", str(out), "--budget", "180", "--dry-run",
                 "--channel-launcher", "shm=mpirun -np 2", "--channel-launcher", "tcp=mpirun -np 2 --host a,b"]) == 0
    text = capsys.readouterr().out
    assert "mpirun -np 2 --host a,b" in text and "OMPI_MCA_btl=tcp,self" in text and not out.exists()


def _parsers(parser, path=()):
    """Every parser under ``parser`` (commands and their actions), with its command path."""
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_command_and_action_prints_its_help():
    """``commcost tune --help`` once died on a '%' in a help text (argparse formats help with %)."""
    paths = []
    for path, parser in _parsers(cli_main.build_parser()):
        text = parser.format_help()
        assert text.startswith("usage: commcost"), path
        paths.append(path)
    assert ("tune",) in paths and ("rules", "diff") in paths and len(paths) > len(COMMANDS)
