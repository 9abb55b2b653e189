"""Adjusted p-values for a family of tests: Holm (family-wise error) and Benjamini–Hochberg (false
discovery rate), as ``statsmodels.stats.multitest.multipletests(method="holm" / "fdr_bh")``.

A test whose p-value is undefined (None) is not part of the family: it keeps None and does not
raise the correction of the others.
"""

from __future__ import annotations

from collections.abc import Sequence

CORRECTIONS = ("holm", "bh", "none")


def holm(p_values: Sequence[float]) -> list[float]:
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for rank_from_top, i in enumerate(order):
        rank = m - rank_from_top  # 1-based rank in ascending order
        running = min(running, m / rank * p_values[i])
        adjusted[i] = min(1.0, running)
    return adjusted


def adjust(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """Adjusted p-values in the input order; ``method`` is one of :data:`CORRECTIONS`."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r} (expected one of {', '.join(CORRECTIONS)})")
    defined = [i for i, p in enumerate(p_values) if p is not None]
    values = [p_values[i] for i in defined]
    if method == "holm":
        values = holm(values)
    elif method == "bh":
        values = benjamini_hochberg(values)
    out: list[float | None] = [None] * len(p_values)
    for i, v in zip(defined, values):
        out[i] = v
    return out
