"""Verdict files (classification results) scored for agreement, calibration and cost.

The names of the former ``evalkit/verdicts.py`` are looked up lazily in :mod:`evalkit.verdicts.analysis`.
"""

from __future__ import annotations

from evalkit._moved import names_from

__getattr__ = names_from(__name__, "evalkit.verdicts.analysis")
