"""Imports every algorithm module so the registry is complete."""

from commcost.collectives import (  # noqa: F401  (imported for their registrations)
    allgather,
    allreduce,
    alltoall,
    mpich_bcast,
    ompi_bcast,
    ompi_han,
    ompi_han_gather,
    ompi_han_reduce,
    reduce,
    reduce_scatter,
    scatter_gather,
)
