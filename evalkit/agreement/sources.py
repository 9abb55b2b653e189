"""What the audit reads, from evalkit's data layer (:mod:`evalkit.db`, opened read-only).

Kept as the audit's vocabulary: the readers and row types are :mod:`evalkit.db`'s.
"""

from __future__ import annotations

from evalkit.db import (
    CallCosts,
    Card,
    JudgeColumns,
    JudgeValue,
    label_value,
    open_readonly,
    read_annotations,
    read_call_costs,
    read_cards,
    read_ratings,
)

# Runs whose status says the agent never really ran are not compared with a judge: their
# mechanical signals describe infrastructure, not behaviour.
EXCLUDED_STATUSES = ("provider_error", "invalid_scenario")

__all__ = [
    "CallCosts",
    "Card",
    "EXCLUDED_STATUSES",
    "JudgeColumns",
    "JudgeValue",
    "label_value",
    "open_readonly",
    "read_annotations",
    "read_call_costs",
    "read_cards",
    "read_ratings",
]
