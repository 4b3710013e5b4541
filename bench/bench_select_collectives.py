"""Speed of ``commcost select`` for every collective: the size sweep against case-by-case pricing.

Run: ``python bench/bench_select_collectives.py [--quick] [--collectives allreduce,reduce]``. Prints
figures; asserts nothing.

For each collective it runs, in this process, the command

    commcost select <collective> --params examples/params/illustrative.toml
        --platform examples/cluster/platform.toml --ppn 32 --procs 2..1024 --sizes 1..1MiB

(``--quick``: ``--procs 2..128``) twice: as shipped (``price_sizes`` groups sizes by their scale unit
and prices each group in one pass) and as a baseline in the same run, with ``price_sizes(sweep=False)``
building and pricing every size on its own, so the ratio shows what the scale units alone buy; both
runs must print the same selection. Every algorithm is a dependency schedule (rings are P (P - 1)
transmissions); tau-Lop folds those that are symmetric under a shift of one node's ranks
(commcost.models.symmetry) and runs large size sweeps on every core.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import time
from pathlib import Path

from commcost.cli.main import main as cli_main
from commcost.selection import select as select_module

ROOT = Path(__file__).resolve().parent.parent
COLLECTIVES = ("allreduce", "allgather", "alltoall", "reduce", "gather", "scatter", "bcast")


def run_select(collective: str, procs: str, sweep: bool) -> tuple[float, str]:
    """Seconds and printed output of one ``commcost select`` run; ``sweep=False`` prices case by case."""
    argv = ["select", collective, "--params", str(ROOT / "examples/params/illustrative.toml"),
            "--platform", str(ROOT / "examples/cluster/platform.toml"), "--ppn", "32",
            "--procs", procs, "--sizes", "1..1MiB"]
    shipped = select_module.price_sizes
    out = io.StringIO()
    try:
        if not sweep:
            select_module.price_sizes = functools.partial(shipped, sweep=False)  # type: ignore[assignment]
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out):
            rc = cli_main(argv)
        seconds = time.perf_counter() - t0
    finally:
        select_module.price_sizes = shipped  # type: ignore[assignment]
    if rc != 0:
        raise SystemExit(f"commcost select {collective} failed with {rc}")
    return seconds, out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="P up to 128 only")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated list")
    args = parser.parse_args()
    procs = "2..128" if args.quick else "2..1024"
    print(f"machine: {os.cpu_count()} cores; commcost select <collective> --ppn 32 --procs {procs} "
          f"--sizes 1..1MiB (illustrative params, example cluster)")
    print(f"{'collective':<15}{'sweep s':>10}{'case-by-case s':>16}{'ratio':>8}  same selection")
    for collective in (c.strip() for c in args.collectives.split(",") if c.strip()):
        run_select(collective, "2..4", True)  # warm imports and law caches
        fast, printed = run_select(collective, procs, True)
        slow, baseline = run_select(collective, procs, False)
        print(f"{collective:<15}{fast:>10.2f}{slow:>16.2f}{slow / fast:>7.1f}x  {printed == baseline}")


if __name__ == "__main__":
    main()
