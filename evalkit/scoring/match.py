"""Matching: the required actions, in ground-truth order, each take the first unassigned command with
the same match key (injective; multiplicity counts). coverage = matched / required."""
from __future__ import annotations

from collections import deque

from evalkit.trajectory.scenario import Action


def match_required(required: list[tuple[int, int, Action]], keys: list[tuple]) -> list[int | None]:
    """Position (among ``keys``, the effective commands' match keys) of the command each required
    action took, or None."""
    free: dict[tuple, deque[int]] = {}
    for pos, key in enumerate(keys):
        free.setdefault(key, deque()).append(pos)
    taken: list[int | None] = []
    for _, _, action in required:
        queue = free.get(action.key)
        taken.append(queue.popleft() if queue else None)
    return taken


def coverage(taken: list[int | None]) -> float | None:
    """matched / required; None when nothing is required."""
    if not taken:
        return None
    return sum(1 for pos in taken if pos is not None) / len(taken)
