"""``commcost verify RULES_DIR``: measure, with and without the rules files, what they change.

The measured side of a tuning (issue 12 item 7). ``RULES_DIR/mca-params.conf``
(``commcost tune`` writes it; a site's own works too) names the rules files.
For each collective they decide, on the ranks the launch line starts, a few
sizes per rule band (:func:`commcost.io.deployed_rules.probe_sizes`, up to
``--max-nbytes``) are timed OSU-style (warm-up, a barrier before each
sample, repetitions until the 95% CI of the mean is within 2.5% or the
point's budget is spent; the median) in ``--rounds`` launches per side,
alternating (default, rules, default, rules), so that what one launch
happens to get (which cores, which caches: on a 2-core VM a 4 MiB message
took 200 us in one launch and 600 to 1,200 us in another, each with a
tight CI) counts as noise instead of as a gain. A side's time is the median
of its launches' medians, and a point's verdict needs a gain beyond both
CIs and every launch of the faster side ahead of every launch of the other
(:func:`verdict`). The sides run once as Open MPI runs them by default
(no ``OMPI_MCA_coll_*`` setting; only the site-wide parameter file) and once
with ``OMPI_MCA_mca_base_param_files=RULES_DIR/mca-params.conf`` (then the
site-wide file), as the deploy instructions use it (every rank must receive it: the worker stops
with an error naming the ranks that did not, so a launch line that does not
forward it cannot pass the default off as the rules). Each point prints what runs either way
(:class:`commcost.io.deployed_rules.DeployedRules`), the two measured times
and the measured gain (default / with rules), beside the gain the model
predicts where ``RULES_DIR`` holds the ``params.toml`` and ``platform.toml``
that tune wrote. Times go to ``RULES_DIR/verify.csv`` as they are measured
(a killed run resumes; ``--fresh``, or rules newer than the file, start
over) and the summary to ``RULES_DIR/verify.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from commcost.cli.options import add_html_option, add_unit_option, seconds_budget, write_html
from commcost.cli.registry import OutputFormat, command
from commcost.errors import InputError

LABELS = ("default", "rules")
PARAM_FILES = "OMPI_MCA_mca_base_param_files"
CHANNEL = "any"  # the rows' channel: the MPI's own mix of transports
STARTUP_S = 4.0  # kept back per launch from the budget
MIN_SHARE_S = 1.0  # seconds of measuring a launch gets at least, while any of the budget is left
# a gain whose distance from 1 is within the two points' 95% CIs (relative) is "same"
NOISE_FLOOR = 0.02
ROUNDS = 3  # launches per side by default


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("rules_dir", type=Path, help="folder holding mca-params.conf (as commcost tune writes it)")
    p.add_argument("--procs", help="rank counts to run, comma-separated (default: the calibration's, from "
                                   "params.toml; else 2)")
    p.add_argument("--launcher", help="launch command for a cluster, e.g. 'srun -N 2 --ntasks-per-node 4' "
                                      "(default: the embedded mpirun on this machine)")
    p.add_argument("--mpirun", help="mpirun to use (default: next to this Python, then on PATH)")
    p.add_argument("--collectives", help="comma list (default: every collective the rules decide)")
    p.add_argument("--sizes", help="sizes to time instead of one per rule band (8,4KiB,1MiB)")
    p.add_argument("--max-nbytes", default="4MiB", help="largest size probed per band (default 4MiB)")
    p.add_argument("--max-sizes", type=int, default=4, help="at most this many sizes per collective (default 4)")
    p.add_argument("--budget", type=seconds_budget, default=60.0, help="seconds for all measurements (default 60)")
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help=f"launches per side, alternating default and rules; a verdict needs every launch of "
                        f"the faster side ahead of every launch of the other (default {ROUNDS})")
    p.add_argument("--fresh", action="store_true", help="measure again the points verify.csv already holds")
    p.add_argument("--format", default=OutputFormat.TABLE.value, choices=[f.value for f in OutputFormat])
    add_unit_option(p)
    p.add_argument("--quiet", action="store_true", help="no line per measured point")
    add_html_option(p)


def _collectives(args: argparse.Namespace, rules) -> list:
    from commcost.calibration.plan import TIMED_COLLECTIVES
    from commcost.collectives import Collective

    decided = [c for c in rules.collectives if c.value in TIMED_COLLECTIVES]
    if not args.collectives:
        if not decided:
            raise InputError(f"the rules decide none of {', '.join(TIMED_COLLECTIVES)}", source=str(rules.source))
        return decided
    out = []
    for name in (n.strip() for n in args.collectives.split(",") if n.strip()):
        if name not in TIMED_COLLECTIVES:
            raise InputError(f"expected collectives among {', '.join(TIMED_COLLECTIVES)}, got {name!r}",
                             where="--collectives")
        out.append(Collective(name))
    return out


def _spread(sizes: list[int], most: int) -> list[int]:
    """At most ``most`` of ``sizes`` (sorted), evenly spread, the first and last kept."""
    if len(sizes) <= most:
        return sizes
    if most == 1:
        return [sizes[len(sizes) // 2]]
    return sorted({sizes[round(i * (len(sizes) - 1) / (most - 1))] for i in range(most)})


def plan_points(args: argparse.Namespace, rules, collectives, nprocs: int) -> dict:
    """``{collective: sizes}``: the sizes to time per collective."""
    from commcost.cli.calibrate_command import parse_sizes_option
    from commcost.io.deployed_rules import probe_sizes
    from commcost.units import parse_nbytes

    if args.sizes:
        given = parse_sizes_option(args.sizes)
        return {c: given for c in collectives}
    try:
        high = int(parse_nbytes(args.max_nbytes))
    except (InputError, ValueError):
        raise InputError(f"expected a size (4MiB), got {args.max_nbytes!r}", where="--max-nbytes") from None
    if args.max_sizes < 1:
        raise InputError(f"expected at least 1, got {args.max_sizes}", where="--max-sizes")
    return {c: _spread(probe_sizes(rules.edges(c, nprocs), 1, high), args.max_sizes) for c in collectives}


def _stale(csv_path: Path, rules) -> bool:
    """Whether a rules file changed after ``csv_path`` was written (its 'rules' times are then not theirs)."""
    if not csv_path.exists():
        return False
    conf = rules.source
    settings = [conf] + [Path(v) for v in _named_files(conf)]
    written = csv_path.stat().st_mtime
    return any(p.exists() and p.stat().st_mtime > written for p in settings)


def _named_files(conf: Path) -> list[str]:
    from commcost.io.han_rules import read_mca_params

    return [v for k, (_, v) in read_mca_params(conf).items() if k.endswith("_filename")]


def system_param_file(mpirun: str | None) -> Path | None:
    """The site-wide MCA parameter file of the Open MPI that ``mpirun`` (else ``ompi_info`` on PATH) belongs
    to, ``PREFIX/etc/openmpi-mca-params.conf``, where it exists."""
    import shutil

    program = mpirun or shutil.which("ompi_info")
    if not program:
        return None
    path = Path(program).resolve().parent.parent / "etc" / "openmpi-mca-params.conf"
    return path if path.is_file() else None


def environments(conf: Path, system: Path | None = None) -> dict[str, dict[str, str]]:
    """The launch environment of each side. Neither keeps the caller's ``OMPI_MCA_coll*`` settings or
    parameter-file list; ``default`` reads only the site-wide file ``system`` (so a copy of the rules
    already deployed as ``~/.openmpi/mca-params.conf`` does not leak into it), ``rules`` reads ``conf``
    first, then ``system``."""
    import os

    base = {k: v for k, v in os.environ.items() if not (k.startswith("OMPI_MCA_coll") or k == PARAM_FILES)}
    default = {**base, PARAM_FILES: str(system)} if system else base
    files = [str(conf.resolve())] + ([str(system)] if system else [])
    # Open MPI separates the files with commas (a colon makes one name that does not exist: silently no file)
    return {"default": default, "rules": {**base, PARAM_FILES: ",".join(files)}}


def _measure(args, rules, procs: list[int], plans: dict, csv_path: Path) -> tuple[list[str], list[str]]:
    """Per rank count, ``--rounds`` launches of each side, alternating (equal shares of the budget); the failed
    launches, and those the budget left no time to start (a busy machine's launches take longer than their
    share: the rounds measured stand)."""
    from commcost.calibration.plan import Run
    from commcost.launch.mpi_launch import find_mpirun, launch_line, launch_retrying, run_worker, worker_args
    from commcost.io.measurements import read_measurements

    mpirun = None if args.launcher else find_mpirun(args.mpirun)
    envs = environments(rules.source, system_param_file(mpirun))
    failed: list[str] = []
    unstarted: list[str] = []
    launched: set[tuple[int, str]] = set()  # (P, side) started at least once
    started = time.monotonic()
    seen: set = set()
    rounds = args.rounds  # checked in _verify

    def poll() -> None:
        if args.quiet or not csv_path.exists():
            return
        for row in read_measurements(csv_path):
            key = (row.algorithm, row.collective, row.nbytes, row.nprocs, row.run)
            if key not in seen:
                seen.add(key)
                print(f"  {row.algorithm:<7} P={row.nprocs:<3} {row.collective:<9} {row.nbytes:>9} B  "
                      + (f"round {row.run + 1}  " if rounds > 1 else "") +
                      f"{row.time_s_median or 0:.3e} s ({row.reps} reps{'' if row.converged else ', budget out'})",
                      flush=True)

    poll()
    launches = [(nprocs, label, r) for nprocs in procs for r in range(rounds) for label in LABELS]
    for index, (nprocs, label, run) in enumerate(launches):
        plan = plans[nprocs]
        sizes = sorted({m for ms in plan.values() for m in ms})
        calls = ",".join(":".join([c.value, *map(str, ms)]) for c, ms in plan.items())
        left = args.budget - (time.monotonic() - started)
        share = max((left - STARTUP_S * (len(launches) - index)) / (len(launches) - index), MIN_SHARE_S)
        name = f"P={nprocs} {label}" + (f" round {run + 1}" if rounds > 1 else "")
        if left < MIN_SHARE_S:
            unstarted.append(name)
            continue
        launched.add((nprocs, label))
        namespace = argparse.Namespace(launcher=args.launcher, procs=nprocs, channel_launcher=[])
        line, _ = launch_line(namespace, mpirun, Run(("collective",), CHANNEL, procs=nprocs))
        cmd = [*line, *worker_args(csv_path, CHANNEL, label, sizes, share, run), "--calls", calls]
        if label == "rules":  # every rank must get the parameter file, else this side silently runs the default
            cmd += ["--expect-env", f"{PARAM_FILES}={envs[label][PARAM_FILES]}"]
        rc = launch_retrying(lambda: run_worker(cmd, envs[label], share + STARTUP_S + 4.0, poll),
                             lambda: args.budget - (time.monotonic() - started) >= MIN_SHARE_S)
        if rc == 124:  # stopped at its share: what it measured stands, the points after it have no time
            unstarted.append(f"{name} (stopped at its share of the budget)")
        elif rc != 0:
            failed.append(f"{name} (exit {rc})")
    poll()
    # a side of a rank count with no launch at all is not measured: that fails
    failed += [f"P={nprocs} {label} (no budget left)" for nprocs in procs for label in LABELS
               if (nprocs, label) not in launched]
    return failed, unstarted


def _pricer(rules_dir: Path, collective, nprocs: int):
    """A pricer under the parameters and platform tune wrote into ``rules_dir`` (None without them), with the
    platform's nodes of the mapping for ``nprocs`` ranks."""
    from commcost.workflows.select import make_pricer
    from commcost.workflows.pricing import selection_model
    from commcost.io.params_file import load_params

    params, platform = rules_dir / "params.toml", rules_dir / "platform.toml"
    if not (params.is_file() and platform.is_file()):
        return None
    model, _ = selection_model(load_params(params))
    if model is None:
        return None
    opts = argparse.Namespace(params=params, platform=platform, model=model, library="ompi",
                              collective=collective.value, ppn=None, mapping=None, root=0)
    return make_pricer(opts, [nprocs]), model


