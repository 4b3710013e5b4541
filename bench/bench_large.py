"""Speed and memory of large messages: long segmented pipelines folded from their first segments.

Run: ``python bench/bench_large.py [--quick]``. Prints figures; asserts nothing.

For every bcast, reduce and allreduce algorithm commcost folds
(:mod:`commcost.selection.long_pipeline`), on the example cluster at 4 ranks
per node (32 at 65,536 ranks), under Hockney (examples/params/illustrative.toml): P = 1,024
(1 MiB, 64 MiB, 1 GiB) and 65,536 (1 GiB) in segments of 32 KiB (han: its own 64 KiB).
Per case, the seconds and the peak memory of Python's allocations
(tracemalloc) of the folded price, and beside it the whole schedule built
and priced transmission by transmission where that stays under 2 million
transmissions, with the ratio of the times and the relative difference of
the prices. Then Open MPI's segmented ring allreduce in 32 KiB segments at 1,
16 and 256 GiB (32 to 8,192 rounds; :mod:`commcost.selection.round_fold`),
beside the whole built folded by one node's ranks where it stays under 6.6
million of its transmissions. ``--quick``: P = 1,024 and sizes up to 64 MiB only; ``--procs P [P
...]``: these process counts instead.

``--every``: every bcast, reduce and allreduce algorithm, folded or not
(issue 36 item 4), each with its defaults and, where it takes a segment
size, 32 KiB segments: priced as ``select`` prices it
(:func:`commcost.selection.grid.price_sizes`: folds, scale units, the
transmission limit) and, beside it, built whole and priced transmission by
transmission where that stays under 2.2 million transmissions; seconds,
peak MiB of Python's allocations, the ratio of the times and the relative
difference of the prices ("refused": past the transmission limit, never
picked by a select; "-": not run whole). ``--model taulop`` (or loggph): under
that model instead of Hockney (select's default is tau-Lop); ``--no-whole``:
select's pricing only, without the whole schedules beside it.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

from commcost.collectives import Case, Collective, algorithms, build
from commcost.collectives.recorder import ScheduleTooLarge
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping
from commcost.selection.grid import price_sizes
from commcost.selection.folded_place import FOLD_BUILD_FROM, placed
from commcost.selection.long_pipeline import APPROXIMATE_NOTE, pipeline_statistic_s
from commcost.selection.round_fold import rounds_statistic_s

EX = Path(__file__).resolve().parent.parent / "examples"
WHOLE_UP_TO = 2_200_000  # transmissions: the whole schedule is built beside the fold up to this many


def _measure(call):
    tracemalloc.start()
    started = time.perf_counter()
    value = call()
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return value, seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--every", action="store_true", help="every algorithm, as select prices it")
    parser.add_argument("--procs", type=int, nargs="+", help="these process counts instead")
    parser.add_argument("--model", default="hockney", choices=sorted(MODELS), help="the model (default hockney)")
    parser.add_argument("--no-whole", action="store_true", help="--every without the whole schedules beside it")
    args = parser.parse_args()
    platform = load_platform(EX / "cluster" / "platform.toml")[0]
    model = MODELS[args.model](load_params(EX / "params" / "illustrative.toml").for_model(args.model))
    procs = (1024,) if args.quick else (1024, 65536)
    sizes = [1 << 20, 64 << 20] + ([] if args.quick else [1 << 30])
    procs = tuple(args.procs) if args.procs else procs
    if args.every:
        every(platform, model, procs, sizes, whole=not args.no_whole)
        return
    chosen = [a for c in (Collective.BCAST, Collective.REDUCE, Collective.ALLREDUCE) for a in algorithms(c)
              if a.segmented is not None]
    print(f"{'algorithm':28s} {'P':>6s} {'size':>6s} {'segs':>6s} {'fold s':>8s} {'MiB':>7s} "
          f"{'whole s':>8s} {'MiB':>7s} {'ratio':>7s} {'rel diff':>9s}")
    for nprocs in procs:
        mapping = Mapping.sequential(platform, nprocs, 4 if nprocs <= 8192 else 32)
        for algorithm in chosen:
            given = {"segsize": 32 << 10} if algorithm.name != "han" else {}
            if any(p.name == "ppn" for p in algorithm.params):
                given["ppn"] = 4 if nprocs <= 8192 else 32
            values = algorithm.resolve_params(given)
            for nbytes in (sizes if nprocs <= 8192 else sizes[-1:]):
                cut = algorithm.segment_cut(values, nbytes)
                folded, fold_s, fold_mib = _measure(lambda: pipeline_statistic_s(
                    algorithm, values, nprocs, nbytes, platform, mapping, model))
                whole = whole_s = whole_mib = None
                if cut is not None and cut.count * nprocs <= WHOLE_UP_TO:
                    whole, whole_s, whole_mib = _measure(lambda: model.statistic_s(PlacedSchedule.of(
                        build(algorithm, Case(algorithm.collective, nprocs, nbytes, 0), values).schedule,
                        platform, mapping)))
                name = f"{algorithm.collective.value}:{algorithm.name}"
                segs = cut.count if cut is not None else 1
                fold = "not folded" if folded is None else f"{fold_s:8.2f} {fold_mib:7.0f}"
                rest = "" if whole is None else (f" {whole_s:8.2f} {whole_mib:7.0f}" + (
                    "" if folded is None else f" {whole_s / fold_s:6.1f}x {abs(folded - whole) / whole:9.1e}"))
                print(f"{name:28s} {nprocs:6d} {nbytes >> 20:5d}M {segs:6d} {fold:>16s}{rest}", flush=True)
        rounds(platform, mapping, model, nprocs, 4 if nprocs <= 8192 else 32,
               [1 << 30] if args.quick else [1 << 30, 16 << 30, 256 << 30])


def rounds(platform, mapping, model, nprocs: int, ppn: int, sizes) -> None:
    """The algorithms of alike rounds (:mod:`commcost.selection.round_fold`: Open MPI's segmented ring allreduce
    in 32 KiB segments), folded from their first rounds, beside the whole schedule (built folded by one node's
    ranks where the model allows) up to three times :data:`WHOLE_UP_TO` transmissions recorded; the segments
    column holds the rounds."""
    for algorithm in [a for a in algorithms(Collective.ALLREDUCE) if a.rounds is not None]:
        values = algorithm.resolve_params({"segsize": 32 << 10})
        for nbytes in sizes:
            cut = algorithm.round_cut(values, nprocs, nbytes)
            folded, fold_s, fold_mib = _measure(lambda: rounds_statistic_s(
                algorithm, values, nprocs, nbytes, platform, mapping, model))
            whole = whole_s = whole_mib = None
            case = Case(algorithm.collective, nprocs, nbytes, 0)
            kept = ppn if model.folds_by_rank_shift and nprocs >= FOLD_BUILD_FROM else nprocs  # ranks recorded
            if cut is not None and (cut.count + 1) * (nprocs - 1) * kept <= 3 * WHOLE_UP_TO:
                whole, whole_s, whole_mib = _measure(lambda: model.statistic_s(
                    placed(algorithm, case, values, platform, mapping, model)))
            fold = "not folded" if folded is None else f"{fold_s:8.2f} {fold_mib:7.0f}"
            rest = "" if whole is None else (f" {whole_s:8.2f} {whole_mib:7.0f}" + (
                "" if folded is None else f" {whole_s / fold_s:6.1f}x {abs(folded - whole) / whole:9.1e}"))
            print(f"{'allreduce:' + algorithm.name:28s} {nprocs:6d} {nbytes >> 20:5d}M "
                  f"{cut.count if cut else 1:6d} {fold:>16s}{rest}", flush=True)


def every(platform, model, procs, sizes, whole: bool = True) -> None:
    """Every algorithm as ``select`` prices it (its price in seconds), beside the whole schedule priced one
    transmission at a time where ``whole``."""
    print(f"{'algorithm':42s} {'P':>6s} {'size':>6s} {'price s':>10s} {'select s':>9s} {'MiB':>7s} {'whole s':>8s} "
          f"{'MiB':>7s} {'ratio':>7s} {'rel diff':>9s}")
    for nprocs in procs:
        ppn = 4 if nprocs <= 8192 else 32
        mapping = Mapping.sequential(platform, nprocs, ppn)
        for collective in (Collective.BCAST, Collective.REDUCE, Collective.ALLREDUCE):
            for algorithm in algorithms(collective):
                if not algorithm.supports(nprocs):
                    continue
                names = {p.name for p in algorithm.params}
                variants = [{}] + ([{"segsize": 32 << 10}] if "segsize" in names else [])
                for given in variants:
                    if "ppn" in names:
                        given = {**given, "ppn": ppn}
                    values = algorithm.resolve_params(given)
                    label = f"{collective.value}:{algorithm.library}.{algorithm.name}" + (
                        f"/{values['segsize'] >> 10}K" if values.get("segsize") else "")
                    for nbytes in (sizes if nprocs <= 8192 else sizes[-1:]):
                        refused: list[str] = []
                        (price,), sel_s, sel_mib = _measure(lambda: price_sizes(
                            algorithm, dict(given), nprocs, [nbytes], platform, mapping, model, refused=refused))
                        refused = [line for line in refused if not line.startswith(APPROXIMATE_NOTE)]
                        selected = "refused" if refused else f"{price:10.4g} {sel_s:9.2f} {sel_mib:7.0f}"
                        rest = ""
                        if whole and not refused and _whole_fits(algorithm, values, nprocs, nbytes):
                            try:
                                whole, whole_s, whole_mib = _measure(lambda: model.total_time_s(PlacedSchedule.of(
                                    build(algorithm, Case(collective, nprocs, nbytes, 0), values).schedule, platform,
                                    mapping)))
                            except ScheduleTooLarge:
                                tracemalloc.stop()
                                rest = "  past the recorder's limit whole"
                            else:
                                rest = (f" {whole_s:8.2f} {whole_mib:7.0f} {whole_s / max(sel_s, 1e-9):6.1f}x "
                                        f"{abs(price - whole) / whole:9.1e}")
                        print(f"{label:42s} {nprocs:6d} {nbytes >> 20:5d}M {selected:>28s}{rest}", flush=True)


def _whole_fits(algorithm, values, nprocs: int, nbytes: int) -> bool:
    """Whether the whole schedule stays under :data:`WHOLE_UP_TO` transmissions (a segmented one: segments x
    (P - 1) counted first; the others: built on a smaller message to count)."""
    cut = algorithm.segment_cut(values, nbytes)
    if cut is not None:
        return cut.count * nprocs <= WHOLE_UP_TO
    try:
        return build(algorithm, Case(algorithm.collective, nprocs, min(nbytes, 1 << 20), 0),
                     values).schedule.ntransmissions <= WHOLE_UP_TO
    except ScheduleTooLarge:
        return False


if __name__ == "__main__":
    main()
