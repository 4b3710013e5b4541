"""Issue 7's must-show: the registry lists Open MPI's ids and names exactly as the embedded ``ompi_info`` does.

For every collective commcost models, the ``ompi`` entries' id -> name map
equals ``coll_tuned_<collective>_algorithm``'s valid values (less 0,
"ignore") of ``ompi_info --param coll tuned --level 9``, and
``commcost algorithms --collective X`` prints them.
"""

from __future__ import annotations

import pytest

from commcost.cli.main import main
from commcost.collectives import Collective, algorithms
from collective_helpers import ompi_info_algorithms

COLLECTIVES = [c.value for c in Collective]


def registered(collective: str) -> dict[int, str]:
    """The registry's Open MPI id -> name for ``collective``."""
    return {a.id: a.name for a in algorithms(Collective(collective)) if a.library == "ompi" and a.id is not None}


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_registry_ids_and_names_are_ompi_infos(collective: str) -> None:
    listed = {i: name for i, name in ompi_info_algorithms()[collective].items() if i != 0}
    assert registered(collective) == listed


@pytest.mark.parametrize("collective", ["allreduce", "reduce", "allgather", "alltoall", "reduce_scatter"])
def test_commcost_algorithms_prints_them(collective: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = {i: name for i, name in ompi_info_algorithms()[collective].items() if i != 0}
    assert main(["algorithms", "--collective", collective]) == 0
    printed = {}
    for line in capsys.readouterr().out.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("ompi.") and fields[1].isdigit():  # coll/han's have no id
            printed[int(fields[1])] = fields[0].removeprefix("ompi.")
    assert printed == listed