def _predicted(price, choice, nprocs: int, nbytes: int) -> float | None:
    if price is None or choice is None:
        return None
    try:
        value = float(price(choice, nprocs, [nbytes], None)[0])
    except InputError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def verdict(entry: dict) -> str:
    """"faster", "slower", "same" or "not measured" for one point (``entry`` as :func:`results` fills it).

    A gain must lie beyond both sides' 95% CIs and :data:`NOISE_FLOOR`; and where a side ran in several
    launches, every launch of the faster side must beat every launch of the other (their ranges apart), as
    one launch's CI says nothing of the next's placement."""
    gain = entry.get("measured_gain")
    if gain is None:
        return "not measured"
    noise = sum(entry.get(f"{label}_ci95_rel") or 0.0 for label in LABELS) + NOISE_FLOOR
    if abs(gain - 1.0) <= noise:
        return "same"
    default, rules = entry.get("default_launches_s") or [], entry.get("rules_launches_s") or []
    if len(default) > 1 or len(rules) > 1:
        apart = min(default) > max(rules) if gain > 1 else max(default) < min(rules)
        if not apart:
            return "same"
    return "faster" if gain > 1 else "slower"


def _side(label: str, runs: list) -> dict:
    """One side of a point over its launches: the median of the launches' medians, the largest CI, whether
    every launch converged, each launch's time, and their spread (largest / smallest - 1; 0 for one)."""
    import statistics

    times = [r.fit_time_s for r in sorted(runs, key=lambda r: r.run)]
    times = [t for t in times if t and t > 0]
    cis = [r.ci95_rel for r in runs if r.ci95_rel is not None]
    return {f"{label}_s": statistics.median(times) if times else None,
            f"{label}_ci95_rel": max(cis) if cis else None,
            f"{label}_converged": all(bool(r.converged) for r in runs) if runs else None,
            f"{label}_launches_s": times,
            f"{label}_launch_spread": max(times) / min(times) - 1.0 if len(times) > 1 else 0.0}


