"""Which parameters a fit to collective times frees, per unit (a channel; tau-Lop: a table), and where
each starts: theta's layout for :mod:`.fit_from_collectives`.

Every unit has its model's :data:`MODEL_PARAMS`. A Hockney channel whose platform entry states its eager
limit (``eager_limit_bytes``) has the :data:`PROTOCOL_PARAMS` as well (:mod:`commcost.models.hockney`:
the sender's share of an eager message; above the limit a second law with its own sender's share), and
its fitted values are written only as whole groups (:func:`complete_groups`). A platform's nominal
channel values become priors on the parameters they speak of (:func:`nominal_priors`).
"""

from __future__ import annotations

from typing import Sequence

MODEL_PARAMS = {"hockney": ("alpha_s", "beta_s_per_byte"), "loggph": ("L_s", "o_s", "g_s", "G_s_per_byte"),
                "taulop": ("o_s", "L_s", "G_s_per_byte")}
STARTS = {"hockney": (1e-6, 1e-10), "loggph": (1e-6, 5e-7, 5e-7, 1e-10), "taulop": (5e-7, 1e-6, 1e-10)}
# Hockney's protocol parameters for a channel that states its eager limit, and their starts
PROTOCOL_PARAMS = {"send_alpha_s": 5e-7, "send_beta_s_per_byte": 5e-11, "rendezvous_alpha_s": 3e-6,
                   "rendezvous_beta_s_per_byte": 1e-10, "rendezvous_send_alpha_s": 1e-6,
                   "rendezvous_send_beta_s_per_byte": 5e-11}


def protocol_limits(model: str, platform, units: Sequence[str]) -> dict[str, int]:
    """unit -> the eager limit its platform channel states, for the units fitted with Hockney's protocol
    parameters (none for the other models, or without a platform)."""
    if model != "hockney" or platform is None:
        return {}
    by_name = {c.name: c for c in platform.channels}
    return {u: by_name[u].eager_limit_bytes for u in units
            if u in by_name and getattr(by_name[u], "eager_limit_bytes", None) is not None}


def layout_of(model: str, units: Sequence[str], limits: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """theta's entries as (unit, parameter), unit by unit: the :data:`MODEL_PARAMS` of each, and the
    :data:`PROTOCOL_PARAMS` of a unit in ``limits``."""
    limits = limits or {}
    return [(u, name) for u in units for name in (*MODEL_PARAMS[model], *(PROTOCOL_PARAMS if u in limits else ()))]


def parameter_layout(model: str, units: Sequence[str], platform=None) -> list[tuple[str, str]]:
    """:func:`layout_of` with the eager limits ``platform`` states (:func:`protocol_limits`)."""
    return layout_of(model, units, protocol_limits(model, platform, units))


def start_of(model: str, name: str) -> float:
    """Where parameter ``name`` of ``model`` starts before the rows scale it."""
    if name in MODEL_PARAMS[model]:
        return STARTS[model][MODEL_PARAMS[model].index(name)]
    return PROTOCOL_PARAMS[name]


def complete_groups(values: dict[str, float], fixed: dict[str, float]) -> dict[str, float]:
    """A unit's fitted values as its parameter file may hold them: Hockney's sender share only with both its
    numbers, its rendezvous law (and the eager limit, from ``fixed``, it starts above) only whole; a group
    the rows left unidentified is left out (the channel's eager law then prices every size)."""
    out = dict(values)
    sender = ("send_alpha_s", "send_beta_s_per_byte")
    if any(k in out for k in sender) and not all(k in out for k in sender):
        for k in sender:
            out.pop(k, None)
    rendezvous = [k for k in PROTOCOL_PARAMS if k.startswith("rendezvous_")]
    if all(k in out for k in rendezvous):
        out.update(fixed)
    else:
        for k in rendezvous:
            out.pop(k, None)
    return out


PRIOR_OF = {"hockney": {"alpha_s": "latency", "beta_s_per_byte": "time per byte"},
            "loggph": {"L_s": "latency", "G_s_per_byte": "time per byte"},
            "taulop": {"L_s": "latency", "G_s_per_byte": "time per byte"}}


def nominal_priors(model: str, platform, units: Sequence[str],
                   layout: Sequence[tuple[str, str]] | None = None) -> dict[int, float]:
    """theta's index -> the value a channel's nominal latency and bandwidth say of it (the platform's
    ``nominal_latency_s``, ``nominal_bandwidth``; :data:`PRIOR_OF`), for the ``units`` fitted (channels;
    tau-Lop: tables, a channel's own table named like it) in ``layout`` (:func:`parameter_layout`)."""
    layout = list(layout) if layout is not None else parameter_layout(model, units)
    by_name = {c.name: c for c in platform.channels}
    out: dict[int, float] = {}
    for j, (unit, name) in enumerate(layout):
        channel = by_name.get(unit)
        if channel is None:
            continue
        said = {"latency": channel.nominal_latency_s,
                "time per byte": None if channel.nominal_bandwidth is None else 1.0 / channel.nominal_bandwidth}
        kind = PRIOR_OF[model].get(name, "")
        if kind == "time per byte" and (unit, "rendezvous_beta_s_per_byte") in layout:
            kind = ""  # a nominal bandwidth is said of large messages: of the rendezvous law, where it has one
        if name == "rendezvous_beta_s_per_byte":
            kind = "time per byte"
        value = said.get(kind)
        if value is not None:
            out[j] = value
    return out
