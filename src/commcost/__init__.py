"""commcost: communication cost of MPI programs, predicted without running them at scale.

``import commcost`` gives the public API (:mod:`commcost.api`, tutorial in
docs/api.md): ``commcost.load_platform``, ``commcost.schedule``,
``commcost.price``, ``commcost.select``, ... Its names load on first use, so
``import commcost`` (and the command line) stays fast.
"""

__version__ = "0.3.0"


def __getattr__(name: str):
    """The public API's names, imported from :mod:`commcost.api` on first use."""
    import importlib

    api = importlib.import_module("commcost.api")
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'commcost' has no attribute {name!r}")


def __dir__() -> list[str]:
    import importlib

    return sorted(set(globals()) | set(importlib.import_module("commcost.api").__all__))
