"""Verdict files (classification results) scored for agreement, calibration and cost.

The names of the former ``evalkit/verdicts.py`` are looked up lazily in :mod:`evalkit.verdicts.analysis`.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    import importlib

    analysis = importlib.import_module("evalkit.verdicts.analysis")

    try:
        return getattr(analysis, name)
    except AttributeError:
        raise AttributeError(f"module 'evalkit.verdicts' has no attribute {name!r}") from None
