"""The documentation's examples are real: every TOML block parses, and the parameter blocks load."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from commcost.io.params_file import load_params

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOC = Path(__file__).resolve().parent.parent / "docs" / "file-formats.md"
BLOCKS = re.findall(r"```toml\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_format_doc_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("block", BLOCKS)
def test_every_toml_example_parses(block):
    tomllib.loads(block)


@pytest.mark.parametrize("model", ["hockney", "loggp", "loggph", "hloggp", "taulop", "ompi_bcast_model"])
def test_parameter_examples_load_under_their_model(tmp_path, model):
    found = [b for b in BLOCKS if re.search(rf"^\[{model}[.\]]", b, flags=re.M) and "file =" not in b]
    assert found
    path = tmp_path / "params.toml"
    path.write_text("\n".join(found))
    load_params(path).for_model(model)
