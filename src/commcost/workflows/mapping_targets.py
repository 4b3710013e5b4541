"""What ``commcost map`` places, and where its search starts.

The schedule comes from a schedule file, a collective algorithm (built by
the caller's ``build_collective``: the command line's collective options),
a kernel (MPDATA's halo exchange, paper 002, with paper 002's heuristic
arrangement as its own start when bandwidths are given; SUMMA or Wave2D on
a partition file, paper 000, with the partition's hosts as its own start)
or a sparse kernel's exchange (paper 001). :func:`start_placements` builds the start
placements the search improves.
"""

from __future__ import annotations

import math
from typing import Callable

from commcost.errors import InputError
from commcost.units import too_long_for_int

from commcost.workflows.map_options import MapOptions


def what_to_place(options: MapOptions, platform,
                  build_collective: Callable[[MapOptions], tuple] | None = None) -> tuple:
    """The schedule to place, its name, and the kernel's own starts (name -> node_of_rank). A collective's
    (algorithm, schedule) comes from ``build_collective`` (the command line's collective options build it)."""
    if options.schedule is not None:
        from commcost.io.schedule_file import load_schedule

        schedule = load_schedule(options.schedule)
        return schedule, schedule.name, {}
    if options.collective is not None:
        return _collective(options, build_collective)
    if options.pattern is not None:
        return _pattern(options)
    if options.kernel == "mpdata":
        return _mpdata(options, platform)
    return _partitioned_kernel(options, platform)


def _pattern(options: MapOptions) -> tuple:
    from commcost.kernels.sparse import pattern_levels, read_matrix

    if options.matrix is None:
        raise InputError("--pattern needs --matrix A.mtx", where="--matrix")
    if options.procs is None or options.procs < 1:
        raise InputError("--pattern needs --procs P >= 1", where="--procs")
    if options.amg_level < 0 or options.value_bytes < 1:
        raise InputError("expected --amg-level >= 0 and --value-bytes >= 1",
                         where="--amg-level" if options.amg_level < 0 else "--value-bytes")
    levels = pattern_levels(read_matrix(options.matrix), options.pattern, options.procs, options.rows,
                            options.amg_level > 0, options.value_bytes)
    if options.amg_level >= len(levels):
        raise InputError(f"the AMG hierarchy has levels 0..{len(levels) - 1}, got {options.amg_level}",
                         where="--amg-level")
    schedule = levels[options.amg_level].schedule
    return schedule, f"{schedule.name} of {options.matrix.name} on {options.procs} ranks", {}


def _collective(options: MapOptions, build_collective: Callable[[MapOptions], tuple] | None) -> tuple:
    from commcost.workflows.pricing import collective_schedule

    algorithm, schedule = (build_collective or collective_schedule)(options)
    if any(p.name == "ppn" for p in algorithm.params):
        raise InputError(f"{algorithm.key} runs on sub-communicators Open MPI builds from the placement, so its "
                         "schedule changes with the placement; expected an algorithm of coll/tuned or MPICH",
                         where="--algorithm")
    return schedule, f"{algorithm.key} {options.collective} of {options.nbytes} on {options.procs} ranks", {}


