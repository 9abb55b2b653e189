"""Matching: the required actions, in ground-truth order, each take the first unassigned command with
the same match key (injective; multiplicity counts). coverage = matched / required.

Under argument rules (``match_with_rules``) the rule is the same with "the same match key" read as
"a call the action matches" (``evalkit.scoring.args``): each required action, in ground-truth order,
takes the first unassigned command it matches."""

from __future__ import annotations

from collections import deque
from typing import Any

from evalkit.scoring.args import Expect
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


def match_with_rules(required: list[Expect], commands: list[Any], keys: list[tuple]) -> list[int | None]:
    """``match_required`` for actions under argument rules (``Catalog.required``)."""
    free: dict[tuple, deque[int]] = {}
    by_tool: dict[str, list[int]] = {}
    for pos, (call, key) in enumerate(zip(commands, keys)):
        if key is not None:  # None: a call no action compares by key (Catalog.key_tools)
            free.setdefault(key, deque()).append(pos)
        by_tool.setdefault(call.name, []).append(pos)
    assigned = bytearray(len(keys))
    taken: list[int | None] = []
    for expect in required:
        pos = None
        if expect.key is not None:
            queue = free.get(expect.key)
            while queue and assigned[queue[0]]:
                queue.popleft()
            pos = queue.popleft() if queue else None
        else:  # the calls of its tool: whether their arguments match decides
            args_ok = expect.args_ok
            pos = next((p for p in by_tool.get(expect.tool, ()) if not assigned[p] and args_ok(commands[p].args)), None)
        if pos is not None:
            assigned[pos] = 1
        taken.append(pos)
    return taken


def coverage(taken: list[int | None]) -> float | None:
    """matched / required; None when nothing is required."""
    if not taken:
        return None
    return sum(1 for pos in taken if pos is not None) / len(taken)
