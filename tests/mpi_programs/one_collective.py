"""Run one collective once (``bcast|allreduce|alltoall`` and bytes), for the tuning-file tests to observe."""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
name, nbytes = sys.argv[1], int(sys.argv[2])
if name == "bcast":
    comm.Bcast(np.zeros(nbytes, dtype="u1"), root=0)
elif name == "allreduce":
    comm.Allreduce(np.ones(nbytes, dtype="u1"), np.zeros(nbytes, dtype="u1"), op=MPI.SUM)
elif name == "alltoall":
    comm.Alltoall(np.zeros(nbytes * comm.size, dtype="u1"), np.zeros(nbytes * comm.size, dtype="u1"))
