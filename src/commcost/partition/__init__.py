"""Balanced 2D data partitions from process speeds and FPMs (paper 000 section 2)."""

from commcost.partition.balance import balance, imbalance
from commcost.partition.columns import balanced_partition, column_groups, column_partition
from commcost.partition.fpm import SpeedFunction

__all__ = ["SpeedFunction", "balance", "balanced_partition", "column_groups", "column_partition", "imbalance"]

