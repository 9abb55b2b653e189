"""What a fresh interpreter loads: the import rules a static check cannot see (a command's lazy
imports, what running it pulls in), checked in a subprocess so the test process's own imports do
not count."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable


def modules_loaded_by(code: str, *args: str) -> set[str]:
    """The modules that running ``code`` (``sys.argv[1:]`` = ``args``) adds to a fresh interpreter
    (what it held before, site hooks included, is not the code's doing)."""
    probe = (
        "import json as _json, sys as _sys\n_before = set(_sys.modules)\n"
        + code
        + "\nprint(_json.dumps(sorted(set(_sys.modules) - _before)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def among(loaded: Iterable[str], packages: Iterable[str]) -> list[str]:
    """The ``packages`` that are in ``loaded`` themselves or through a module inside them, sorted."""
    loaded = set(loaded)
    return sorted(p for p in packages if any(m == p or m.startswith(p + ".") for m in loaded))
