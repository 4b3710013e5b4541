"""Mapping files: one node name per line (line k places rank k), and Open MPI rankfiles out.

::

    # rank 0 first; blank lines and '#' comments are skipped
    node0
    node0
    node1

Open MPI reads the rankfile written by :func:`write_rankfile` with
``mpirun --map-by rankfile:file=FILE`` (``-rf FILE`` in older releases).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from commcost.errors import InputError
from commcost.platform.mapping import Mapping
from commcost.platform.platform import Platform
from commcost.io.text_lines import text_of


def read_node_names(path: str | Path) -> list[str]:
    """The node name of each rank, in rank order."""
    source = str(path)
    lines = text_of(path, "mapping file").splitlines()
    names = []
    for lineno, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if len(text.split()) != 1:
            raise InputError(f"expected one node name per line, got {text!r}", source=source,
                             where=f"line {lineno}")
        names.append(text)
    if not names:
        raise InputError("expected one node name per rank, found none", source=source)
    return names


def load_mapping_file(path: str | Path, platform: Platform) -> Mapping:
    """A mapping from a node-per-line file; unknown node names are errors naming the line."""
    names = read_node_names(path)
    known = {node.name for node in platform.nodes}
    lineno = 0
    for rank, name in enumerate(names):
        if name not in known:
            lineno = _line_of_rank(path, rank)
            raise InputError(f"rank {rank} is placed on node {name!r}; expected one of the platform's "
                             f"nodes ({', '.join(sorted(known)[:6])}{', ...' if len(known) > 6 else ''})",
                             source=str(path), where=f"line {lineno}")
    return Mapping.from_node_names(platform, names)


def _line_of_rank(path: str | Path, rank: int) -> int:
    seen = -1
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if line.split("#", 1)[0].strip():
            seen += 1
            if seen == rank:
                return lineno
    return 0


def write_node_names(mapping: Mapping, platform: Platform, path: str | Path) -> None:
    """Write the one-node-per-line form of ``mapping``."""
    Path(path).write_text("".join(f"{platform.nodes[n].name}\n" for n in mapping.node_of_rank))


def rankfile_text(mapping: Mapping, platform: Platform) -> str:
    """An Open MPI rankfile: ``rank R=HOST slot=FIRST-LAST`` with each rank's cores on its node.

    Cores are handed out in rank order on each node; a rank with several
    cores (paper 000's multi-core processes, a GPU process's one core) gets
    a contiguous range.
    """
    next_core = np.zeros(len(platform.nodes), dtype=np.int64)
    lines = []
    for rank, (node, cores) in enumerate(zip(mapping.node_of_rank, mapping.cores)):
        first = int(next_core[node])
        last = first + int(cores) - 1
        available = platform.nodes[node].type.cores
        if last >= available:
            raise InputError(f"rank {rank} needs cores {first}-{last} on {platform.nodes[node].name}, "
                             f"which has {available}; the mapping oversubscribes the node")
        next_core[node] = last + 1
        slot = f"{first}" if first == last else f"{first}-{last}"
        lines.append(f"rank {rank}={platform.nodes[node].name} slot={slot}\n")
    return "".join(lines)


def reorder_text(process_at_rank: np.ndarray) -> str:
    """A reorder file: line q holds the new rank of the process started as rank q (``process_at_rank[k]``
    is the process that new rank k is), the key to pass to ``MPI_Comm_split(MPI_COMM_WORLD, 0, key,
    &reordered)`` before ``MPI_Cart_create(reordered, ..., reorder = 0)``.

    ::

        # new rank of each launched rank, one per line (line 1: rank 0)
        0
        2
        1
        3
    """
    order = np.asarray(process_at_rank, dtype=np.int64)
    if sorted(order.tolist()) != list(range(len(order))):
        raise ValueError("expected a permutation of the ranks")
    new_rank = np.empty_like(order)
    new_rank[order] = np.arange(len(order))
    return "# new rank of each launched rank, one per line (line 1: rank 0)\n" + "".join(
        f"{int(k)}\n" for k in new_rank)
