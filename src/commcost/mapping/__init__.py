"""Mapping: the rank-to-node placement that minimizes a schedule's predicted time under any model.

Decision layer (DESIGN.md): it prices placements through a callable and
knows nothing of algorithms. :mod:`~commcost.mapping.starts` cuts the
traffic graph into a start (the others are :class:`~commcost.platform.Mapping`'s); :mod:`~commcost.mapping.local_search`
improves one by swapping groups of nodes' contents and ranks.
"""

from commcost.mapping.local_search import Move, SearchResult, group_swaps, improve
from commcost.mapping.starts import graph_start

__all__ = ["Move", "SearchResult", "graph_start", "group_swaps", "improve"]
