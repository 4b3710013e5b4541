"""What Open MPI 5 runs under a deployed ``mca-params.conf``, and what it runs without one.

An ``mca-params.conf`` written by ``commcost tune`` (or a site's own)
turns on coll/tuned's rules file (``coll_tuned_use_dynamic_rules`` and
``coll_tuned_dynamic_rules_filename``) and coll/han's
(``coll_han_use_dynamic_file_rules`` and ``coll_han_dynamic_rules_filename``);
``coll = ^han`` turns han off. :class:`DeployedRules` answers, for one call
(collective, P ranks on some nodes, nbytes as commcost counts them), which
algorithm Open MPI runs with the files and which it runs by default:

* on one node, or where han is off or does not handle the collective,
  coll/tuned decides: the tuned file's rule, else its fixed decision;
* on several nodes han decides at the ``global_communicator`` level: its
  file's rule names han (``@intra``/``@simple``) or hands the call to tuned;
  no rule (or no file) keeps han, Open MPI's default.

``commcost verify`` uses it to label what it measures and to pick the sizes
(a few per rule band) where the two may differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from commcost.collectives import Collective, find
from commcost.collectives.ompi_han import HAN_ALGORITHMS, default_name
from commcost.errors import InputError
from commcost.io.han_rules import HAN_COLLECTIVES, mca_bool, read_mca_params
from commcost.io.han_rules_read import HanRules, read_han_rules
from commcost.io.ompi_rules import BLOCK_COLLECTIVES, OmpiRules, choice_of_rule
from commcost.io.ompi_rules_read import read_ompi_rules
from commcost.selection.decision import Choice

# han's @name -> commcost's registry name (none: han's default for the collective, ompi_han.default_name)
HAN_NAMES = {at: f"ompi.{name}" for name, at in HAN_ALGORITHMS.items()}
# said of han where its sub-calls follow tuned's rules: not the algorithm the default runs, nor the one priced
TUNED_INSIDE = "(its calls inside nodes and between them follow tuned's rules)"


@dataclass(frozen=True)
class Runs:
    """What runs for one call: a label for people (``tuned rule: binomial(segsize=8192)``) and the algorithm
    as a Choice of the registry (None where commcost does not model it)."""

    label: str
    choice: Choice | None


def _on(settings: dict[str, tuple[int, str]], name: str) -> bool:
    return bool(mca_bool(settings.get(name, (0, "0"))[1]))


@dataclass(frozen=True)
class DeployedRules:
    """The rules files an mca-params.conf turns on (None where it turns none on)."""

    source: Path
    tuned: OmpiRules | None
    han: HanRules | None
    han_enabled: bool = True
    han_tunables: dict[str, dict[str, int]] = field(default_factory=dict)  # per collective: segsize, up, low

    @classmethod
    def load(cls, conf: str | Path) -> "DeployedRules":
        """Read ``conf`` and the rules files it names (relative names are relative to the conf's folder, as a
        rank started there would open them)."""
        conf = Path(conf)
        settings = read_mca_params(conf)

        def named(key: str) -> Path:
            line, value = settings.get(key, (0, ""))
            if not value:
                raise InputError(f"{key} is not set, though the rules it names are turned on", source=str(conf))
            path = Path(value) if Path(value).is_absolute() else conf.parent / value
            if not path.is_file():
                raise InputError(f"no file {value!r}", source=str(conf), where=f"line {line}")
            return path

        tuned = read_ompi_rules(named("coll_tuned_dynamic_rules_filename")) \
            if _on(settings, "coll_tuned_use_dynamic_rules") else None
        han = read_han_rules(named("coll_han_dynamic_rules_filename")) \
            if _on(settings, "coll_han_use_dynamic_file_rules") else None
        coll = settings.get("coll", (0, ""))[1].replace(" ", "")
        han_enabled = not (coll.startswith("^") and "han" in coll[1:].split(",")) and \
            (not coll or coll.startswith("^") or "han" in coll.split(","))
        return cls(conf, tuned, han, han_enabled, _han_tunables(settings, conf))

    @property
    def collectives(self) -> list[Collective]:
        """The collectives a rules file decides."""
        names = set(self.tuned.collectives if self.tuned else ()) | set(self.han.collectives if self.han else ())
        return [c for c in Collective if c.value in names]

    def _han_decides(self, collective: Collective, nnodes: int) -> bool:
        return self.han_enabled and nnodes > 1 and collective.value in HAN_COLLECTIVES

    def _tuned_inside_han(self, ppn: int, nnodes: int) -> bool:
        """Whether tuned's rules file has a rule other than its fixed decision for a communicator of ``ppn``
        or ``nnodes`` ranks (han's levels), for a collective han calls there: then han's calls inside nodes
        and between them run tuned's rules, not the fixed decision commcost prices han with."""
        if self.tuned is None:
            return False
        for name in HAN_COLLECTIVES:
            for size in {ppn, nnodes}:
                block = self.tuned.block_at(name, size)
                if block is not None and any(r.alg != 0 for r in block.rules):
                    return True
        return False

    def tuned_pick(self, collective: Collective, nprocs: int, nbytes: int):
        """What coll/tuned's rules file makes it run for a call (algorithm, params), None where it keeps its
        fixed decision: for pricing han with these rules inside (:func:`commcost.collectives.ompi_han.
        tuned_rules_inside`)."""
        rule = self.tuned.decide_call(collective, nprocs, nbytes) if self.tuned else None
        if rule is None:
            return None
        choice = choice_of_rule(rule, collective)
        return choice.algorithm, dict(choice.params)

    def runs(self, collective: Collective, nprocs: int, nbytes: int, nnodes: int) -> Runs:
        """What Open MPI runs for the call with these files."""
        if self._han_decides(collective, nnodes):
            rule = self.han.decide(collective.value, nprocs, nbytes) if self.han else None
            if rule is None or rule.component == "han":
                runs = _han(collective, rule.algorithm if rule else "", "han rule" if rule else "han default",
                            self.han_tunables.get(collective.value, {}))
                if self._tuned_inside_han(nprocs // nnodes, nnodes):
                    return Runs(f"{runs.label} {TUNED_INSIDE}", runs.choice)
                return runs
            if rule.component != "tuned":
                return Runs(f"han rule: {rule.component} (not modelled)", None)
        rule = self.tuned.decide_call(collective, nprocs, nbytes) if self.tuned else None
        if rule is not None:
            choice = choice_of_rule(rule, collective)
            return Runs(f"tuned rule: {choice.label}", choice)
        return fixed(collective, nprocs, nbytes)

    def edges(self, collective: Collective, nprocs: int) -> list[int]:
        """The sizes (commcost's nbytes) at which a rule of either file that applies on ``nprocs`` ranks
        starts: the decision can only change there."""
        out = {0}
        block = self.tuned.block_at(collective.value, nprocs) if self.tuned else None
        factor = nprocs if collective in BLOCK_COLLECTIVES else 1
        for rule in block.rules if block else ():
            out.add(math.ceil(rule.msg_lo / factor))
        config = self.han.config_at(collective.value, nprocs) if self.han else None
        out.update(r.msg_lo for r in (config.rules if config else ()))
        return sorted(out)


def _han_tunables(settings: dict[str, tuple[int, str]], conf: Path) -> dict[str, dict[str, int]]:
    """han's global tunables the conf sets, per collective (``coll_han_<coll>_segsize``, ``_up_module``,
    ``_low_module``), as the parameters of commcost's han schedules; a value that is no integer is an
    InputError naming the line."""
    from commcost.selection.han_config import HAN_TUNABLES

    out: dict[str, dict[str, int]] = {}
    for name in HAN_COLLECTIVES:
        for key, suffix in HAN_TUNABLES.items():
            line, value = settings.get(f"coll_han_{name}_{suffix}", (0, ""))
            if not value:
                continue
            try:
                number = int(value)
            except ValueError:
                raise InputError(f"coll_han_{name}_{suffix} must be an integer, got {value!r}", source=str(conf),
                                 where=f"line {line}") from None
            if number < 0:
                raise InputError(f"coll_han_{name}_{suffix} must be at least 0, got {number}", source=str(conf),
                                 where=f"line {line}")
            out.setdefault(name, {})[key] = number
    return out


def _han(collective: Collective, algorithm: str, why: str, tunables: dict[str, int] | None = None) -> Runs:
    try:
        registered = find(collective, HAN_NAMES[algorithm] if algorithm else f"ompi.{default_name(collective)}")
    except InputError:
        return Runs(f"{why}: han" + (f"@{algorithm}" if algorithm else "") + " (not modelled)", None)
    params = registered.resolve_params()
    own = {k: v for k, v in (tunables or {}).items() if k in params}
    params.update(own)
    shown = ", ".join(f"{k}={v}" for k, v in sorted(own.items()))
    return Runs(f"{why}: {registered.name}" + (f" ({shown})" if shown else ""), Choice(registered, params))


def fixed(collective: Collective, nprocs: int, nbytes: int) -> Runs:
    """Open MPI's fixed decision for the call, as coll/tuned takes it with no rules file."""
    from commcost.selection.ompi_fixed import as_choice, decide

    decision = decide(collective, nprocs, nbytes)
    choice = as_choice(decision)
    return Runs(f"fixed: {choice.label if choice else decision.name + ' (not modelled)'}", choice)


def open_mpi_default(collective: Collective, nprocs: int, nbytes: int, nnodes: int) -> Runs:
    """What Open MPI 5 runs with no rules file: coll/han on several nodes (for the collectives han
    handles), else coll/tuned's fixed decision."""
    if nnodes > 1 and collective.value in HAN_COLLECTIVES:
        return _han(collective, "", "han default")
    return fixed(collective, nprocs, nbytes)


def probe_sizes(edges: list[int], low: int, high: int) -> list[int]:
    """One size per rule band within ``[low, high]``: the power of two nearest the band's geometric middle
    that lies in the band, else the band's first size."""
    out = []
    bounds = [*edges, high + 1]
    for lo, after in zip(bounds, bounds[1:]):
        lo, hi = max(lo, low), min(after - 1, high)
        if lo > hi:
            continue
        middle = 2 ** round(math.log2(math.sqrt(lo * hi)))
        out.append(middle if lo <= middle <= hi else lo)
    return sorted(set(out))
