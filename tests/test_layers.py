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


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module -> modules it imports), or None: a depth-first search that
    keeps the path it is on."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_the_cycle_finder_finds_a_cycle_and_no_false_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_module_of_commcost_imports_itself_back():
    """Issue 16 item 10: no import cycle inside commcost, imports under TYPE_CHECKING and inside functions
    included (commands import cli.registry and cli.options, never main; platform does not import mapping)."""
    import grimp

    g = grimp.build_graph("commcost")
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


# one concept per module (issue 16 item 10): a module past this many lines is split by concept, not allowed in
MAX_LINES = 500


def test_modules_stay_small():
    over = {}
    for path in PACKAGE.rglob("*.py"):
        name = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            over[name] = lines
    assert not over, f"modules over {MAX_LINES} lines: {over}"


# what marks a test module as starting real MPI ranks (tests/conftest.py runs those one at a time)
LAUNCHES_MPI = ("@needs_mpi", "@needs_netns", "@needs_slurm", "ompi_monitoring", "find_mpirun", "mpiexec", "MPIRUN")


def test_every_module_that_starts_mpi_ranks_runs_in_the_one_at_a_time_group():
    """Two real-MPI tests at once on a 2-core machine break each other's budgets: every test module that
    launches ranks is in conftest.REAL_MPI_MODULES (and every listed module exists)."""
    import conftest

    tests = ROOT / "tests"
    launching = {p.stem for p in tests.glob("test_*.py")
                 if p.name != Path(__file__).name and any(s in p.read_text() for s in LAUNCHES_MPI)}
    assert launching - conftest.REAL_MPI_MODULES == set()
    assert {m for m in conftest.REAL_MPI_MODULES if not (tests / f"{m}.py").is_file()} == set()
    assert conftest.TWO_NODE_MODULES <= conftest.REAL_MPI_MODULES


CLI = PACKAGE / "cli"
CLI_MAX_LINES = 3500  # issue 39: the command line parses and calls the workflows; it does not do the work
CLI_MAX_FUNCTION_LINES = 60


def test_nothing_outside_the_command_line_imports_it():
    """Issue 39: the workflows and the API sit below cli/; an import of commcost.cli anywhere else (inside a
    function too) would run a layer back up. ``__main__`` starts the command line, and may."""
    importers = []
    for path in PACKAGE.rglob("*.py"):
        if CLI in path.parents or path.name == "__main__.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "commcost.cli" or n.startswith("commcost.cli.") for n in names):
                importers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not importers, f"modules below cli/ that import it: {importers}"


def test_the_command_line_is_a_thin_layer():
    """Issue 39: cli/ under 3,500 lines in all, and no function in it longer than 60 lines (the work is in
    commcost.workflows)."""
    total, long = 0, []
    for path in sorted(CLI.glob("*.py")):
        text = path.read_text()
        total += len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > CLI_MAX_FUNCTION_LINES:
                    long.append(f"{path.name}:{node.name} ({length} lines)")
    assert total < CLI_MAX_LINES, f"cli/ has {total} lines"
    assert not long, f"functions in cli/ over {CLI_MAX_FUNCTION_LINES} lines: {long}"
