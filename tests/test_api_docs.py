"""docs/architecture.md's "Python API" section lists every name evalkit.api exports, one line
each, in the order of ``__all__``, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from evalkit import api

ARCH = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")


def _listed() -> list[str]:
    """The names of the section's one-line list: each bullet's first code span, up to a ``(``."""
    section = ARCH.split("## Python API (`evalkit.api`)\n", 1)[1].split("\n### ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^- `([A-Za-z_][A-Za-z0-9_]*)[(`]", section, re.MULTILINE)]


def test_every_exported_name_has_its_line_in_order():
    assert _listed() == list(api.__all__)


def test_each_line_is_one_line():
    section = ARCH.split("## Python API (`evalkit.api`)\n", 1)[1].split("\n### ", 1)[0]
    bullets = [line for line in section.splitlines() if line.startswith("- `")]
    assert len(bullets) == len(api.__all__)
    assert all(" — " in line for line in bullets)  # a name, a dash, what it is
    assert not [line for line in section.splitlines() if line.startswith("  ")]  # no continuation lines
