"""MPICH reads commcost's selection JSON (issue 5 item 3), where an MPICH is at hand.

Set ``COMMCOST_MPICH_BIN`` to a folder with MPICH's ``mpiexec`` and a
``python`` that has mpi4py built on it (e.g. ``python3 -m venv /tmp/mpichenv
&& /tmp/mpichenv/bin/pip install mpich mpi4py``: MPICH 5.0.2); skipped
otherwise. Shown: MPICH parses the file (an unknown key aborts at
MPI_Init), and a file holding only bcast is not enough, since it replaces
MPICH's whole built-in selection (hence ``write_mpich_json(base=...)``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from commcost.collectives import Collective, find
from commcost.io.mpich_json import write_mpich_json
from commcost.selection.decision import Choice, Rule, Selection

BIN = Path(os.environ.get("COMMCOST_MPICH_BIN", "/nonexistent"))
pytestmark = pytest.mark.skipif(not (BIN / "mpiexec").is_file() or not (BIN / "python").is_file(),
                                reason="set COMMCOST_MPICH_BIN to an MPICH bin folder with python + mpi4py")
PROGRAM = "import mpi4py.MPI as M; b = bytearray(100); M.COMM_WORLD.Bcast([b, M.BYTE], root=0)"


def _run(selection_file: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=str(selection_file))
    return subprocess.run([str(BIN / "mpiexec"), "-n", "2", str(BIN / "python"), "-c", PROGRAM], env=env,
                          capture_output=True, text=True, timeout=120)


def test_mpich_parses_the_file_and_needs_every_collective(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"collective=bcast": {"bogus_key<=3": {}}}')
    assert "unknown key bogus_key<=3" in _run(bad).stderr
    sel = Selection(Collective.BCAST, "mpich", (Rule(1, 4, 0, 1 << 20, Choice(find(Collective.BCAST, "mpich.binomial"))),))
    only_bcast = tmp_path / "bcast.json"
    write_mpich_json([sel], only_bcast)
    done = _run(only_bcast)
    assert done.returncode != 0 and "unknown key" not in done.stderr  # parsed, then no container for another call
