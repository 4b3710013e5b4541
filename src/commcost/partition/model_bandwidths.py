"""Paper 002's group bandwidths derived from a calibrated model instead of a measured table.

Paper 002 (section 3, Table 1) measures b_H and b_V between every two
clusters with the application's own messages: the horizontal bars
(``1 x jhalo x l`` per row, non-contiguous) and the vertical slices
(``ihalo x (jhalo + mB + jhalo) x l``, contiguous). With a model fitted by
``commcost calibrate`` or ``fit`` instead, the effective bandwidth of a
message of s bytes between a node of group A and a node of group B is

    b(A, B; s) = s / t_model(s on the channel joining them)

(one transmission, priced alone), at s = h for b_H and s = w for b_V
(:func:`commcost.partition.arrangement.mpdata_volumes`). Within a group the
pair is two different nodes of it (one node: the node with itself, its
shared memory). A model has one law per channel and knows nothing of a
message's layout, so b_H and b_V differ only through the sizes (latency
weighs more on the smaller); the non-contiguous bars' extra cost of
paper 002 Table 1 is not in it.
"""

from __future__ import annotations

import numpy as np

from commcost.models import Model, PlacedSchedule
from commcost.platform import Mapping, Platform
from commcost.schedule import ScheduleBuilder


def message_time_s(model: Model, platform: Platform, node_a: int, node_b: int, nbytes: float) -> float:
    """Seconds of one transmission of ``nbytes`` from a rank on ``node_a`` to one on ``node_b``."""
    b = ScheduleBuilder(2, "one message")
    b.phase("send")
    b.send(0, 1, nbytes)
    return model.total_time_s(PlacedSchedule.of(b.build(), platform, Mapping.on_nodes([node_a, node_b])))


def model_bandwidths(model: Model, platform: Platform, members: list[list[int]], h: float,
                     w: float) -> tuple[np.ndarray, np.ndarray]:
    """(b_H, b_V) in bytes per second between every two groups, ``members[g]`` the node indices of group g:
    h / t(h) and w / t(w) between the first node of each (two different nodes within a group)."""
    n = len(members)
    bh, bv = np.zeros((n, n)), np.zeros((n, n))
    for a in range(n):
        for b in range(n):
            node_a = members[a][0]
            node_b = members[b][0] if a != b else members[b][min(1, len(members[b]) - 1)]
            bh[a, b] = h / message_time_s(model, platform, node_a, node_b, h)
            bv[a, b] = w / message_time_s(model, platform, node_a, node_b, w)
    return bh, bv
