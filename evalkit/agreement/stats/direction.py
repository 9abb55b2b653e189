"""Error direction on a scale ordered by credit (least first): a rater is *lenient* when it grants
more credit than the reference, *strict* when it grants less.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.agreement.stats.stat import _label_lookup, _pair_codes


def direction(judge_value: Any, mech_value: Any, order: Sequence[Any]) -> str | None:
    """``"lenient"`` when the judge grants more credit than the mechanical value, ``"strict"``
    when less, None when equal. ``order`` lists labels from least to most credit."""
    lookup = _label_lookup(order)
    for name, v in (("judge_value", judge_value), ("mech_value", mech_value)):
        if v not in lookup:
            raise ValueError(f"{name} {v!r} is not in the order {list(order)!r}")
    a, b = lookup[judge_value], lookup[mech_value]
    return "lenient" if a > b else "strict" if a < b else None


def direction_counts(judge_values: Sequence[Any], mech_values: Sequence[Any], order: Sequence[Any]) -> dict[str, int]:
    """Counts ``{n, agree, lenient, strict}`` over pairs (pairs with a missing side dropped)."""
    jc, mc = _pair_codes(judge_values, mech_values, order)
    return {
        "n": int(jc.size),
        "agree": int((jc == mc).sum()),
        "lenient": int((jc > mc).sum()),
        "strict": int((jc < mc).sum()),
    }
