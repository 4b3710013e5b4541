"""Data-parallel kernels as schedules built from a 2D block partition (paper 000 section 4)."""

from commcost.kernels.partition2d import Partition2D
from commcost.kernels.summa import summa, summa_iteration
from commcost.kernels.wave2d import wave2d

__all__ = ["Partition2D", "summa", "summa_iteration", "wave2d"]
