"""What ``commcost map --out DIR`` writes and ``--measure`` runs.

``--out DIR`` writes ``optimized.rankfile`` (Open MPI: ``mpirun --map-by
rankfile:file=...``), ``optimized.nodes`` (one node per rank: ``--mapping
file:...`` for ``commcost predict``), the same two for the sequential
placement, the schedule (``schedule.json``) and ``map.json``. ``--measure``
runs that schedule for real (:mod:`commcost.launch.kernel_worker`: every
phase's transmissions as Isend/Irecv or Send, barrier-separated, max over
ranks, median of ``--repeat`` runs) under both rankfiles
(:mod:`commcost.launch.rankfile_runs`: every rank's host checked, results
reused) and compares measured with predicted ratios.
"""

from __future__ import annotations

from pathlib import Path

from commcost.workflows.map_options import MapOptions


def write_placements(out_dir: Path, platform, placements: dict, schedule) -> dict[str, str]:
    """The schedule, and a rankfile and a node file per placement, in ``out_dir``; their paths by kind."""
    from commcost.io.mapping_file import rankfile_text, write_node_names
    from commcost.io.schedule_file import dump_schedule
    from commcost.platform import Mapping

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"schedule": str(out_dir / "schedule.json")}
    dump_schedule(schedule, out_dir / "schedule.json")
    for label, node_of_rank in placements.items():
        mapping = Mapping.on_nodes(node_of_rank, label)
        path = out_dir / f"{label}.rankfile"
        path.write_text(rankfile_text(mapping, platform))
        files[f"{label} rankfile"] = str(path)
        path = out_dir / f"{label}.nodes"
        write_node_names(mapping, platform, path)
        files[f"{label} nodes"] = str(path)
    files["json"] = str(out_dir / "map.json")
    return files


def measure(options: MapOptions, out: dict, platform, schedule, placements: dict) -> dict:
    """Run the schedule (:mod:`commcost.launch.kernel_worker`) under the sequential and the optimized rankfile;
    the measured seconds and the measured and predicted sequential / optimized ratios."""
    import hashlib

    from commcost.launch.rankfile_runs import RankfileRun, run_under_rankfiles

    digest = hashlib.sha256(Path(out["files"]["schedule"]).read_bytes()).hexdigest()
    nodes = {label: [platform.nodes[n].name for n in placements[label]] for label in ("sequential", "optimized")}
    program = ["commcost.launch.kernel_worker", "--schedule", str(Path(out["files"]["schedule"]).resolve()),
               "--repeat", str(options.repeat)]
    todo = {label: RankfileRun(Path(out["files"][f"{label} rankfile"]), program,
                               options.out / f"measured_{label}.json",
                               {"schedule_sha256": digest, "placement": nodes[label], "repeat": options.repeat},
                               nodes[label])
            for label in ("sequential", "optimized")}
    runs = run_under_rankfiles(todo, nprocs=schedule.nprocs, launcher=options.launcher, mpirun=options.mpirun,
                               timeout=options.timeout, command="map")
    predicted = {options.model: out["gain_vs_sequential"]}
    for name, t in out["other_models"].items():
        predicted[name] = t["sequential_s"] / t["optimized_s"] if t["optimized_s"] > 0 else 1.0
    return {"runs": {k: {"time_s": v["time_s"], "runs_s": v["runs_s"], "hosts": v["hosts"]} for k, v in runs.items()},
            "ratio": runs["sequential"]["time_s"] / runs["optimized"]["time_s"], "predicted_ratio": predicted}
