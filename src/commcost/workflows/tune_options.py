"""What ``commcost tune`` takes and gives back, as plain dataclasses (:mod:`commcost.workflows.tune`).

:class:`TuneOptions` holds the options (field names are the command line's
``dest`` names, so the command builds it with
:func:`commcost.workflows.options.from_namespace`); :class:`TuneRun` is one
run's working copy of them plus what the steps hand on to each other (the
warnings, the views of the HTML report, what was deployed); :class:`TuneResult`
is what the run leaves for a caller to present.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

VERIFY_SHARE, VERIFY_MIN_S, VERIFY_MAX_S = 0.15, 15.0, 120.0  # the measured check's share of the budget
SELECT_PROCS_PER_S, SELECT_MAX_S = 20.0, 60.0  # the selection's time per collective: 5 s + P_max / 20, capped
# ... times this with han's components priced too (bcast, reduce, allreduce on P 64..384, 32 per node, 1 KiB..4 MiB:
# 37 s with han's defaults, 41 s with adapt, 126 s with adapt and sm)
HAN_MODULES_COST = {"default": 1.0, "adapt": 1.25, "all": 3.5}
CONVERGED_FLOOR = 0.8  # under this share of converged points tune warns (and with --strict writes nothing)
MU_BOUND = 1.5  # nor over this mean proportional error of the fit (paper 000's mu; 1 is exact)


@dataclass
class TuneOptions:
    """The options of one tune: what to calibrate with (``procs``, ``budget`` in seconds, the launch lines),
    the rules' grid (``collectives``, ``select_procs``, ``sizes`` as the command line writes them, ``ppn``),
    the decision variables, the measured check, and ``from_measurements`` + ``platform`` to skip calibrating.
    ``format`` "json" makes a dry run's plan JSON; ``unit`` is the tables' time unit of calibrate and verify."""

    procs: int = 2
    out: Path = Path("run")
    budget: float = 180.0
    launcher: str | None = None
    mpirun: str | None = None
    collectives: str = "bcast"
    ppn: int = field(default_factory=lambda: os.cpu_count() or 1)
    select_procs: str = "2..1024"
    sizes: str = "1..4MiB"
    segsizes: str = "0,8KiB,32KiB,128KiB"
    han_segsizes: str = "16KiB,256KiB"
    han_modules: str = "default"
    calibration_rounds: int = 1
    mpich_base: Path | None = None
    channel_launcher: list[str] = field(default_factory=list)
    nodes: int | None = None
    verify_launcher: str | None = None
    verify_procs: str | None = None
    no_verify: bool = False
    fresh: bool = False
    min_gain: float = 0.10
    format: str = "table"
    unit: str = "us"
    strict: bool = False
    quiet: bool = False
    dry_run: bool = False
    from_measurements: Path | None = None
    platform: Path | None = None
    barrier_skew: str | None = None  # from_measurements: the barrier before each timed call (fit --barrier-skew)


@dataclass
class TuneRun(TuneOptions):
    """One run's copy of the options (``--nodes`` fills in the launch lines) and what its steps share:
    ``warnings`` the HTML report repeats, the ``views`` of each selection, ``deployed`` (the selections, han
    configurations and provenance the files hold; the measured check may withdraw some), and for
    ``--from-measurements`` the cross-validated ``strategies`` and the ``row_terms`` the rules are priced as."""

    warnings: list[str] = field(default_factory=list)
    views: list[dict] = field(default_factory=list)
    deployed: Any = None
    strategies: dict | None = None
    row_terms: dict | None = None

    @classmethod
    def of(cls, options: TuneOptions) -> "TuneRun":
        """A working copy of ``options`` (the caller's object is left as it was)."""
        return cls(**{f.name: getattr(options, f.name) for f in fields(TuneOptions)})


@dataclass
class TuneResult:
    """What a tune leaves: the exit ``code`` (0, or the failing step's), the ``report`` written to
    OUT/report.json (None when the run stopped before it: a dry run, a failed calibration), and what a report
    page shows of it: the parameters, the rules' platform, the measurements fitted, the mca-params text and the
    files written, the views of each selection and the warnings."""

    code: int
    report: dict | None = None
    params: Any = None
    params_path: Path | None = None
    platform_path: Path | None = None
    measurements: Path | None = None
    conf: str | None = None
    written: list[Path] = field(default_factory=list)
    views: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
