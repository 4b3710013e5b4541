"""Decisions built on costs: which algorithm is fastest for each process count and message size."""
