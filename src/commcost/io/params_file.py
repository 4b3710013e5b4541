"""Model parameter files (TOML): one section per model, plus provenance.

::

    [meta]                      # where the numbers come from (free-form strings and numbers)
    machine = "fermi"
    [hockney.shm]               # sections are read by each model's PARAMS.from_dict
    alpha_s = 1e-6
    beta_s_per_byte = 1e-10
    [taulop]                    # tau-Lop's rules beyond its tables (models/taulop/params.py)
    beyond_m = "chunks"         # or "slope"
    beyond_tau = "linear"       # or "hold"
    strict = false              # true: refuse tables that break the model's constraints
    [taulop.shm]                # a tau-Lop table inline ...
    m = [0, 1024]
    o_s = [3e-7, 3.1e-7]
    L_s = [[2e-7, 3e-7], [4e-7, 6e-7]]
    [taulop.ib]                 # ... or the authors' C++ table format, relative to this file
    file = "ib.tsv"

    [reduction.sum_double]      # gamma(m) of a reduction (commcost.models.reduction)
    m = [0, 8, 4096]
    time_s = [0.0, 1e-9, 4e-7]
    [algorithm_fit.allreduce.ring]  # T = a_s + b * T_model for one Open MPI algorithm (calibrate)
    a_s = 1.1e-5
    b = 1.46
    model = "hockney"

A file need not have every model; asking for a model it lacks is an error
that names the file and the missing section.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commcost.closedform import ompi_bcast_params
from commcost.errors import InputError, InputWarning
from commcost.io.gamma_table import reduction_from_file
from commcost.io.taulop_table import read_taulop_table
from commcost.io.toml_file import read_toml
from commcost.models import MODELS
from commcost.models.reduction import reduction_laws
from commcost.models.taulop.params import TauLopParams, read_settings


@dataclass
class ParamSet:
    """The parameters of a file, by model name, and its provenance."""

    source: str
    sections: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # one line per table loaded despite broken constraints

    def reduction(self, op: str | None = None):
        """gamma(m) of operation ``op`` from ``[reduction.<op>]`` (:mod:`commcost.models.reduction`); None when
        the file has no reduction tables; without ``op``, the file's only one (or ``sum_double``)."""
        laws = self.sections.get("reduction")
        if not laws:
            if op:
                raise InputError(f"no [reduction.{op}] table; expected gamma(m) measured for that operation",
                                 source=self.source)
            return None
        if op is None:
            op = next(iter(laws)) if len(laws) == 1 else "sum_double"
        if op not in laws:
            raise InputError(f"no [reduction.{op}] table; this file has {sorted(laws)}", source=self.source)
        return laws[op]

    def algorithm_fit(self, collective: str, algorithm: str) -> "AlgorithmFit | None":
        """The per-algorithm scale ``[algorithm_fit.<collective>.<algorithm>]`` (None when the file has none)."""
        return self.sections.get(ALGORITHM_FIT, {}).get(collective, {}).get(algorithm)

    def for_model(self, name: str) -> Any:
        """The parameters of model ``name``, parsed and checked."""
        if name not in self.sections:
            raise InputError(
                f"no [{name}] section; this file has parameters for {sorted(self.sections) or 'no model'}",
                source=self.source,
            )
        return self.sections[name]


def load_params(path: str | Path, strict: bool | None = None) -> ParamSet:
    """Read a parameter file; every section is checked on load, errors name the file and field.

    tau-Lop tables that break the model's constraints, and reduction tables
    (gamma) whose times fall as m grows, load as measured, each with one line
    in ``ParamSet.warnings`` (also issued as an
    :class:`~commcost.errors.InputWarning`), unless ``strict`` (a command's
    ``--strict``; None: the file's ``[taulop] strict``) refuses them.
    """
    doc = read_toml(path)
    source = doc.source
    data = dict(doc.data)
    meta = data.pop("meta", {})
    sections: dict[str, Any] = {}
    found: list[str] = []  # warnings on tables loaded as measured
    for name, body in data.items():
        if name not in MODELS and name not in (ompi_bcast_params.SECTION, "reduction", ALGORITHM_FIT):
            raise InputError(f"unknown section [{name}]; expected meta, reduction, {ALGORITHM_FIT} or one of "
                             f"{sorted([*MODELS, ompi_bcast_params.SECTION])}", source=source, where=name)
        if not isinstance(body, dict):
            raise InputError("expected a table of parameters", source=source, where=name)
        try:
            if name == "taulop":
                sections[name] = _taulop_section(body, Path(path).parent, source, strict)
                found += sections[name].warnings
            elif name == "reduction":
                strict_gamma = strict if strict is not None else bool(data.get("taulop", {}).get("strict", False))
                sections[name] = reduction_laws(body, lambda op, table: reduction_from_file(
                    op, table, Path(path).parent, strict_gamma, found))
            elif name == ALGORITHM_FIT:
                sections[name] = algorithm_fits(body)
            elif name == ompi_bcast_params.SECTION:
                sections[name] = ompi_bcast_params.Paper004Params.from_dict(body)
            else:
                sections[name] = MODELS[name].PARAMS.from_dict(body)
        except InputError as exc:
            if exc.source:
                raise
            dotted = exc.where if exc.where and exc.where.startswith(f"{name}.") else (
                f"{name}.{exc.where}" if exc.where else name)
            line = doc.line_of(tuple(dotted.split(".")))
            where = f"line {line}: {dotted}" if line else dotted
            raise InputError(exc.message, source=source, where=where) from None
    for line in found:
        warnings.warn(line, InputWarning, stacklevel=2)
    return ParamSet(source, sections, meta, found)


