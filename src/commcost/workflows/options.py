"""Options of a workflow as a plain dataclass, filled from a command line's namespace or by a script.

What for: a workflow (tune, calibrate, verify, ...) takes one typed options
object instead of argparse's namespace, so a script calls it with keyword
arguments and the command line builds the same object from what it parsed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def from_namespace(cls: type[T], namespace: Any, **overrides: Any) -> T:
    """An instance of the dataclass ``cls`` from the attributes of ``namespace`` that name its fields
    (others are ignored; fields the namespace lacks keep their defaults), then ``overrides``."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in vars(namespace).items() if k in names}
    values.update(overrides)
    return cls(**values)
