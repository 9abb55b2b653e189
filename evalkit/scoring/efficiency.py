"""Efficiency: required actions per effective command, and the computer-use rubric's 0–3 grade."""

from __future__ import annotations

EFFICIENCY_BANDS = ((1.5, 3), (2.5, 2), (4.0, 1))


def efficiency_ratio(required: int, commands: int) -> float | None:
    """required actions / effective commands; None without commands."""
    return required / commands if commands else None


def efficiency_grade(passed: bool, budget_hit: bool, commands: int, reference_steps: int) -> int:
    """The efficiency grade (computer-use rubric): 3 when ≤1.5× the reference steps, 2 ≤2.5×, 1 ≤4×,
    else 0; 0 for a run that did not pass."""
    if not passed or budget_hit:
        return 0
    if reference_steps <= 0:
        return 3 if commands == 0 else 0
    ratio = commands / reference_steps
    for limit, grade in EFFICIENCY_BANDS:
        if ratio <= limit:
            return grade
    return 0
