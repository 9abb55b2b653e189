"""Locate the data directories (configs/, prompts/) in a checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent.parent  # the evalkit package


def data_dir(name: str) -> Path:
    """Return the directory holding `configs` or `prompts`.

    A wheel carries them under evalkit/_data/ (see pyproject's force-include); an editable
    install or a plain checkout reads them from the repository root.
    """
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    return _PKG.parent / name
