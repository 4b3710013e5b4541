"""docs/api.md's code blocks are the public API's acceptance tests (issue 39): run in order, in one session,
in a folder that sees the repository's examples/ and tests/data/ (what they write stays there)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "api.md"


def code_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_code_blocks_are_found():
    assert code_blocks("x\n```python\na = 1\n```\n```sh\nls\n```\n```python\nb = 2\n```\n") == ["a = 1\n", "b = 2\n"]


def test_every_code_block_of_the_api_tutorial_runs(tmp_path, capsys):
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    blocks = code_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 8
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        scope: dict = {"__name__": "__tutorial__"}
        for number, block in enumerate(blocks, 1):
            try:
                exec(compile(block, f"docs/api.md block {number}", "exec"), scope)
            except Exception as exc:  # name the block that failed, then fail
                pytest.fail(f"docs/api.md block {number} failed: {type(exc).__name__}: {exc}\n{block}")
    finally:
        os.chdir(here)
    out = capsys.readouterr().out
    assert "2||T^1(166)" in out and (tmp_path / "bcast-models.png").stat().st_size > 10_000
    assert (tmp_path / "ompi-rules.conf").is_file() and "broken-rules.conf" in out
    assert "points to measure in 60" in out  # the test extras bring mpi4py and mpirun: the plan, not the error


def test_the_readme_links_the_api_tutorial():
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:40])
    assert "docs/api.md" in first_screen


def test_the_api_names_load_from_the_package():
    import commcost
    from commcost import api

    assert all(getattr(commcost, name) is getattr(api, name) for name in api.__all__)
    with pytest.raises(AttributeError):
        commcost.no_such_name  # noqa: B018