ALGORITHM_FIT = "algorithm_fit"


@dataclass(frozen=True)
class AlgorithmFit:
    """T_measured ~= a_s + b T_model for one algorithm (issue 7 item 3; paper 004 section 5.2's method),
    fitted by ``commcost calibrate`` with T_model priced under ``model``."""

    a_s: float
    b: float
    model: str = ""
    one_node: "AlgorithmFit | None" = None  # for calls whose ranks share one node, where that regime has its own

    def apply(self, model_s):
        """a_s + b T_model (seconds)."""
        return self.a_s + self.b * model_s


def _a_s_and_b(fit: dict[str, Any], where: str) -> tuple[float, float]:
    """A correction's a_s and b > 0, checked; errors name the field."""
    for key in ("a_s", "b"):
        value = fit.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise InputError(f"expected a number, got {value!r}", where=f"{where}.{key}")
    if not fit["b"] > 0:
        raise InputError(f"expected b > 0, got {fit['b']!r}", where=f"{where}.b")
    return float(fit["a_s"]), float(fit["b"])


def algorithm_fits(body: dict[str, Any]) -> dict[str, dict[str, AlgorithmFit]]:
    """``[algorithm_fit.<collective>.<algorithm>] a_s = ..., b = ..., model = "..."``, and optionally
    ``[algorithm_fit.<collective>.<algorithm>.one_node] a_s = ..., b = ...`` for calls on one node (a fit
    whose one-node points cross-validated a correction of their own); errors name the field."""
    from commcost.collectives import Collective

    known = [c.value for c in Collective]
    out: dict[str, dict[str, AlgorithmFit]] = {}
    for coll, algos in body.items():
        if coll not in known:
            raise InputError(f"unknown collective; expected one of {', '.join(known)}", where=coll)
        if not isinstance(algos, dict):
            raise InputError("expected one table per algorithm", where=coll)
        for name, fit in algos.items():
            where = f"{coll}.{name}"
            if not isinstance(fit, dict):
                raise InputError("expected a table a_s, b, model", where=where)
            unknown = set(fit) - {"a_s", "b", "model", "one_node"}
            if unknown:
                raise InputError(f"unknown key {sorted(unknown)[0]!r}; expected a_s, b, model and one_node",
                                 where=where)
            a_s, b = _a_s_and_b(fit, where)
            model = fit.get("model", "")
            if not isinstance(model, str):
                raise InputError(f"expected a model name, got {model!r}", where=f"{where}.model")
            alone = fit.get("one_node")
            if alone is not None:
                if not isinstance(alone, dict) or set(alone) - {"a_s", "b"}:
                    raise InputError("expected a table of a_s and b", where=f"{where}.one_node")
                alone = AlgorithmFit(*_a_s_and_b(alone, f"{where}.one_node"), model)
            out.setdefault(coll, {})[name] = AlgorithmFit(a_s, b, model, alone)
    return out


def _taulop_section(body: dict[str, Any], base: Path, source: str, strict: bool | None) -> TauLopParams:
    beyond_m, beyond_tau, strict_now = read_settings(body, strict)
    inline: dict[str, Any] = {}
    tables = {}
    warnings: list[str] = []
    for name, table in body.items():
        if isinstance(table, dict) and "file" in table:
            if set(table) != {"file"} or not isinstance(table["file"], str):
                raise InputError("expected only file = \"PATH\" (a table in the C++ format) "
                                 "or an inline table m, o_s, L_s", where=f"{name}")
            tables[name] = read_taulop_table(base / table["file"], strict=strict_now, warnings=warnings)
        else:
            inline[name] = table
    params = TauLopParams.from_dict(inline, strict=strict_now)
    warnings += [f"{source}: {w}" for w in params.warnings]
    return TauLopParams({**params.tables, **tables}, beyond_m, beyond_tau, tuple(warnings))


def write_params(path: str | Path, sections: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
    """Write a parameter file (``[meta]`` first, then one section per model) that :func:`load_params` reads.

    ``sections`` maps a model name to the plain data of its parameters (the
    ``to_dict()`` of a parameter class); numpy numbers and arrays become
    plain TOML numbers and arrays.
    """
    import tomli_w

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items() if v is not None}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if hasattr(value, "tolist"):
            return plain(value.tolist())
        return value

    doc = {"meta": plain(meta or {}), **{name: plain(body) for name, body in sections.items()}}
    Path(path).write_text(tomli_w.dumps(doc), encoding="utf-8")
