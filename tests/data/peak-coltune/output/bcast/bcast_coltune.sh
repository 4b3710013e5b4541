#!/bin/sh
# (trimmed by commcost: the first of its mpirun lines; the others differ in -np, algorithm and file name)
mpirun --np 2 --hostfile $MY_HOSTFILE --map-by ppr:42:node --map-by core --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 0 /gpfs/alpine/stf010/proj-shared/naughton/peak/ompix/perf-colltune/OSU/osu-micro-benchmarks-5.6.2/_install/libexec/osu-micro-benchmarks/mpi/collective//osu_bcast >& /gpfs/alpine/stf010/proj-shared/naughton/peak/ompix/perf-colltune/ompi-collectives-tuning/output/bcast/0_2ranks_run0.out
