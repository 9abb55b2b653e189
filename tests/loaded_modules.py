"""What a piece of code imports, measured in a fresh interpreter (tests of import cost)."""

from __future__ import annotations

import json
import subprocess
import sys

_REPORT = """
import json, sys
print(json.dumps(sorted(m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in {prefixes!r}))))
"""


def loaded_after(code: str, *prefixes: str) -> list[str]:
    """The modules named ``prefixes`` (or inside them) that are loaded once ``code`` has run."""
    script = code + "\n" + _REPORT.format(prefixes=prefixes)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])
