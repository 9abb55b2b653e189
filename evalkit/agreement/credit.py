"""How much credit a label grants, on [0, 1]-like numbers, for pass/fail thresholds and for the
lenient/strict direction of rater disagreements.

The mapping is inspect_ai's ``value_to_float`` (its documented scorer-value semantics), so an
imported inspect score means here what it means in inspect: ``C`` (correct) 1, ``P`` (partial) 0.5,
``I`` (incorrect) and ``N`` (no answer) 0; booleans 1/0; numbers as they are; the strings
``yes``/``true`` 1 and ``no``/``false`` 0 (any case); a string holding a finite number, that number.
Where inspect_ai would warn and fall back to 0 (any other string, a list, an object, NaN), this
returns None: no credit is known, and nothing is guessed. Pure, no imports beyond the standard library.
"""

from __future__ import annotations

import math
from typing import Any

GRADES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def credit(value: Any) -> float | None:
    """The credit of one label (see module docstring), or None when it has none."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    if value in GRADES:
        return GRADES[value]
    word = WORDS.get(value.lower())
    if word is not None:
        return word
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def passed(value: Any, threshold: float) -> bool | None:
    """True when the value's credit reaches ``threshold``; None when the value has no credit."""
    c = credit(value)
    return None if c is None else c >= threshold
