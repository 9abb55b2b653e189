"""Canonical values: numbers compare by value (1 == 1.0), key order never matters.

Booleans stay booleans: JSON `true` and `1` are different values in a trajectory, so `True` is not
folded into `1` (Python would say they are equal; a recorder would not).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic_core import to_json


def compact_json(value: Any) -> str:
    """Compact JSON in the value's own key order (pydantic-core: fast; used for storage and bundles)."""
    return to_json(value).decode("utf-8")


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: for hashes of things evalkit does not build itself (cache keys)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def freeze(value: Any) -> Any:
    """A hashable canonical form: equal for 1 and 1.0, different for True and 1, key order ignored."""
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dict):
        return ("dict", frozenset((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(freeze(v) for v in value))
    return ("other", repr(value))


SET_CONTROL = "set_control"


def control_key(control: Any, value: Any) -> tuple:
    """The identity of a cockpit command: only its (control, value) count."""
    return (SET_CONTROL, control, freeze(value))


def match_key(tool: str, args: Any) -> tuple:
    """The identity of a call for matching: tool name plus canonical arguments."""
    if tool == SET_CONTROL and isinstance(args, dict):
        return control_key(args.get("control"), args.get("value"))
    return (tool, freeze(args))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
