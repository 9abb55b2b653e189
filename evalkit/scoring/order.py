"""Order: a constraint between two required actions exists when one's block precedes the other's, or
inside an ``ordered`` block by index (``ScenarioIndex.constraints``); it applies when both were
matched and is satisfied when the earlier action's command came first.
order = satisfied / applicable, None with nothing applicable."""

from __future__ import annotations


def order_score(constraints: tuple[tuple[int, int], ...], taken: list[int | None]) -> float | None:
    applicable = satisfied = 0
    for i, j in constraints:
        ti, tj = taken[i], taken[j]
        if ti is None or tj is None:
            continue
        applicable += 1
        satisfied += ti < tj
    return satisfied / applicable if applicable else None
