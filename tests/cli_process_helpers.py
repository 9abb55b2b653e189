"""`evalkit ARGS` in a fresh interpreter, for what the command leaves there (sys.modules, say) that
the test process, with its own imports, cannot show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_CLI = (
    "import sys, evalkit.cli\n"
    "try:\n"
    "    evalkit.cli.cli.main(sys.argv[1:], standalone_mode=False)\n"
    "except SystemExit:\n"
    "    pass\n"
)


def evalkit_then_print(report: str, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs `evalkit ARGS` (its exit caught), then prints ``report`` (Python expressions, evaluated
    in that interpreter) as the last line of its stderr."""
    probe = RUN_CLI + f"print({report}, file=sys.stderr)\n"
    return subprocess.run(
        [sys.executable, "-c", probe, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )
