"""Cutting a message into segments and blocks, as the libraries do.

Open MPI segments a message of ``count`` elements into segments of
``segcount`` elements (``COLL_BASE_COMPUTED_SEGCOUNT`` in
``coll_base_util.h``: segsize bytes / element size, at least one element;
0 means no segmentation); commcost's element is the byte, so a segment is
``segsize`` bytes and the last one carries the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def segment_bounds(nbytes: int, segsize: int) -> np.ndarray:
    """Start offsets of the segments and the end: ``[0, s, 2s, ..., nbytes]``.

    ``segsize <= 0`` or ``segsize >= nbytes`` gives one segment; a zero-byte
    message is one empty segment (MPI still runs the algorithm's steps).
    """
    if segsize <= 0 or segsize >= nbytes:
        return np.array([0, nbytes], dtype=np.int64)
    bounds = np.arange(0, nbytes, segsize, dtype=np.int64)
    return np.append(bounds, nbytes)


def reserved_segment_bounds(rec: Any, nbytes: int, segsize: int, edges: int) -> np.ndarray:
    """:func:`segment_bounds`, after ``rec`` (a Recorder) has refused up front a pipeline whose segments times
    ``edges`` (transmissions per segment at least) exceed its limit."""
    bounds = segment_bounds(nbytes, segsize)
    count = len(bounds) - 1
    rec.reserve(count * edges, f"{count:,} segments of {segsize:,} bytes" if count > 1 else "unsegmented")
    return bounds


def block_bounds(nbytes: int, nblocks: int) -> np.ndarray:
    """Split ``nbytes`` into ``nblocks`` nearly equal blocks (the first ones one byte larger)."""
    base, extra = divmod(nbytes, nblocks)
    sizes = np.full(nblocks, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
