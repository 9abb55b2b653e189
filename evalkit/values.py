"""Canonical values: numbers compare by value (1 == 1.0), key order never matters.

Booleans stay booleans: JSON `true` and `1` are different values in a trajectory, so `True` is not
folded into `1` (Python would say they are equal; a recorder would not).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_value(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: the byte form every hash in evalkit is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def match_key(tool: str, args: Any) -> str:
    """The identity of a call for matching: tool name plus canonical arguments."""
    return canonical_json([tool, canonical_value(args)])


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
