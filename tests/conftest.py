"""Test-suite wiring: the tests that start real MPI ranks run one at a time.

The README's test command runs the model-only tests on every core
(pytest-xdist, ``-n auto -m "not real_mpi"``), then the tests that launch
real MPI ranks in a second pytest without xdist: Open MPI's ranks spin while
they wait, and two such tests at once on a 2-core machine would slow each
other down and break their budgets. Every test of the modules in
:data:`REAL_MPI_MODULES` carries the ``real_mpi`` mark (and an xdist group,
for a ``--dist loadgroup`` run; pytest-xdist 3.8 left our items' node ids
without the group's suffix when checked, so the separate step is what keeps
them one at a time). tests/test_layers.py checks that a module launching
MPI is in the list.

The modules of :data:`TWO_NODE_MODULES` (real MPI on a cluster of network
namespaces, one under Slurm: root, ``ip``, ``tc``, slurmd) also carry the
``two_nodes`` mark: the README's test command leaves them out
(``-m "real_mpi and not two_nodes"``, about 6 minutes of real MPI on 2
cores), and CI runs them after it (``-m two_nodes``, about 5 minutes).

Hypothesis runs derandomized, without its example database: every run of
the suite draws the same examples, so a fresh clone and CI see what this
machine saw. ``COMMCOST_HYPOTHESIS=explore`` draws new examples each run
(and keeps failing ones in ``.hypothesis/``) to hunt for cases.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("explore" if os.environ.get("COMMCOST_HYPOTHESIS") == "explore" else "repeatable")

REAL_MPI_MODULES = frozenset({
    "test_arrangement_outputs", "test_calibrate_real_mpi", "test_collective_calibration", "test_map_search",
    "test_measure_kernel", "test_measure_pattern", "test_mpi_benchmarks_real", "test_netns_two_nodes",
    "test_ompi_fixed_real", "test_slurm_two_nodes", "test_tune_command",
    "test_tune_confidence", "test_tuning_files_mpich", "test_tuning_files_real_mpi", "test_verify_command",
})
TWO_NODE_MODULES = frozenset({"test_netns_two_nodes", "test_slurm_two_nodes"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real_mpi: starts real MPI ranks; these run one at a time (one xdist group)")
    config.addinivalue_line("markers", "two_nodes: real MPI on a two- or four-node cluster of network namespaces "
                                       "(root, tc, Slurm): CI's last step")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)  # (an item that is not a Python test function has none)
        if module is not None and module.__name__.rsplit(".", 1)[-1] in REAL_MPI_MODULES:
            item.add_marker(pytest.mark.real_mpi)
            item.add_marker(pytest.mark.xdist_group("real_mpi"))
            if module.__name__.rsplit(".", 1)[-1] in TWO_NODE_MODULES:
                item.add_marker(pytest.mark.two_nodes)
