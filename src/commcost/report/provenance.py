"""Where a report comes from: commcost's version, the command line, the host, the date and each input file.

An admin deciding whether to trust a page needs to rerun it: the exact
command, and a digest of every file it read (sha256, first 12 hex
digits), so a changed parameter file is seen at a glance.
"""

from __future__ import annotations

import hashlib
import platform
import shlex
import socket
import time
from pathlib import Path
from typing import Mapping, Sequence


def file_digest(path: str | Path) -> str:
    """The first 12 hex digits of the file's sha256 ('missing' if it cannot be read)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return "missing"
    return digest.hexdigest()[:12]


def run_provenance(argv: Sequence[str] | None, inputs: Mapping[str, str | Path | None] = ()) -> dict[str, str]:
    """The provenance lines of a report: version, command, host, date, Python, and each named input file
    with its digest (None inputs are left out)."""
    from commcost import __version__

    out = {"commcost": __version__,
           "command": shlex.join(["commcost", *argv]) if argv is not None else "?",
           "host": socket.gethostname(),
           "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "python": platform.python_version()}
    for name, path in dict(inputs).items():
        if path is not None:
            out[name] = f"{Path(path).resolve()} (sha256 {file_digest(path)})"
    return out