def results(args, rules, nprocs: int, plan: dict, csv_path: Path) -> list[dict]:
    """One entry per planned point with what runs either way, the measured and predicted times and gains."""
    from commcost.collectives.ompi_han import tuned_rules_inside
    from commcost.io.deployed_rules import open_mpi_default
    from commcost.io.measurements import read_measurements

    rows: dict[tuple, list] = {}
    for row in read_measurements(csv_path) if csv_path.exists() else []:
        if row.nprocs == nprocs and row.algorithm in LABELS and row.reps:
            rows.setdefault((row.algorithm, row.collective, row.nbytes), []).append(row)
    nodes = {row.nnodes for runs in rows.values() for row in runs if row.nnodes}
    out = []
    for collective, sizes in plan.items():
        pricing = _pricer(args.rules_dir, collective, nprocs)
        price, model = pricing if pricing else (None, None)
        for nbytes in sizes:
            measured = {label: rows.get((label, collective.value, nbytes), []) for label in LABELS}
            nnodes = next((m.nnodes for runs in measured.values() for m in runs if m.nnodes), None) or \
                (max(nodes) if nodes else 1)
            default = open_mpi_default(collective, nprocs, nbytes, nnodes)
            tuned = rules.runs(collective, nprocs, nbytes, nnodes)
            entry = {"collective": collective.value, "nprocs": nprocs, "nnodes": nnodes, "nbytes": nbytes,
                     "default_runs": default.label, "rules_run": tuned.label}
            for label, runs in measured.items():
                entry.update(_side(label, runs))
            entry["measured_gain"] = (entry["default_s"] / entry["rules_s"]
                                      if entry["default_s"] and entry["rules_s"] else None)
            entry["launch_spread"] = max(entry[f"{label}_launch_spread"] for label in LABELS)
            same_algorithm = default.label.split(": ", 1)[-1] == tuned.label.split(": ", 1)[-1]
            entry["same_algorithm"] = same_algorithm
            entry["verdict"] = "same algorithm" if same_algorithm else verdict(entry)
            with tuned_rules_inside(rules.tuned_pick):  # han's inner calls as the deployed files make them
                with_rules = _predicted(price, tuned.choice, nprocs, nbytes)
            predicted = {"default": _predicted(price, default.choice, nprocs, nbytes), "rules": with_rules}
            entry["predicted_default_s"], entry["predicted_rules_s"] = predicted["default"], predicted["rules"]
            entry["predicted_gain"] = 1.0 if same_algorithm else (
                predicted["default"] / predicted["rules"] if predicted["default"] and predicted["rules"] else None)
            entry["model"] = model
            out.append(entry)
    return out


