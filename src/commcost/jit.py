"""Compiled loops for the few algorithms numpy cannot vectorize (event-driven pricing of dependency schedules).

``njit`` is numba's, with the compiled code cached on disk, so a loop over a
million transmissions runs at compiled speed. The decorated functions are
plain Python in numba's subset: without numba (or with
``NUMBA_DISABLE_JIT=1``) the same code runs as Python, slower but equal.
"""

from __future__ import annotations

from typing import Any, Callable

try:  # pragma: no cover - which branch runs depends on the installation
    from numba import njit as _njit

    def njit(function: Callable[..., Any] | None = None, *, inline: bool = False) -> Any:
        """Compile ``function`` with numba (no Python objects, cached between runs). ``inline=True``
        (as ``@njit(inline=True)``): a small helper that numba inlines into its callers, so a hot loop
        pays no call and no reference counting of the arrays it passes."""
        options = {"cache": True, "nogil": True}
        if inline:
            options["inline"] = "always"
        if function is None:
            return _njit(**options)
        return _njit(**options)(function)

    COMPILED = True
except ImportError:  # pragma: no cover
    def njit(function: Callable[..., Any] | None = None, *, inline: bool = False) -> Any:
        """Without numba: the function as it is."""
        if function is None:
            return lambda f: f
        return function

    COMPILED = False
