"""Order: a constraint between two required actions exists when one's block precedes the other's, or
inside an ``ordered`` block by index; it applies when both were matched and is satisfied when the
earlier action's command came first. order = satisfied / applicable, None with nothing applicable.

A short procedure's constraints are listed once per scenario (``ScenarioIndex.constraints``) and
checked pair by pair. A long one's are counted without listing them, in O(n log n): among the
matched actions (in ground-truth order) every pair is a constraint except two of one unordered
block, and a constraint is violated when the later action's command does not come after the
earlier one's: the descents of the commands' positions (pairs i < j with position i >= position j),
less those inside each unordered block.
"""

from __future__ import annotations

_SMALL = 16  # below this many positions, counting pairs directly is faster than merging


def order_score(
    constraints: tuple[tuple[int, int], ...] | None,
    blocks: tuple[int, ...],
    ordered: tuple[bool, ...],
    taken: list[int | None],
) -> float | None:
    """``constraints``: the pairs, or None to count them; ``blocks``: each required action's block
    (non-decreasing); ``ordered``: per block; ``taken``: the position of the command each required
    action took, or None."""
    if constraints is None:
        return counted_order(blocks, ordered, taken)
    applicable = satisfied = 0
    for i, j in constraints:
        ti, tj = taken[i], taken[j]
        if ti is None or tj is None:
            continue
        applicable += 1
        satisfied += ti < tj
    return satisfied / applicable if applicable else None


def counted_order(blocks: tuple[int, ...], ordered: tuple[bool, ...], taken: list[int | None]) -> float | None:
    """``order_score`` without the pairs: O(n log n) time, O(n) memory."""
    matched = [(b, t) for b, t in zip(blocks, taken) if t is not None]
    n = len(matched)
    positions = [t for _, t in matched]
    applicable = n * (n - 1) // 2
    violated = _descents(positions)
    start = 0
    for end in range(1, n + 1):
        if end == n or matched[end][0] != matched[start][0]:
            if not ordered[matched[start][0]]:
                m = end - start
                applicable -= m * (m - 1) // 2
                violated -= _descents(positions[start:end])
            start = end
    return (applicable - violated) / applicable if applicable else None


def _descents(values: list[int]) -> int:
    """How many pairs i < j have ``values[i] >= values[j]``: a bottom-up merge sort."""
    n = len(values)
    if n < _SMALL:
        return sum(1 for i in range(n) for j in range(i + 1, n) if values[i] >= values[j])
    count = 0
    run = list(values)
    width = 1
    while width < n:
        merged: list[int] = []
        append = merged.append
        for lo in range(0, n, 2 * width):
            left, right = run[lo : lo + width], run[lo + width : lo + 2 * width]
            i = j = 0
            nl, nr = len(left), len(right)
            while i < nl and j < nr:
                if left[i] < right[j]:
                    append(left[i])
                    i += 1
                else:
                    append(right[j])
                    j += 1
                    count += nl - i
            merged.extend(left[i:])
            merged.extend(right[j:])
        run = merged
        width *= 2
    return count
