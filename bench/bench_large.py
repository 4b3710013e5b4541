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
the prices. ``--quick``: P = 1,024 and sizes up to 64 MiB only.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

from commcost.collectives import Case, Collective, algorithms, build
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping
from commcost.selection.long_pipeline import pipeline_statistic_s

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
    args = parser.parse_args()
    platform = load_platform(EX / "cluster" / "platform.toml")[0]
    model = MODELS["hockney"](load_params(EX / "params" / "illustrative.toml").for_model("hockney"))
    procs = (1024,) if args.quick else (1024, 65536)
    sizes = [1 << 20, 64 << 20] + ([] if args.quick else [1 << 30])
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


if __name__ == "__main__":
    main()
