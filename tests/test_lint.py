"""The repository is lint-clean and formatted: `ruff check .` and `ruff format --check .` from the
root, with the configuration in pyproject.toml ([tool.ruff]), exit 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    # --no-cache: a test run writes nothing into the tree
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("args", [("check",), ("format", "--check")], ids=["check", "format"])
def test_ruff_passes(args):
    res = _ruff(*args)
    assert res.returncode == 0, f"ruff {' '.join(args)} . exited {res.returncode}:\n{res.stdout}{res.stderr}"
