"""Verify: measure, with and without the rules files in a folder, what they change (:func:`verify`).

The measured side of a tuning (issue 12 item 7). ``RULES_DIR/mca-params.conf``
(``commcost tune`` writes it; a site's own works too) names the rules files.
For each collective they decide, on the ranks the launch line starts, a few
sizes per rule band (:func:`commcost.io.deployed_rules.probe_sizes`, up to
``max_nbytes``) are timed OSU-style (warm-up, a barrier before each
sample, repetitions until the 95% CI of the mean is within 2.5% or the
point's budget is spent; the median) in ``rounds`` launches per side,
alternating (default, rules, default, rules), so that what one launch
happens to get (which cores, which caches: on a 2-core VM a 4 MiB message
took 200 us in one launch and 600 to 1,200 us in another, each with a
tight CI) counts as noise instead of as a gain. A side's time is the median
of its launches' medians, and a point's verdict needs a gain beyond both
CIs and every launch of the faster side ahead of every launch of the other
(:func:`commcost.workflows.verify_results.verdict`). The sides run once as
Open MPI runs them by default (no ``OMPI_MCA_coll_*`` setting; only the
site-wide parameter file) and once with
``OMPI_MCA_mca_base_param_files=RULES_DIR/mca-params.conf`` (then the
site-wide file), as the deploy instructions use it (every rank must receive it: the worker stops
with an error naming the ranks that did not, so a launch line that does not
forward it cannot pass the default off as the rules;
:mod:`commcost.workflows.verify_launch`). Each point says what runs either way
(:class:`commcost.io.deployed_rules.DeployedRules`), the two measured times
and the measured gain (default / with rules), beside the gain the model
predicts where ``RULES_DIR`` holds the ``params.toml`` and ``platform.toml``
that tune wrote. Times go to ``RULES_DIR/verify.csv`` as they are measured
(a killed run resumes; ``fresh``, or rules newer than the file, start
over) and the summary to ``RULES_DIR/verify.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from commcost.errors import InputError
from commcost.workflows.verify_launch import measure
from commcost.workflows.verify_results import results, summary

ROUNDS = 3  # launches per side by default


@dataclass
class VerifyOptions:
    """What to verify: the fields are ``commcost verify``'s options (its ``--help`` says each)."""

    rules_dir: Path
    procs: str | None = None
    launcher: str | None = None
    mpirun: str | None = None
    collectives: str | None = None
    sizes: str | None = None
    max_nbytes: str = "4MiB"
    max_sizes: int = 4
    budget: float = 60.0
    rounds: int = ROUNDS
    fresh: bool = False
    quiet: bool = False


@dataclass
class VerifyResult:
    """What verify measured: ``report`` is the document written to ``verify.json`` (and printed by
    ``--format json``); ``conf`` the ``mca-params.conf`` verified; the points, their summary, and the
    launches that failed or that the budget left no time for."""

    report: dict
    conf: Path
    points: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    unstarted: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """2 where a launch failed or a side of a rank count was not launched at all, else 0."""
        return 2 if self.failed else 0


def verify(options: VerifyOptions, progress: TextIO | None = None) -> VerifyResult:
    """Verify the rules in ``options.rules_dir`` (see the module docstring): check the options, plan the
    points, launch both sides, read the results back and write ``verify.json``. The lines saying what it
    does (and, unless ``quiet``, one per measured point) go to ``progress`` (none if None)."""
    from commcost.io.deployed_rules import DeployedRules

    conf = options.rules_dir / "mca-params.conf"
    if not conf.is_file():
        raise InputError("no mca-params.conf here; expected the folder commcost tune wrote",
                         source=str(options.rules_dir))
    rules = DeployedRules.load(conf)
    if rules.tuned is None and rules.han is None:
        raise InputError("turns on no rules file (coll_tuned_use_dynamic_rules, coll_han_use_dynamic_file_rules)",
                         source=str(conf))
    procs = rank_counts(options)
    if not options.budget > 0:
        raise InputError(f"expected a positive number of seconds, got {options.budget}", where="--budget")
    if options.rounds < 1:
        raise InputError(f"expected at least 1 launch per side, got {options.rounds}", where="--rounds")
    collectives = _collectives(options, rules)
    plans = {nprocs: plan_points(options, rules, collectives, nprocs) for nprocs in procs}
    csv_path = options.rules_dir / "verify.csv"
    if csv_path.exists() and (options.fresh or _stale(csv_path, rules)):
        why = "--fresh" if options.fresh else "the rules changed since it was written"
        csv_path.unlink()
        _say(progress, f"  verify: measuring afresh ({why})")
    elif csv_path.exists():
        _say(progress, f"  verify: reusing the points {csv_path} holds (--fresh measures them again)")
    failed, unstarted = measure(options, rules, procs, plans, csv_path, progress)
    points = [p for nprocs in procs for p in results(options.rules_dir, rules, nprocs, plans[nprocs], csv_path)]
    totals = summary(points)
    report = {"rules": str(conf.resolve()), "procs": procs, "points": points, "summary": totals,
              "failed_runs": failed, "unstarted_runs": unstarted}
    (options.rules_dir / "verify.json").write_text(json.dumps(report, indent=2) + "\n")
    return VerifyResult(report, conf, points, totals, failed, unstarted)


def _say(progress: TextIO | None, line: str) -> None:
    if progress is not None:
        print(line, file=progress, flush=True)


def rank_counts(options: VerifyOptions) -> list[int]:
    """The rank counts to run: ``procs`` (comma-separated), else the calibration's (``params.toml``'s
    ``[meta] procs``), else 2; never more than a calibration starts."""
    from commcost.calibration.plan import MAX_CALIBRATION_RANKS
    from commcost.io.params_file import load_params
    from commcost.workflows.grid import parse_points

    if options.procs:
        return parse_points(options.procs, "--procs", 2, maximum=MAX_CALIBRATION_RANKS)  # real ranks are started
    params = options.rules_dir / "params.toml"
    meta_procs = load_params(params).meta.get("procs") if params.is_file() else None
    procs = [int(meta_procs) if isinstance(meta_procs, int) and meta_procs >= 2 else 2]
    if procs[0] > MAX_CALIBRATION_RANKS:
        raise InputError(f"procs = {procs[0]:,}: verify starts that many ranks; expected at most "
                         f"{MAX_CALIBRATION_RANKS:,} (give --procs)", source=str(params))
    return procs


def _collectives(args: VerifyOptions, rules) -> list:
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


def plan_points(args: VerifyOptions, rules, collectives, nprocs: int) -> dict:
    """``{collective: sizes}``: the sizes to time per collective."""
    from commcost.io.deployed_rules import probe_sizes
    from commcost.units import parse_nbytes
    from commcost.workflows.calibrate_plan import parse_sizes_option

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
    settings = [conf] + [Path(v) for v in named_files(conf)]
    written = csv_path.stat().st_mtime
    return any(p.exists() and p.stat().st_mtime > written for p in settings)


def named_files(conf: Path) -> list[str]:
    """The files an ``mca-params.conf`` names (its ``*_filename`` settings: the rules files)."""
    from commcost.io.han_rules import read_mca_params

    return [v for k, (_, v) in read_mca_params(conf).items() if k.endswith("_filename")]
