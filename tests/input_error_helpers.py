"""A bad input file, written and read: the one-line error (an InputError) its reader raises."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evalkit.errors import InputError


def assert_input_error(path: Path, text: str, read: Callable[[Path], object], starts: str) -> None:
    """``read(path)``, once ``path`` holds ``text``, raises an InputError of one line that starts
    with ``starts`` (the file, the line, the reason)."""
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read(path)
    assert str(err.value).startswith(starts), str(err.value)
    assert "\n" not in str(err.value)
