"""Which parameters a fit to collective times frees, per unit (a channel; tau-Lop: a table), and where
each starts: theta's layout for :mod:`.fit_from_collectives`.

Every unit has its model's :data:`MODEL_PARAMS`. A Hockney channel whose platform entry states its eager
limit (``eager_limit_bytes``) has the :data:`PROTOCOL_PARAMS` as well (:mod:`commcost.models.hockney`:
the sender's and the receiver's shares of an eager message; above the limit a second law with its own
shares), one that also states a copy limit the :data:`BULK_PARAMS` (the eager law above it), and its
fitted values are written only as whole groups (:func:`complete_groups`); what else the channel
states (its backpressure) is kept as stated. A platform's nominal channel
values become priors on the parameters they speak of (:func:`nominal_priors`).
"""

from __future__ import annotations

from typing import Sequence

MODEL_PARAMS = {"hockney": ("alpha_s", "beta_s_per_byte"), "loggph": ("L_s", "o_s", "g_s", "G_s_per_byte"),
                "taulop": ("o_s", "L_s", "G_s_per_byte")}
# (LogGPH's gap starts small: it binds only where a sender's messages come faster than it, so the data raise it
# where they need it; started at o's 5e-7 it bound everywhere and L and o made up for it, a local minimum: the
# 2,048-rank synthetic sweep of bench/bench_fit_collectives.py ended at loss 1.21, every price within 3.8%, and
# from 5e-10 at 0.0054 and 0.25%; Peak's bcast and allreduce on P <= 64 at 8,398 against 8,442)
STARTS = {"hockney": (1e-6, 1e-10), "loggph": (1e-6, 5e-7, 5e-10, 1e-10), "taulop": (5e-7, 1e-6, 1e-10)}
# Hockney's protocol parameters for a channel that states its eager limit, and their starts
PROTOCOL_PARAMS = {"send_alpha_s": 5e-7, "send_beta_s_per_byte": 5e-11, "recv_alpha_s": 5e-7,
                   "recv_beta_s_per_byte": 5e-11, "rendezvous_alpha_s": 3e-6, "rendezvous_beta_s_per_byte": 1e-10,
                   "rendezvous_send_alpha_s": 1e-6, "rendezvous_send_beta_s_per_byte": 5e-11,
                   "rendezvous_recv_alpha_s": 1e-6, "rendezvous_recv_beta_s_per_byte": 5e-11}
# the eager law above a channel's copy limit, for a channel that states one
BULK_PARAMS = {"bulk_alpha_s": 2e-6, "bulk_beta_s_per_byte": 1e-10, "bulk_send_alpha_s": 1e-6,
               "bulk_send_beta_s_per_byte": 5e-11, "bulk_recv_alpha_s": 1e-6, "bulk_recv_beta_s_per_byte": 5e-11}


def protocol_limits(model: str, platform, units: Sequence[str]) -> dict[str, int]:
    """unit -> the eager limit its platform channel states, for the units fitted with Hockney's protocol
    parameters (none for the other models, or without a platform)."""
    if model != "hockney" or platform is None:
        return {}
    by_name = {c.name: c for c in platform.channels}
    return {u: by_name[u].eager_limit_bytes for u in units
            if u in by_name and getattr(by_name[u], "eager_limit_bytes", None) is not None}


STATED = ("copy_limit_bytes", "backpressure_from_bytes")  # what a channel with an eager limit may add


def stated_limits(model: str, platform, units: Sequence[str]) -> dict[str, dict[str, float]]:
    """unit -> what its platform channel states besides its eager limit (:data:`STATED`: its copy limit,
    from which size its eager senders feel backpressure), for the Hockney channels with an eager limit
    (:func:`protocol_limits`) that state any; a fit keeps them as they are."""
    if model != "hockney" or platform is None:
        return {}
    by_name = {c.name: c for c in platform.channels}
    said = {u: {k: float(getattr(by_name[u], k)) for k in STATED if getattr(by_name[u], k, None) is not None}
            for u in protocol_limits(model, platform, units)}
    return {u: values for u, values in said.items() if values}


