"""The switch points of Open MPI 5.0's fixed decision functions, as data.

For telling which algorithm Open MPI's coll/tuned runs when no dynamic
rules are given (:mod:`.ompi_fixed` reads these tables). The numbers come
from ``ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`` of Open MPI
v5.0.10 (identical on the v5.0.x branch up to b962e8a65c, the state
5.0.11 is cut from); the layout is commcost's own.

A *row* is ``(alg, limit, alg, limit, ..., alg)``: the first id for sizes
below the first limit, the next for sizes from that limit up to below the
next one, and so on; the last id for every size from the last limit up. A
*table* is a sequence of ``(procs_limit, row)``: the first row whose limit
the communicator size is below (``None``: every larger size). ``PAIR``
entries are rows the C code takes first when the communicator size is
exactly 2 (``communicator_size == 2``).
"""

from __future__ import annotations

Row = tuple[int, ...]
Table = tuple[tuple["int | None", Row], ...]

#: ``ompi_coll_tuned_bcast_intra_dec_fixed``; sizes: dsize * count, the whole message.
BCAST: Table = (
    (4, (3, 32, 5, 256, 3, 512, 7, 1024, 1, 32768, 5, 131072, 2, 262144, 1, 524288, 6, 1048576, 5)),
    (8, (5, 64, 6, 128, 5, 2048, 6, 8192, 1, 1048576, 2)),
    (16, (7, 8, 5, 64, 7, 4096, 5, 16384, 6, 32768, 1)),
    (32, (7, 4096, 6, 1048576, 8)),
    (64, (6, 2048, 7)),
    (128, (7,)),
    (256, (6, 2, 5, 16384, 1, 32768, 5, 65536, 7)),
    (1024, (7, 16384, 4, 32768, 7)),
    (2048, (7, 524288, 8)),
    (4096, (7, 262144, 8)),
    (None, (7, 8192, 5, 16384, 7, 262144, 8)),
)

#: ``ompi_coll_tuned_scatter_intra_dec_fixed``; sizes: one rank's block (the root's dsize * scount).
SCATTER: Table = (
    (4, (3, 2, 1, 131072, 3, 262144, 1)),
    (8, (2, 2048, 1, 4096, 2, 8192, 1, 32768, 3, 1048576, 1)),
    (16, (2, 16384, 3, 1048576, 1)),
    (32, (2, 16384, 1, 32768, 3)),
    (64, (2, 512, 3, 8192, 2, 16384, 3)),
    (None, (2, 512, 3)),
)

#: ``ompi_coll_tuned_gather_intra_dec_fixed``; sizes: one rank's block (the root's dsize * rcount).
GATHER: Table = (
    (4, (3, 2, 1, 4, 2, 32768, 1, 65536, 2, 131072, 3)),
    (8, (2, 1024, 1, 8192, 2, 32768, 1, 262144, 3)),
    (256, (2,)),
    (512, (2, 2048, 1, 8192, 2)),
    (None, (2,)),
)

#: ``ompi_coll_tuned_allgather_intra_dec_fixed``; sizes: one rank's block (dsize * scount), not the total.
ALLGATHER_PAIR: Row = (6,)
ALLGATHER: Table = (
    (32, (3,)),
    (64, (3, 1024, 5, 65536, 4)),
    (128, (3, 512, 5, 65536, 4)),
    (256, (3, 512, 5, 131072, 4, 524288, 5, 1048576, 4)),
    (512, (3, 32, 2, 128, 3, 1024, 5, 131072, 4, 524288, 5, 1048576, 4)),
    (1024, (3, 64, 2, 256, 3, 2048, 5)),
    (2048, (3, 4, 2, 8, 3, 16, 2, 32, 3, 256, 2, 512, 3, 4096, 5)),
    (4096, (2, 32, 3, 128, 2, 512, 3, 4096, 5)),
    (None, (3, 2, 2, 8, 3, 16, 2, 512, 3, 4096, 5)),
)

#: ``ompi_coll_tuned_reduce_intra_dec_fixed``, commutative op; sizes: dsize * count, the whole vector.
REDUCE: Table = (
    (4, (7, 8, 4, 16, 3, 32, 1, 262144, 3, 524288, 2, 1048576, 3)),
    (8, (4, 4096, 2, 65536, 5, 262144, 1, 524288, 5, 1048576, 1)),
    (16, (4, 8192, 5)),
    (32, (4, 4096, 5)),
    (256, (5,)),
    (512, (5, 8192, 6, 16384, 5)),
    (2048, (5,)),
    (4096, (5, 512, 6, 1024, 5, 8192, 6, 16384, 5)),
    (None, (5, 16, 6, 32, 5, 1024, 6, 2048, 5, 8192, 6, 16384, 5)),
)

#: The same, non-commutative op (only linear and in-order binary keep the order).
REDUCE_NONCOMMUTATIVE: Table = (
    (4, (6, 8, 1)),
    (8, (1,)),
    (16, (6, 1024, 1, 8192, 6, 16384, 1, 262144, 6)),
    (128, (6,)),
    (256, (6, 512, 1, 1024, 6)),
    (None, (6,)),
)

