"""Open MPI's barriers priced against a measured barrier sweep (issue 35 item 1's check of the barrier model).

Run: ``python bench/bench_barrier_sweep.py COLTUNE PLATFORM PARAMS [MODEL]``. Prints figures; asserts nothing.

COLTUNE is an ompi-collectives-tuning output folder with a ``barrier/``
folder of ``<id>_<P>ranks_run<k>.out`` files (OSU's ``osu_barrier``: the
mean over ranks of each rank's time per barrier; id 0 is the library's
default, 1-6 the forced algorithms of ``commcost.collectives.barrier``),
e.g. Peak's ``PEAK.coltune/output``. PARAMS is a parameter file fitted
elsewhere (``commcost fit ... --from-collectives``); MODEL defaults to
hockney. For each algorithm and P it prints the least run's figure and
the price: barriers run back to back as OSU's loop does, each rank
entering as it left the one before (three rounds from all at 0), the mean
over ranks of its time in the last. The default's figure is printed
beside the algorithms that the two fixed decisions (``ompi5``, ``ompi4``)
would have run, to tell which one the library ran.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np

from commcost.collectives.barrier import ALGORITHMS, DECISIONS, barrier_schedule, fixed_decision
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.models import MODELS, PlacedSchedule
from commcost.platform import Mapping

NAME = re.compile(r"(\d+)_(\d+)ranks_run\d+\.out$")


def measured(folder: Path) -> dict[tuple[int, int], float]:
    """(algorithm id, P) -> the least run's figure (seconds), from the last number of each file."""
    out: dict[tuple[int, int], float] = {}
    for path in sorted(folder.glob("*.out")):
        match = NAME.search(path.name)
        numbers = re.findall(r"^\s*([0-9.]+)\s*$", path.read_text(errors="replace"), re.M)
        if match and numbers:
            key = (int(match.group(1)), int(match.group(2)))
            out[key] = min(out.get(key, np.inf), float(numbers[-1]) * 1e-6)
    return out


def priced(model, platform, name: str, nprocs: int, ppn: int) -> float:
    """The mean over ranks of each rank's time in a barrier entered as the previous one let it go."""
    placed = PlacedSchedule.of(barrier_schedule(nprocs, name), platform, Mapping.sequential(platform, nprocs, ppn))
    left = model.rank_ends_s(placed)
    for _ in range(3):
        entered, left = left, model.rank_ends_s(placed, left)
    return float(np.mean(left - entered))


def main(argv: list[str]) -> None:
    folder, platform_file, params_file = (Path(a) for a in argv[:3])
    model_name = argv[3] if len(argv) > 3 else "hockney"
    platform, _ = load_platform(platform_file)
    model = MODELS[model_name](load_params(params_file).for_model(model_name))
    table = measured(folder / "barrier")
    procs = sorted({p for _, p in table})
    ppn = 42
    started = time.perf_counter()
    print(f"osu_barrier measured / {model_name} priced (us), {ppn} ranks a node")
    print(f"{'algorithm':<20}" + "".join(f"{p:>18}" for p in procs))
    for ident, name in ALGORITHMS.items():
        cells = []
        for p in procs:
            if (ident, p) not in table or (name == "two_proc" and p != 2):
                cells.append(f"{'':>18}")
                continue
            cells.append(f"{table[ident, p] * 1e6:>8.2f} / {priced(model, platform, name, p, ppn) * 1e6:<7.2f}")
        print(f"{name:<20}" + "".join(cells))
    for decision in DECISIONS:
        cells = []
        for p in procs:
            ident = {v: k for k, v in ALGORITHMS.items()}[fixed_decision(p, decision)]
            default, chosen = table.get((0, p)), table.get((ident, p))
            cells.append(f"{'':>18}" if default is None or chosen is None else
                         f"{default * 1e6:>8.2f} ~ {chosen * 1e6:<7.2f}")
        print(f"{'default ~ ' + decision:<20}" + "".join(cells))
    print(f"priced in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