def layout_of(model: str, units: Sequence[str], limits: dict[str, int] | None = None,
              stated: dict[str, dict[str, float]] | None = None) -> list[tuple[str, str]]:
    """theta's entries as (unit, parameter), unit by unit: the :data:`MODEL_PARAMS` of each, the
    :data:`PROTOCOL_PARAMS` of a unit in ``limits`` and the :data:`BULK_PARAMS` of one whose ``stated``
    values (:func:`stated_limits`) have a copy limit."""
    limits, stated = limits or {}, stated or {}
    return [(u, name) for u in units for name in (*MODEL_PARAMS[model], *(PROTOCOL_PARAMS if u in limits else ()),
                                                  *(BULK_PARAMS if "copy_limit_bytes" in stated.get(u, {}) else ()))]


def parameter_layout(model: str, units: Sequence[str], platform=None) -> list[tuple[str, str]]:
    """:func:`layout_of` with the limits ``platform`` states (:func:`protocol_limits`, :func:`stated_limits`)."""
    return layout_of(model, units, protocol_limits(model, platform, units), stated_limits(model, platform, units))


def start_of(model: str, name: str) -> float:
    """Where parameter ``name`` of ``model`` starts before the rows scale it."""
    if name in MODEL_PARAMS[model]:
        return STARTS[model][MODEL_PARAMS[model].index(name)]
    return PROTOCOL_PARAMS[name] if name in PROTOCOL_PARAMS else BULK_PARAMS[name]


def complete_groups(values: dict[str, float], fixed: dict[str, float]) -> dict[str, float]:
    """A unit's fitted values as its parameter file may hold them, each group whole: a sender's or
    receiver's share with both its numbers (a rendezvous share no row moved takes the eager one; an eager
    share no row moved is left out: the wire's time), the rendezvous law and the eager limit (from
    ``fixed``) it starts above only with its alpha and beta (else left out: the eager law then prices every
    size)."""
    out = dict(values)
    for share in ("send", "recv"):  # a share no row moves: the next law out (rendezvous -> eager -> wire)
        for law in ("alpha_s", "beta_s_per_byte"):
            if f"rendezvous_{share}_{law}" not in out and f"{share}_{law}" in out:
                out[f"rendezvous_{share}_{law}"] = out[f"{share}_{law}"]
        for prefix in ("", "rendezvous_", "bulk_"):  # each law's share: both numbers, or none
            pair = (f"{prefix}{share}_alpha_s", f"{prefix}{share}_beta_s_per_byte")
            if not all(k in out for k in pair):
                for k in pair:
                    out.pop(k, None)
    fixed = dict(fixed)
    copy = fixed.pop("copy_limit_bytes", None)
    held = fixed.pop("backpressure_from_bytes", None)
    if all(k in out for k in ("rendezvous_alpha_s", "rendezvous_beta_s_per_byte")):
        for k in ("rendezvous_send_alpha_s", "rendezvous_send_beta_s_per_byte"):  # the law's sender: the wire's
            out.setdefault(k, out["rendezvous_alpha_s" if k.endswith("alpha_s") else "rendezvous_beta_s_per_byte"])
        out.update(fixed)
    else:
        for k in [k for k in out if k.startswith("rendezvous_")]:
            out.pop(k)
    if copy is not None and all(k in out for k in ("bulk_alpha_s", "bulk_beta_s_per_byte")):
        out["copy_limit_bytes"] = copy
    else:
        for k in [k for k in out if k.startswith("bulk_")]:
            out.pop(k)
    if held is not None:  # the eager law's, whether or not the rendezvous law is written
        out["backpressure_from_bytes"] = held
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
        kind = PRIOR_OF[model].get(name.removeprefix("rendezvous_").removeprefix("bulk_"), "")  # every law's
        value = said.get(kind)
        if value is not None:
            out[j] = value
    return out
