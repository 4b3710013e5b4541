"""commcost: communication cost of MPI programs, predicted without running them at scale."""

__version__ = "0.2.0"