def _mpdata(options: MapOptions, platform) -> tuple:
    import numpy as np

    from commcost.workflows.arrange import dims, process_groups
    from commcost.kernels.mpdata import halo_schedule
    from commcost.partition import arrangement as arr

    domain, halo = dims(options.domain, 3, "--domain"), dims(options.halo, 2, "--halo")
    if options.value_bytes < 1 or options.steps < 1:
        raise InputError("expected --value-bytes and --steps >= 1",
                         where="--value-bytes" if options.value_bytes < 1 else "--steps")

    def volumes(r: int, c: int) -> tuple[float, float]:
        return arr.mpdata_volumes(domain, halo, r, c, options.value_bytes)

    starts = {}
    shape = dims(options.dims, 2, "--dims") if options.dims else None
    if options.bandwidths is not None:
        from commcost.io.bandwidths_file import load_bandwidths

        bandwidths = load_bandwidths(options.bandwidths)
        ppn = options.ppn or 1
        _, group = process_groups(platform, bandwidths, options.level, ppn, options.bandwidths)
        best, _ = arr.heuristic(np.arange(len(group)), group, bandwidths.horizontal, bandwidths.vertical, volumes)
        if shape is None:
            shape = best.shape
        if shape[0] * shape[1] != len(group):
            raise InputError(f"the heuristic arranges the {len(group)} processes of {ppn} per node; expected "
                             f"--dims of {len(group)} ranks, got {shape[0]} x {shape[1]}", where="--dims")
        if best.shape != shape:  # step 2 of the heuristic at the asked shape, from its order
            r, c = shape
            filled = arr.priced(best.order().reshape(c, r).T.copy(), group, bandwidths.horizontal,
                                bandwidths.vertical, volumes)
            best = arr.rearrange(filled, group, bandwidths.horizontal, bandwidths.vertical, volumes)
        starts["heuristic"] = np.repeat(np.arange(len(platform.nodes)), ppn)[best.grid.reshape(-1)]
    if shape is None:
        p = len(platform.nodes) * (options.ppn or 1)
        shape = min(arr.factor_pairs(p), key=lambda rc: (abs(rc[0] - rc[1]), -rc[1]))
    r, c = shape
    h, w = volumes(r, c)
    return halo_schedule(r, c, h, w, options.steps), f"MPDATA halo exchange {r}x{c}", starts


def _partitioned_kernel(options: MapOptions, platform) -> tuple:
    import numpy as np

    from commcost.workflows.kernels import kernel_schedule
    from commcost.io.partition_file import read_partition
    from commcost.platform import Mapping

    if options.partition is None:
        raise InputError(f"--kernel {options.kernel} needs --partition FILE", where="--partition")
    part = read_partition(options.partition)
    schedule = kernel_schedule(options.kernel, part, None, options.steps)
    try:
        hosts = Mapping.from_node_names(platform, list(part.hosts)).node_of_rank
    except InputError as exc:
        raise exc.located(source=str(options.partition), where="host") from None
    return schedule, schedule.name, {"partition": np.asarray(hosts)}


def start_placements(options: MapOptions, schedule, platform, ppn: int, capacity, own: dict) -> tuple[dict, list[str]]:
    """The start placements asked for (name -> node_of_rank), and notes on those left out: sequential
    (rank p on node p div ppn), round-robin over the ceil(P / ppn) nodes sequential fills, random:SEED (a
    seeded permutation of sequential), graph, file:PATH and the kernel's own (``own``)."""
    from commcost.io.mapping_file import load_mapping_file
    from commcost.mapping import graph_start
    from commcost.mapping.local_search import level_groups
    from commcost.platform import Mapping

    p = schedule.nprocs
    names = options.start or ["sequential", "round-robin", "graph", *own]
    starts, notes = {}, []
    for name in dict.fromkeys(names):
        kind, _, rest = name.partition(":")
        if name == "sequential":
            starts[name] = Mapping.sequential(platform, p, ppn).node_of_rank
        elif name == "round-robin":
            starts[name] = Mapping.round_robin(platform, p, math.ceil(p / ppn)).node_of_rank
        elif kind == "random" and rest.isdigit() and not too_long_for_int(rest):
            starts[name] = Mapping.random(platform, p, ppn, int(rest)).node_of_rank
        elif name == "graph":
            try:
                starts[name] = graph_start(schedule, capacity, level_groups(platform), options.seed)
            except ImportError:
                notes.append("graph start left out: pymetis is not installed (pip install 'commcost[sparse]')")
        elif kind == "file" and rest:
            mapping = load_mapping_file(rest, platform)
            if mapping.nprocs < p:
                raise InputError(f"expected a node for each of the {p} ranks, got {mapping.nprocs}", source=rest)
            starts[name] = mapping.node_of_rank[:p]
        elif name in own:
            starts[name] = own[name]
        elif name in ("heuristic", "partition"):
            raise InputError(f"the {name} start needs "
                             + ("--kernel mpdata and --bandwidths" if name == "heuristic" else
                                "--kernel summa or wave2d and --partition"), where="--start")
        else:
            raise InputError("expected sequential, round-robin, random:SEED, graph, file:PATH, heuristic or "
                             f"partition, got {name!r}", where="--start")
    return starts, notes
