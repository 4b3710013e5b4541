"""Collective algorithms as schedules: the trees and pipelines MPI libraries run, as data.

Builders know nothing of models (DESIGN.md). Importing this package fills
the registry (:mod:`.registry`) with every algorithm.
"""

from commcost.collectives.case import Case, Collective, CollectiveSchedule, Param
from commcost.collectives.recorder import Recorder
from commcost.collectives.registry import ALGORITHMS, Algorithm, algorithms, build, build_folded, find, register
from commcost.collectives import catalog  # noqa: E402,F401  (fills the registry)

__all__ = ["ALGORITHMS", "Algorithm", "Case", "Collective", "CollectiveSchedule", "Param", "Recorder",
           "algorithms", "build", "build_folded", "find", "register"]
