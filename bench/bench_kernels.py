"""Speed figures for issue 6: SUMMA and Wave2D on the Table 1 layouts (paper 000), built and priced.

Run: ``python bench/bench_kernels.py``. Prints figures; asserts nothing.

For each layout of examples/fermi/table1.txt placed on examples/fermi/platform.toml
with the illustrative speeds of examples/fermi/speeds.txt, and N = 128 and 256
blocks: partition time, SUMMA schedule build (all N iterations, runs of equal
iterations stored once), and pricing under tau-Lop (exact engine), HLogGP
(timeline) and HLogGP as paper 000 section 4 prices kernels. Then the M16
figure the issue asks for (47 processes, N = 256, under 1 s): best and median
of 5 runs of partition + build + price, from files already read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from commcost.closedform import hloggp_kernels
from commcost.io.layout_file import read_layout_table
from commcost.io.params_file import load_params
from commcost.io.platform_file import load_platform
from commcost.io.speeds_file import read_speeds
from commcost.kernels import summa, wave2d
from commcost.models import MODELS, PlacedSchedule
from commcost.partition import balanced_partition
from commcost.partition.processes import processes_of_mapping, speeds_of
from commcost.platform.layout import place_layout

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "examples" / "fermi"


def run_once(platform, row, table, params, n: int) -> dict[str, float]:
    """Partition, build SUMMA and Wave2D (100 steps), price them; seconds per step and the costs."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    mapping = place_layout(platform, row)
    processes = processes_of_mapping(platform, mapping)
    part = balanced_partition(speeds_of(processes, table), n, [p.host for p in processes])
    t1 = time.perf_counter()
    schedule = summa(part)
    placed = PlacedSchedule.of(schedule, platform, mapping)
    t2 = time.perf_counter()
    times["taulop_s"] = MODELS["taulop"](params.for_model("taulop")).price(placed).time_s
    t3 = time.perf_counter()
    times["hloggp_s"] = MODELS["hloggp"](params.for_model("hloggp")).price(placed).time_s
    times["paper_s"] = hloggp_kernels.price(placed, params.for_model("hloggp")).time_s
    t4 = time.perf_counter()
    wave = PlacedSchedule.of(wave2d(part, 100), platform, mapping)
    times["wave_taulop_s"] = MODELS["taulop"](params.for_model("taulop")).price(wave).time_s
    t5 = time.perf_counter()
    times.update(partition=t1 - t0, build=t2 - t1, price_taulop=t3 - t2, price_hloggp=t4 - t3,
                 wave=t5 - t4, total=t4 - t0, phases=schedule.nphases, sends=schedule.ntransmissions)
    return times


def main() -> None:
    platform, _ = load_platform(FERMI / "platform.toml")
    rows = read_layout_table(FERMI / "table1.txt")
    table = read_speeds(FERMI / "speeds.txt")
    params = load_params(ROOT / "examples" / "params" / "illustrative.toml")
    print(f"cores: {os.cpu_count()} (machine may be shared)")
    print(f"{'layout':<6} {'P':>3} {'N':>4} {'phases':>6} {'sends':>6} {'SUMMA taulop':>13} {'hloggp':>9} "
          f"{'paper':>9} {'Wave2D T=100':>13} {'wall ms':>8}")
    for n in (128, 256):
        for name, row in rows.items():
            r = run_once(platform, row, table, params, n)
            print(f"{name:<6} {row.nprocs:>3} {n:>4} {r['phases']:>6.0f} {r['sends']:>6.0f} "
                  f"{r['taulop_s'] * 1e3:>10.2f} ms {r['hloggp_s'] * 1e3:>6.2f} ms {r['paper_s'] * 1e3:>6.2f} ms "
                  f"{r['wave_taulop_s'] * 1e3:>10.3f} ms {r['total'] * 1e3:>8.1f}")
    runs = [run_once(platform, rows["M16"], table, params, 256) for _ in range(5)]
    for step in ("partition", "build", "price_taulop", "price_hloggp", "total"):
        values = np.array([r[step] for r in runs]) * 1e3
        print(f"M16 N=256 {step:<13} best {values.min():7.1f} ms  median {np.median(values):7.1f} ms")


if __name__ == "__main__":
    main()
