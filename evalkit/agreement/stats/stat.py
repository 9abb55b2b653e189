"""The result type of every statistic, and ratings encoded as positions on a scale.

A *rating* is any hashable value; ``None`` and float NaN mean "missing". ``labels`` is the scale,
and a value outside it is a caller error (ValueError naming the value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np


class Stat(TypedDict):
    value: float | None
    reason: str | None


# The one rule for too little data, shared by every agreement statistic (each states which parts
# its formula needs): with no item rated by two raters nothing can be said; agreement beyond chance
# (every kappa, alpha, AC1, Spearman) needs at least two such items, since one item cannot show
# what chance agreement is; a statistic whose chance term divides by the spread of the labels
# (every kappa, alpha, Spearman) needs two labels in use. Percent agreement needs one item; AC1
# stays defined when every rating is the same label (that is its point).
NO_ITEMS = "no item has ratings from two or more raters"
ONE_ITEM = "only one item has ratings from two or more raters: agreement beyond chance needs at least two"
NO_VARIATION = "every rating is the same label: chance agreement is total"


def too_little(items: int, labels_used: int, *, beyond_chance: bool, needs_variation: bool) -> str | None:
    """The reason ``items`` items rated by two or more raters, using ``labels_used`` distinct labels,
    are too little for a statistic (see :data:`NO_ITEMS`, :data:`ONE_ITEM`, :data:`NO_VARIATION`), or None."""
    if items == 0:
        return NO_ITEMS
    if beyond_chance and items < 2:
        return ONE_ITEM
    if needs_variation and labels_used < 2:
        return NO_VARIATION
    return None


def unique_codes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` of integer codes: the sorted distinct codes and each
    element's place among them. Codes that are few and small (a rater's judge, rubric and dimension
    folded into one number) are counted instead of sorted: the same arrays, a hundred times sooner."""
    if not codes.size or codes.min() < 0 or codes.max() > 4 * codes.size + 1024:
        return np.unique(codes, return_inverse=True)
    named = np.flatnonzero(np.bincount(codes))
    place = np.zeros(int(named[-1]) + 1, dtype=np.intp)
    place[named] = np.arange(len(named))
    return named.astype(codes.dtype), place[codes]


def last_places(key: np.ndarray) -> np.ndarray:
    """Where each distinct value of ``key`` occurs last, in increasing order of the value: what
    ``len(key) - 1 - np.unique(key[::-1], return_index=True)[1]`` gives (the latest of each wins).
    Keys no larger than a few times their count are placed in an array instead of sorted."""
    n = len(key)
    if not n or key.min() < 0 or key.max() > 4 * n + 1024:
        return n - 1 - np.unique(key[::-1], return_index=True)[1]
    last = np.full(int(key.max()) + 1, -1, dtype=np.int64)
    np.maximum.at(last, key, np.arange(n, dtype=np.int64))
    return last[last >= 0]


def _ok(value: float) -> Stat:
    value = float(value)
    if not math.isfinite(value):
        return _undefined("the statistic is not finite for these data")
    return {"value": value, "reason": None}


def _undefined(reason: str) -> Stat:
    return {"value": None, "reason": reason}


# ---------------------------------------------------------------------------------------------
# encoding ratings


def _as_1d(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a one-dimensional sequence, got shape {arr.shape}")
    return arr


def _missing_mask(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "O":  # None, or NaN (the one value unequal to itself), compared in numpy's loop
        return np.asarray((arr == None) | (arr != arr), dtype=bool) if arr.size else np.zeros(0, bool)  # noqa: E711
    return np.zeros(arr.shape, dtype=bool)


def _label_lookup(labels: Sequence[Any]) -> dict[Any, int]:
    lookup = {lab: i for i, lab in enumerate(labels)}
    if len(lookup) != len(labels):
        raise ValueError(f"labels contain duplicates: {list(labels)!r}")
    return lookup


def _codes(values: np.ndarray, labels: Sequence[Any]) -> np.ndarray:
    """Positions of (non-missing) ``values`` on the scale ``labels``."""
    if values.dtype.kind in "iu" and values.size and _is_positions(labels):
        low, high = values.min(), values.max()
        if low >= 0 and high < len(labels):  # positions already: each value is its own code
            return values.astype(np.intp, copy=False)
    lookup = _label_lookup(labels)
    if values.size == 0:
        return np.zeros(0, dtype=np.intp)
    # Numbers and strings are factorised first: the dictionary lookup runs once per distinct value.
    if values.dtype.kind in "iufUSb":
        uniq, inverse = np.unique(values, return_inverse=True)
        uniq = [u.item() for u in uniq]
    else:  # any hashable values: each looked up in C, one dictionary probe per item
        try:
            return np.fromiter(map(lookup.__getitem__, values.tolist()), np.intp, values.size)
        except KeyError as exc:
            raise ValueError(f"value {exc.args[0]!r} is not on the scale {list(labels)!r}") from None
    try:
        mapped = np.array([lookup[u] for u in uniq], dtype=np.intp)
    except KeyError as exc:
        raise ValueError(f"value {exc.args[0]!r} is not on the scale {list(labels)!r}") from None
    return mapped[inverse]


def _is_positions(labels: Sequence[Any]) -> bool:
    """True when ``labels`` are 0, 1, ..., k - 1 (the comparison engine's positions)."""
    return list(labels) == list(range(len(labels)))


def _pair_codes(x: Any, y: Any, labels: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.size} and {ya.size})")
    keep = ~(_missing_mask(xa) | _missing_mask(ya))
    return _codes(xa[keep], labels), _codes(ya[keep], labels)
