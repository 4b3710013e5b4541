"""``commcost verify RULES_DIR``: measure, with and without the rules files, what they change.

The command line of :func:`commcost.workflows.verify.verify` (its docstring
says what is timed, how the sides alternate and what a verdict needs): the
options become a :class:`~commcost.workflows.verify.VerifyOptions`, and the
points are printed here as a table (:func:`render`) or, with ``--format
json``, as the document written to ``RULES_DIR/verify.json``; ``--html``
writes a page with the rules files' provenance.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commcost.cli.options import add_html_option, add_unit_option, seconds_budget, write_html
from commcost.cli.registry import OutputFormat, command
from commcost.workflows.options import from_namespace
from commcost.workflows.verify import ROUNDS, VerifyOptions, named_files, verify


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

    inputs = {"mca-params.conf": conf, **{Path(f).name: f for f in named_files(conf)},
              "measurements": args.rules_dir / "verify.csv"}
    page = HtmlPage(f"commcost verify: {args.rules_dir}", run_provenance(getattr(args, "argv", None), inputs))
    add_verify(page, report)
    page.section("mca-params.conf")
    page.preformatted(conf.read_text(errors="replace"))
    return page


@command("verify", "time each tuned collective with and without the rules files (measured vs predicted gain)",
         _configure)
def _verify(args: argparse.Namespace) -> int:
    result = verify(from_namespace(VerifyOptions, args), progress=sys.stdout)
    if args.html:
        write_html(args, _page(args, result.report, result.conf))
    if args.format == OutputFormat.JSON.value:
        print(json.dumps(result.report, indent=2))
    else:
        print(render(result.points, result.summary, result.conf, args.unit))
    if result.unstarted:
        print(f"commcost: note: the budget was spent before {', '.join(result.unstarted)}; the rounds measured "
              "stand (a larger --budget measures them)", file=sys.stderr)
    if result.failed:
        print(f"commcost: verify runs failed or were not started: {', '.join(result.failed)}", file=sys.stderr)
    return result.exit_code
