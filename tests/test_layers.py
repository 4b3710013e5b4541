"""DESIGN.md's layer rule, enforced: imports point down only (import-linter contracts in pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

from importlinter import cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "commcost"


def test_imports_point_down_only():
    assert cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_every_package_is_in_a_layer():
    """A new top-level package must be placed in a layer, or the contract would not see it."""
    config = (ROOT / "pyproject.toml").read_text()
    for child in PACKAGE.iterdir():
        name = child.stem if child.suffix == ".py" else child.name
        if child.name.startswith("_") or child.name == "py.typed" or child.name == "__pycache__":
            continue
        assert f"commcost.{name}" in config, f"commcost.{name} is in no layer of pyproject.toml"


BENCHMARKS = PACKAGE / "calibration" / "mpi_benchmarks.py"


def test_mpi4py_is_imported_nowhere_outside_the_benchmarks():
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "mpi4py" for n in names):
                importers.add(path)
    assert importers == {BENCHMARKS}, f"only {BENCHMARKS.relative_to(ROOT)} may import mpi4py"
