"""Open MPI 5's coll/han dynamic rules and the ``mca-params.conf`` that makes a selection take effect.

On a communicator spanning several nodes Open MPI 5.0.x runs coll/han
(priority 35 over coll/tuned's 30), so a coll/tuned rules file alone only
reaches one-node communicators and han's sub-communicators. What decides
the whole call is han's selector: per collective and *topological level*
(``global_communicator`` is the user's communicator) a component, taken
from han's rules file when ``coll_han_use_dynamic_file_rules`` is 1, else
from ``coll_han_<coll>_dynamic_global_communicator_module`` (6 = han).
Choosing ``tuned`` there hands the call to coll/tuned, which then follows
its own rules file.

The han rules format, read by ``coll_han_dynamic_file.c`` (v5.0.0 to
v5.0.10 alike): whitespace-separated tokens, ``#`` comments to the end of
the line, counts followed by their entries::

    NB_COLLECTIVES
      COLLECTIVE NB_LEVELS
        LEVEL NB_CONFIGS
          COMM_SIZE NB_RULES
            MSG_SIZE COMPONENT [@ALGORITHM]

with lower bounds (the last COMM_SIZE <= the level's communicator size,
then the last MSG_SIZE <= the call's bytes), the first COMM_SIZE 1 and each
configuration's first MSG_SIZE 0; components by name (a number voids the
whole file); ``@intra``/``@simple`` after ``han`` only, as a separate token.

``mca-params.conf`` (``$HOME/.openmpi/mca-params.conf``, or any file named
by ``OMPI_MCA_mca_base_param_files``): one ``name = value`` per line,
comments on their own lines (a ``#`` after a value becomes part of it).
File names in values are opened relative to each rank's working directory,
so they are written absolute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from commcost.collectives.ompi_han import HAN_ALGORITHMS, is_han
from commcost.errors import InputError
from commcost.io.rule_bands import bands
from commcost.selection.decision import Choice, Selection

HAN_COLLECTIVES = ("allgather", "allgatherv", "allreduce", "barrier", "bcast", "gather", "reduce", "scatter")


def component_of(choice: Choice | None) -> tuple[str, str]:
    """(component, ``@algorithm`` or "") han's selector runs ``choice`` with at the global level; no choice
    (no rule) keeps han, Open MPI's default."""
    if choice is None:
        return "han", ""
    if is_han(choice.algorithm):
        return "han", f"@{HAN_ALGORITHMS[choice.algorithm.name]}"
    if choice.algorithm.library != "ompi" or choice.algorithm.id is None:
        raise InputError(f"{choice.algorithm.key} is not an Open MPI algorithm", where=choice.algorithm.collective.value)
    return "tuned", ""


def han_rules_text(selections: Iterable[Selection], provenance: Iterable[str] = ()) -> str:
    """A han rules file deciding, per communicator size and message size, between han and coll/tuned at the
    global level, from Selections over Open MPI algorithms (han's included). Collectives han does not
    handle are left out; so are those whose selection never picks han's own algorithms or coll/tuned's
    over the other (nothing to decide)."""
    blocks: list[list[str]] = []
    for selection in selections:
        name = selection.collective.value
        if name not in HAN_COLLECTIVES:
            continue
        configs = []
        for band in bands(selection):
            rules: list[tuple[int, str]] = []
            for step in band.steps:
                component, algorithm = component_of(step.choice)
                text = f"{component} {algorithm}".strip()
                if not rules or rules[-1][1] != text:
                    rules.append((step.nbytes_lo, text))
            configs.append((band.procs_lo, band.procs_hi, rules))
        if configs and configs[0][0] != 1:  # the reader needs a configuration from size 1
            configs.insert(0, (1, configs[0][0] - 1, [(0, "han")]))
        lines = [f"{name}  # collective", "1  # levels", "global_communicator", f"{len(configs)}  # communicator sizes"]
        for lo, hi, rules in configs:
            upto = " and up" if hi is None else f" .. {hi}"
            lines += [f"{lo}  # communicator size {lo}{upto}", f"{len(rules)}  # rules: bytes component [@algorithm]"]
            lines += [f"{nbytes} {text}" for nbytes, text in rules]
        blocks.append(lines)
    out = ["# Open MPI coll/han dynamic rules (coll_han_dynamic_rules_filename), written by commcost"]
    out += [f"# {line}" for line in provenance]
    out.append(f"{len(blocks)}  # collectives")
    for lines in blocks:
        out += lines
    return "\n".join(out) + "\n"


