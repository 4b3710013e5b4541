"""Message buffers for the benchmarks that run under MPI (calibration, kernels, patterns)."""

from __future__ import annotations

import numpy as np

FILL = 0xA5  # the byte every buffer is filled with


def message_buffer(nbytes: int) -> np.ndarray:
    """``nbytes`` of uint8 whose pages are written (filled with :data:`FILL`), as OSU's benchmarks set theirs:
    an ``np.zeros`` buffer never written maps every page to the kernel's one zero page, so sending from it
    reads the same 4 KiB over and over, out of the cache, which no application's data does."""
    return np.full(max(int(nbytes), 1), FILL, dtype=np.uint8)[:int(nbytes)]
