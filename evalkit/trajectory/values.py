"""Canonical values: numbers compare by value (1 == 1.0), key order never matters.

Booleans stay booleans: JSON `true` and `1` are different values in a trajectory, so `True` is not
folded into `1` (Python would say they are equal; a recorder would not).

Non-finite numbers (``NaN``, ``Infinity``, ``1e400``) are read (Python recorders write them) but equal
nothing, themselves included: a command whose value is NaN matches no ground-truth action. On output
they become ``null`` (:func:`finite`), so every JSON evalkit writes is standard JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from pydantic_core import to_json


def compact_json(value: Any) -> str:
    """Compact JSON in the value's own key order (pydantic-core: fast; used for storage and bundles).
    Non-finite numbers are written as null."""
    return to_json(value, inf_nan_mode="null").decode("utf-8")


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: for hashes of things evalkit does not build itself (cache keys).
    Non-finite numbers are written as null."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(finite(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _NonFinite:
    """A non-finite number in a match key: equal only to itself, so two reads never match."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<non-finite>"


def freeze(value: Any) -> Any:
    """A hashable canonical form: equal for 1 and 1.0, different for True and 1, key order ignored;
    a non-finite number is a fresh object each time, equal to nothing."""
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        if not math.isfinite(value):
            return _NonFinite()
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dict):
        return ("dict", frozenset((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(freeze(v) for v in value))
    return ("other", repr(value))


def count_non_finite(value: Any) -> int:
    """How many NaN / ±Infinity floats ``value`` holds (keys are strings, so only values count)."""
    if type(value) is float:
        return 0 if math.isfinite(value) else 1
    if type(value) is dict:
        return sum(count_non_finite(v) for v in value.values())
    if type(value) is list:
        return sum(count_non_finite(v) for v in value)
    return 0


def finite(value: Any) -> Any:
    """``value`` with every NaN / ±Infinity float replaced by None (JSON ``null``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


SET_CONTROL = "set_control"


def control_key(control: Any, value: Any) -> tuple:
    """The identity of a cockpit command: only its (control, value) count.

    A control that is not a string (a hallucinated list, object, number or boolean) is compared by
    its canonical JSON, tagged so it never equals a string control: the call stays a command that
    matches no ground-truth action (ground-truth controls are strings), so it counts as extraneous."""
    if control is not None and type(control) is not str:
        control = ("json", canonical_json(control))
    return (SET_CONTROL, control, freeze(value))


def match_key(tool: str, args: Any) -> tuple:
    """The identity of a call for matching: tool name plus canonical arguments."""
    if tool == SET_CONTROL and isinstance(args, dict):
        return control_key(args.get("control"), args.get("value"))
    return (tool, freeze(args))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_DIGITS = 4300  # Python's own int-to-string limit


def sense(value: Any) -> tuple[str, Any]:
    """What a value says whatever its spelling: a boolean (``true``, ``"True"``), a number (``3``,
    ``"3"``, ``"3.0"``) or text up to case and spacing (``"Approved"``, ``" approved"``); any other
    value as :func:`freeze` keys it. Two values that say the same but differ are one written
    another way (a label in a ratings file, an approval's answer)."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if not isinstance(value, str):
        return ("other", freeze(value))
    folded = " ".join(value.casefold().split())
    if folded in ("true", "false"):
        return ("boolean", folded == "true")
    if len(folded) <= _DIGITS and _NUMBER_TEXT.fullmatch(folded):
        return ("number", int(folded) if _INTEGER_TEXT.fullmatch(folded) else float(folded))
    return ("text", folded)