def write_han_rules(selections: Iterable[Selection], path: str | Path, provenance: Iterable[str] = ()) -> str:
    """Write :func:`han_rules_text` to ``path``; returns the text."""
    text = han_rules_text(selections, provenance)
    Path(path).write_text(text)
    return text


def mca_params_text(tuned_rules: Path | None, han_rules: Path | None, provenance: Iterable[str] = (),
                    settings: Iterable[tuple[str, str]] = ()) -> str:
    """An ``mca-params.conf`` enabling the rules files (absolute paths): coll/tuned's dynamic rules and
    han's rules file; han itself stays enabled (its rules hand calls to tuned where tuned wins). ``settings``:
    more ``name = value`` lines (han's segment sizes and modules per collective,
    :func:`commcost.selection.han_config.han_mca_settings`)."""
    lines = ["# Open MPI MCA parameters, written by commcost: use as $HOME/.openmpi/mca-params.conf or name it",
             "# in OMPI_MCA_mca_base_param_files (comments only on their own lines: Open MPI keeps a '#' after a",
             "# value as part of the value)"]
    lines += [f"# {line}" for line in provenance]
    if tuned_rules is not None:
        lines += ["coll_tuned_use_dynamic_rules = 1",
                  f"coll_tuned_dynamic_rules_filename = {Path(tuned_rules).resolve()}"]
    if han_rules is not None:
        lines += ["coll_han_use_dynamic_file_rules = 1",
                  f"coll_han_dynamic_rules_filename = {Path(han_rules).resolve()}"]
    lines += [f"{name} = {value}" for name, value in settings]
    return "\n".join(lines) + "\n"


MCA_TRUE, MCA_FALSE = ("true", "yes", "enabled"), ("false", "no", "disabled")  # and integers: 0 off, others on
SWITCHES = ("_use_dynamic_rules", "_use_dynamic_file_rules")  # the on/off parameters commcost reads


def mca_bool(value: str) -> bool | None:
    """An MCA boolean as Open MPI reads it (an integer, nonzero on; true/yes/enabled, false/no/disabled, any
    case); None for anything else."""
    word = value.strip().lower()
    if word in MCA_TRUE or word in MCA_FALSE:
        return word in MCA_TRUE
    try:
        return int(word, 10) != 0
    except ValueError:
        return None


def read_mca_params(path: str | Path) -> dict[str, tuple[int, str]]:
    """The ``name = value`` settings of an mca-params.conf as ``{name: (line, value)}`` (the last one of a
    name wins, as in Open MPI); comment and blank lines skipped, any other line an InputError, and so is a
    switch commcost reads (``*_use_dynamic_rules``, ``*_use_dynamic_file_rules``) whose value is not an MCA
    boolean: Open MPI would refuse it where commcost took it for off."""
    from commcost.io.text_lines import text_of

    source = str(path)
    out: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text_of(path, "MCA parameter file").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, value = (part.strip() for part in line.partition("="))
        if not sep or not name or " " in name:
            raise InputError(f"expected 'name = value', got {line.strip()!r}", source=source, where=f"line {number}")
        if name.endswith(SWITCHES) and mca_bool(value) is None:
            raise InputError(f"{name}: expected 0, 1, true, false, yes, no, enabled or disabled, got {value!r}",
                             source=source, where=f"line {number}")
        out[name] = (number, value)
    return out


def env_lines(conf_text: str) -> list[str]:
    """The ``OMPI_MCA_*`` environment lines equivalent to an mca-params.conf text."""
    out = []
    for line in conf_text.splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            name, value = (part.strip() for part in line.split("=", 1))
            out.append(f"export OMPI_MCA_{name}={value}")
    return out