def summary(points: list[dict]) -> dict:
    """Over the points where the rules change the algorithm: geometric-mean measured and predicted gains,
    and the points made slower beyond noise; over the others (same algorithm both ways), the largest
    measured difference, which is the run-to-run noise of this machine."""
    changed = [p for p in points if not p["same_algorithm"]]
    measured = [p["measured_gain"] for p in changed if p["measured_gain"]]
    predicted = [p["predicted_gain"] for p in changed if p["measured_gain"] and p["predicted_gain"]]
    unchanged = [p["measured_gain"] for p in points if p["same_algorithm"] and p["measured_gain"]]

    def geomean(values):
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

    return {"points": len(points), "changed": len(changed), "measured": len(measured),
            "measured_gain_geomean": geomean(measured), "predicted_gain_geomean": geomean(predicted),
            "noise": max((abs(math.log(g)) for g in unchanged), default=None) and
            math.exp(max(abs(math.log(g)) for g in unchanged)) - 1.0,
            "launch_spread": max((p.get("launch_spread") or 0.0 for p in points), default=None),
            "slower": [f"{p['collective']} {p['nbytes']} B" for p in changed if p["verdict"] == "slower"],
            "faster": sum(p["verdict"] == "faster" for p in changed),
            "same": sum(p["verdict"] == "same" for p in changed)}