#: ``ompi_coll_tuned_allreduce_intra_dec_fixed``, commutative op; sizes: dsize * count, the whole vector.
ALLREDUCE: Table = (
    (4, (4, 8, 3, 4096, 4, 8192, 3, 16384, 4, 65536, 5, 262144, 6)),
    (8, (4, 16, 3, 8192, 6)),
    (16, (3, 8192, 6)),
    (32, (5, 64, 3, 4096, 6)),
    (64, (5, 128, 6)),
    (128, (3, 262144, 6)),
    (256, (2, 131072, 3, 262144, 6)),
    (512, (2, 4096, 6)),
    (2048, (2, 2048, 3, 16384, 6)),
    (4096, (2, 2048, 5, 4096, 3, 16384, 6)),
    (None, (2, 2048, 5, 16384, 3, 32768, 6)),
)

#: The same, non-commutative op.
ALLREDUCE_NONCOMMUTATIVE: Table = (
    (4, (3, 131072, 1)),
    (8, (3,)),
    (16, (3, 1048576, 2)),
    (128, (3,)),
    (256, (2, 131072, 3, 524288, 2)),
    (512, (2, 4096, 3, 524288, 2)),
    (None, (2, 2048, 3)),
)

#: ``ompi_coll_tuned_alltoall_intra_dec_fixed``; sizes: the block for one peer (dsize * scount).
ALLTOALL_PAIR: Row = (2, 2, 5, 4, 2, 16, 5, 64, 2, 256, 5, 4096, 2, 32768, 4, 262144, 5, 1048576, 2)
ALLTOALL: Table = (
    (8, (4, 8192, 1, 16384, 4, 65536, 1, 524288, 2, 1048576, 1)),
    (16, (4, 262144, 1)),
    (32, (4, 4, 3, 512, 4, 8192, 1, 32768, 4, 262144, 1, 524288, 4)),
    (64, (3, 512, 1, 524288, 4)),
    (128, (3, 1024, 1, 2048, 4, 4096, 1, 262144, 2)),
    (256, (3, 1024, 4, 2048, 1, 262144, 2)),
    (512, (3, 1024, 4, 8192, 1, 32768, 2)),
    (1024, (3, 512, 4, 8192, 1, 16384, 4, 131072, 1, 262144, 2)),
    (2048, (3, 512, 4, 1024, 1, 2048, 4, 16384, 1, 262144, 4)),
    (4096, (3, 1024, 4, 4096, 1, 8192, 4, 131072, 1)),
    (None, (3, 2048, 4, 8192, 1, 16384, 4, 32768, 1, 65536, 4)),
)

#: ``ompi_coll_tuned_reduce_scatter_intra_dec_fixed``, commutative op; sizes: dsize * sum(rcounts),
#: the whole input vector. A non-commutative op always gets 1 (non-overlapping).
REDUCE_SCATTER: Table = (
    (4, (3, 65536, 4, 131072, 3)),
    (8, (1, 8, 2, 262144, 3)),
    (32, (2, 262144, 3)),
    (64, (1, 64, 2, 2048, 4, 524288, 3)),
    (128, (1, 256, 2, 512, 4, 2048, 2, 4096, 4)),
    (256, (1, 256, 2, 512, 4)),
    (512, (1, 256, 2, 1024, 4)),
    (1024, (1, 512, 2, 2048, 4, 8192, 2, 16384, 4)),
    (2048, (1, 512, 2, 4096, 4, 16384, 2, 32768, 4)),
    (4096, (1, 512, 2, 4096, 4)),
    (None, (1, 1024, 2, 8192, 4)),
)
REDUCE_SCATTER_NONCOMMUTATIVE: Table = ((None, (1,)),)

#: Algorithm names by id, as ``ompi_info --param coll tuned --level 9`` lists them for
#: ``coll_tuned_<collective>_algorithm`` (Open MPI 5.0.11).
NAMES: dict[str, dict[int, str]] = {
    "bcast": {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "split_binary_tree", 5: "binary_tree",
              6: "binomial", 7: "knomial", 8: "scatter_allgather", 9: "scatter_allgather_ring"},
    "scatter": {1: "basic_linear", 2: "binomial", 3: "linear_nb"},
    "gather": {1: "basic_linear", 2: "binomial", 3: "linear_sync"},
    "allgather": {1: "linear", 2: "bruck", 3: "recursive_doubling", 4: "ring", 5: "neighbor", 6: "two_proc",
                  7: "sparbit"},
    "reduce": {1: "linear", 2: "chain", 3: "pipeline", 4: "binary", 5: "binomial", 6: "in-order_binary",
               7: "rabenseifner"},
    "allreduce": {1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring",
                  5: "segmented_ring", 6: "rabenseifner"},
    "alltoall": {1: "linear", 2: "pairwise", 3: "modified_bruck", 4: "linear_sync", 5: "two_proc"},
    "reduce_scatter": {1: "non-overlapping", 2: "recursive_halving", 3: "ring", 4: "butterfly"},
}
