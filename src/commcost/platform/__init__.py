"""Where ranks run and which channel joins two of them: node types, nodes, groups, channels, mappings."""

from commcost.platform.mapping import Mapping, RankKind
from commcost.platform.platform import Channel, ContentionScope, Node, NodeType, Platform

__all__ = ["Channel", "ContentionScope", "Mapping", "Node", "NodeType", "Platform", "RankKind"]