def render(points: list[dict], totals: dict, conf: Path, unit: str | None = None) -> str:
    """The table people read: per point what runs either way, measured times (in ``unit``) and gains, predicted
    gain."""
    from commcost.units import format_nbytes, format_seconds

    def seconds(value):
        return format_seconds(value, unit) if value else "-"

    def ratio(value):
        return f"{value:.2f}x" if value else "-"

    def spread(value):
        return f"{100 * value:.0f}%" if value is not None else "-"

    lines = [f"  verify {conf}: measured default vs with the rules (median), gain = default / with rules"]
    header = (f"  {'collective':<10} {'P':>4} {'nodes':>5} {'nbytes':>9}  {'default runs':<34} {'with rules':<34} "
              f"{'default':>10} {'rules':>10} {'gain':>7} {'spread':>6} {'predicted':>9}  verdict")
    lines += [header, "  " + "-" * (len(header) - 2)]
    for p in points:
        lines.append(f"  {p['collective']:<10} {p['nprocs']:>4} {p['nnodes']:>5} {format_nbytes(p['nbytes']):>9}  "
                     f"{p['default_runs'][:34]:<34} {p['rules_run'][:34]:<34} {seconds(p['default_s']):>10} "
                     f"{seconds(p['rules_s']):>10} {ratio(p['measured_gain']):>7} {spread(p.get('launch_spread')):>6} "
                     f"{ratio(p['predicted_gain']):>9}  "
                     f"{p['verdict']}")
    if totals["measured"]:
        lines.append(f"  where the rules change the algorithm: measured gain {ratio(totals['measured_gain_geomean'])} "
                     f"(geometric mean of {totals['measured']} points), predicted "
                     f"{ratio(totals['predicted_gain_geomean'])}; {totals['faster']} faster, {totals['same']} within "
                     f"noise, {len(totals['slower'])} slower"
                     + (f" ({', '.join(totals['slower'])})" if totals["slower"] else ""))
    else:
        lines.append(f"  the rules run the same algorithms as Open MPI's default at these {totals['points']} points "
                     "(nothing to gain here)")
    if totals["noise"] is not None:
        lines.append(f"  run-to-run noise (same algorithm both ways): up to {100 * totals['noise']:.0f}%")
    if totals.get("launch_spread"):
        lines.append(f"  launch-to-launch spread (the same side in its launches): up to "
                     f"{100 * totals['launch_spread']:.0f}%; a verdict needs every launch of one side ahead of "
                     "every launch of the other")
    return "\n".join(lines)


