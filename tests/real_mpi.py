"""What the tests that start a real MPI share: the mpirun to use, the skip mark, and an environment that
lets ``python -m commcost`` under mpirun import this checkout's sources."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
_beside = Path(sys.executable).parent / "mpirun"
MPIRUN = str(_beside) if _beside.is_file() else shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(not (HAVE_MPI4PY and MPIRUN), reason="needs mpi4py and mpirun")
ENV = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
