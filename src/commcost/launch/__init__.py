"""What starts MPI: launch lines for mpirun and Slurm, the rank programs they run, and their results."""