def _page(args: argparse.Namespace, report: dict, conf: Path):
    """``--html``: provenance (the rules files with their digests), then the measured gains."""
    from commcost.report.html_page import HtmlPage
    from commcost.report.provenance import run_provenance
    from commcost.report.verify_page import add_verify

    inputs = {"mca-params.conf": conf, **{Path(f).name: f for f in _named_files(conf)},
              "measurements": args.rules_dir / "verify.csv"}
    page = HtmlPage(f"commcost verify: {args.rules_dir}", run_provenance(getattr(args, "argv", None), inputs))
    add_verify(page, report)
    page.section("mca-params.conf")
    page.preformatted(conf.read_text(errors="replace"))
    return page


@command("verify", "time each tuned collective with and without the rules files (measured vs predicted gain)",
         _configure)
def _verify(args: argparse.Namespace) -> int:
    from commcost.calibration.plan import MAX_CALIBRATION_RANKS
    from commcost.workflows.grid import parse_points
    from commcost.io.deployed_rules import DeployedRules
    from commcost.io.params_file import load_params

    conf = args.rules_dir / "mca-params.conf"
    if not conf.is_file():
        raise InputError("no mca-params.conf here; expected the folder commcost tune wrote", source=str(args.rules_dir))
    rules = DeployedRules.load(conf)
    if rules.tuned is None and rules.han is None:
        raise InputError("turns on no rules file (coll_tuned_use_dynamic_rules, coll_han_use_dynamic_file_rules)",
                         source=str(conf))
    if args.procs:
        procs = parse_points(args.procs, "--procs", 2, maximum=MAX_CALIBRATION_RANKS)  # real ranks are started
    else:
        params = args.rules_dir / "params.toml"
        meta_procs = load_params(params).meta.get("procs") if params.is_file() else None
        procs = [int(meta_procs) if isinstance(meta_procs, int) and meta_procs >= 2 else 2]
        if procs[0] > MAX_CALIBRATION_RANKS:
            raise InputError(f"procs = {procs[0]:,}: verify starts that many ranks; expected at most "
                             f"{MAX_CALIBRATION_RANKS:,} (give --procs)", source=str(params))
    if not args.budget > 0:
        raise InputError(f"expected a positive number of seconds, got {args.budget}", where="--budget")
    if args.rounds < 1:
        raise InputError(f"expected at least 1 launch per side, got {args.rounds}", where="--rounds")
    collectives = _collectives(args, rules)
    plans = {nprocs: plan_points(args, rules, collectives, nprocs) for nprocs in procs}
    csv_path = args.rules_dir / "verify.csv"
    if csv_path.exists() and (args.fresh or _stale(csv_path, rules)):
        why = "--fresh" if args.fresh else "the rules changed since it was written"
        csv_path.unlink()
        print(f"  verify: measuring afresh ({why})", flush=True)
    elif csv_path.exists():
        print(f"  verify: reusing the points {csv_path} holds (--fresh measures them again)", flush=True)
    failed, unstarted = _measure(args, rules, procs, plans, csv_path)
    points = [p for nprocs in procs for p in results(args, rules, nprocs, plans[nprocs], csv_path)]
    totals = summary(points)
    report = {"rules": str(conf.resolve()), "procs": procs, "points": points, "summary": totals,
              "failed_runs": failed, "unstarted_runs": unstarted}
    (args.rules_dir / "verify.json").write_text(json.dumps(report, indent=2) + "\n")
    if args.html:
        write_html(args, _page(args, report, conf))
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(report, indent=2))
    else:
        print(render(points, totals, conf, args.unit))
    import sys

    if unstarted:
        print(f"commcost: note: the budget was spent before {', '.join(unstarted)}; the rounds measured stand "
              "(a larger --budget measures them)", file=sys.stderr)
    if failed:
        print(f"commcost: verify runs failed or were not started: {', '.join(failed)}", file=sys.stderr)
        return 2
    return 0
