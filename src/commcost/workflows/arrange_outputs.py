"""What ``commcost arrange --out DIR`` writes and ``--measure`` runs.

``--out DIR`` writes what a user deploys: an Open MPI rankfile per
arrangement (MPI_Cart rank ``i * c + j`` on the node of the process at cell
(i, j)), the reorder file (the key of each sequentially launched rank for
``MPI_Comm_split``), a PNG of the arrangements coloured by group and
``arrangement.json``. ``--measure`` then runs the halo exchange for real
(mpi4py, :mod:`commcost.launch.halo_worker`) under each rankfile, checks
every rank ran on the node its rankfile names, and compares measured with
predicted ratios; each run's result is written as it is taken and reused
when the command runs again.
"""

from __future__ import annotations

import json
from pathlib import Path

from commcost.errors import InputError
from commcost.workflows.arrange_options import ArrangeOptions


def described(arr, names, group_names, group) -> dict:
    """An arrangement as ``arrangement.json`` holds it: its shape, costs, and the process and group of each cell."""
    return {"shape": list(arr.shape), "cost_h_s": arr.cost_h, "cost_v_s": arr.cost_v, "cost_s": arr.cost,
            "grid": [[names[q] for q in row] for row in arr.grid.tolist()],
            "groups": [[group_names[group[q]] for q in row] for row in arr.grid.tolist()]}


def write_outputs(options: ArrangeOptions, out: dict, arrangements, mappings, platform, names, group_names,
                  group) -> dict[str, str]:
    """Rankfiles, the heuristic's reorder file and the PNG in ``--out``; their paths by kind."""
    from commcost.io.mapping_file import rankfile_text, reorder_text
    from commcost.report.arrangement_plot import plot_arrangements

    options.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for label, mapping in mappings.items():
        path = options.out / f"{label}.rankfile"
        path.write_text(rankfile_text(mapping, platform))
        files[f"{label} rankfile"] = str(path)
    if "derived_bandwidths" in out:  # the table a later run can take with --bandwidths
        d = out["derived_bandwidths"]
        path = options.out / "bandwidths.toml"
        path.write_text(f"# derived from {d['model']} of {options.params} at the {d['at_shape'][0]} x "
                        f"{d['at_shape'][1]} shape's message sizes\nunit = \"B/s\"\ngroups = {json.dumps(d['groups'])}\n"
                        f"horizontal = {json.dumps(d['horizontal'])}\nvertical = {json.dumps(d['vertical'])}\n")
        files["bandwidths"] = str(path)
    path = options.out / "heuristic.order"
    path.write_text(reorder_text(arrangements["heuristic"].grid.reshape(-1)))
    files["reorder file"] = str(path)
    shown = {label: described(a, names, group_names, group) for label, a in arrangements.items()}
    panels = [(f"{label} {a.shape[0]} x {a.shape[1]}: {a.cost:.4g} s", shown[label]["grid"],
               shown[label]["groups"]) for label, a in arrangements.items()]
    path = options.out / "arrangement.png"
    plot_arrangements(panels, path)
    files["plot"] = str(path)
    files["json"] = str(options.out / "arrangement.json")
    return files


def measure(options: ArrangeOptions, out: dict, arrangements, mappings, platform, domain, halo) -> dict:
    """Run the halo exchange under each rankfile (reusing a result already written for the same run); the
    measured seconds per step and the measured and predicted initial / heuristic ratios."""
    import math

    if options.out is None:
        raise InputError("--measure writes rankfiles and results: expected --out DIR", where="--measure")
    if options.steps < 1 or options.repeat < 1:
        raise InputError("expected --steps and --repeat >= 1", where="--steps" if options.steps < 1 else "--repeat")
    if options.value_bytes != 8:
        raise InputError("the measured halo exchange sends float64 values: expected --value-bytes 8",
                         where="--value-bytes")
    from commcost.launch.rankfile_runs import RankfileRun, run_under_rankfiles

    todo = {}
    for label in ("initial", "heuristic"):
        r, c = arrangements[label].shape
        local = [math.ceil(domain[0] / r), math.ceil(domain[1] / c), domain[2]]
        program = ["commcost.launch.halo_worker", "--dims", f"{r}x{c}", "--local", "x".join(map(str, local)),
                   "--halo", "x".join(map(str, halo)), "--steps", str(options.steps), "--repeat", str(options.repeat)]
        todo[label] = RankfileRun(Path(out["files"][f"{label} rankfile"]), program,
                                  options.out / f"measured_{label}.json",
                                  {"dims": [r, c], "local": local, "halo": list(halo), "steps": options.steps},
                                  [platform.nodes[n].name for n in mappings[label].node_of_rank])
    runs = run_under_rankfiles(todo, nprocs=len(mappings["initial"].node_of_rank), launcher=options.launcher,
                               mpirun=options.mpirun, timeout=options.timeout, command="arrange")
    ratio = runs["initial"]["time_s"] / runs["heuristic"]["time_s"]
    predicted = {"bandwidths": out["ratio"]}
    for model, times in out.get("models", {}).items():
        predicted[model] = times["initial"] / times["heuristic"]
    return {"runs": {k: {"time_s": v["time_s"], "runs_s": v["runs_s"], "hosts": v["hosts"]} for k, v in runs.items()},
            "ratio": ratio, "predicted_ratio": predicted}
