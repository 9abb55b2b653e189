"""Two raters: percent agreement, Cohen's kappa (plain and quadratic-weighted), Gwet's AC1, Spearman.

Two-rater functions take two equally long sequences; a pair with a missing side is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from evalkit.agreement.stats.confusion import _confusion, _one
from evalkit.agreement.stats.stat import (
    Stat,
    _as_1d,
    _codes,
    _missing_mask,
    _ok,
    _pair_codes,
    _undefined,
    too_little,
)


def percent_agreement(x: Sequence[Any], y: Sequence[Any]) -> Stat:
    """Share of pairs with ``x == y`` (pairs with a missing side dropped). Undefined with no pairs."""
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.size} and {ya.size})")
    keep = ~(_missing_mask(xa) | _missing_mask(ya))
    xa, ya = xa[keep], ya[keep]
    if reason := too_little(xa.size, 0, beyond_chance=False, needs_variation=False):
        return _undefined(reason)
    same = (
        np.asarray(xa == ya, dtype=bool)
        if xa.dtype == ya.dtype
        else np.asarray(xa.astype(object) == ya.astype(object), dtype=bool)
    )
    return _ok(same.mean())


def _pair_reason(cm: np.ndarray, k: int, *, need_variation: bool) -> str | None:
    """The shared too-little-data rule (:func:`~evalkit.agreement.stats.stat.too_little`), then
    (for kappa) a rater who gave one label to every item. A scale of one label is every rating the
    same label, whatever the statistic."""
    used = int(((cm.sum(axis=0) + cm.sum(axis=1)) > 0).sum())
    if reason := too_little(int(cm.sum()), used, beyond_chance=True, needs_variation=need_variation or k < 2):
        return reason
    if need_variation:
        if (cm.sum(axis=1) > 0).sum() < 2:
            return "the first rater gave the same label to every item (chance agreement is total)"
        if (cm.sum(axis=0) > 0).sum() < 2:
            return "the second rater gave the same label to every item (chance agreement is total)"
    return None


def cohen_kappa(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any], weighted: bool = False) -> Stat:
    """Cohen's kappa; ``weighted=True`` uses quadratic weights over the full ordered ``labels``.

    Equals ``sklearn.metrics.cohen_kappa_score(x, y, labels=labels, weights=None|"quadratic")``
    except when a rater is constant: scikit-learn then returns 0 (or NaN); here the value is None
    with a reason, because kappa carries no information about such a rater.
    """
    return _confusion_stat(x, y, labels, "weighted_kappa" if weighted else "cohen_kappa")


def gwet_ac1(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any]) -> Stat:
    """Gwet's AC1 for two raters: ``(pa - pe) / (1 - pe)`` with
    ``pe = sum_k pi_k (1 - pi_k) / (K - 1)``, ``pi_k`` the mean of the two raters' marginal shares,
    ``K = len(labels)`` (the full scale, as in Gwet's handbook when categories are given).
    Defined for constant raters on a scale of two or more labels (that is its point); undefined
    with fewer than two pairs or K < 2 (then every rating is the same label)."""
    return _confusion_stat(x, y, labels, "gwet_ac1")


def _confusion_stat(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any], stat: str) -> Stat:
    """A statistic of the (x, y) confusion matrix, or the reason it is undefined."""
    xc, yc = _pair_codes(x, y, labels)
    return of_confusion(_confusion(xc, yc, len(labels)), stat)


# whether a statistic of the confusion matrix needs each rater to give two labels (kappa does: a
# constant rater makes chance agreement total; AC1 stays defined, that is its point)
NEEDS_VARIATION = {"cohen_kappa": True, "weighted_kappa": True, "gwet_ac1": False}


def of_confusion(cm: np.ndarray, stat: str) -> Stat:
    """``stat`` (cohen_kappa, weighted_kappa or gwet_ac1, as :func:`cohen_kappa` and :func:`gwet_ac1`
    give it) of a (k x k) confusion matrix on the whole scale, or the reason it is undefined."""
    reason = _pair_reason(cm, cm.shape[0], need_variation=NEEDS_VARIATION[stat])
    if reason:
        return _undefined(reason)
    return _ok(_one(cm, stat))


def spearman(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any] | None = None) -> Stat:
    """Spearman's rho (Pearson correlation of average ranks), as ``scipy.stats.spearmanr``.

    Without ``labels`` the values must be numbers; with ``labels`` (ordered least to most) values
    are ranked by their position on that scale. Undefined for fewer than two pairs or a constant
    rater (scipy returns NaN there)."""
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.size} and {ya.size})")
    keep = ~(_missing_mask(xa) | _missing_mask(ya))
    if labels is not None:
        xv = _codes(xa[keep], labels).astype(float)
        yv = _codes(ya[keep], labels).astype(float)
    else:
        try:
            xv, yv = xa[keep].astype(float), ya[keep].astype(float)
        except (TypeError, ValueError):
            raise ValueError("spearman: non-numeric values need an ordered labels= scale") from None
    used = np.unique(np.concatenate([xv, yv])).size
    if reason := too_little(xv.size, used, beyond_chance=True, needs_variation=True):
        return _undefined(reason)
    if np.all(xv == xv[0]):
        return _undefined("the first rater gave the same value to every item")
    if np.all(yv == yv[0]):
        return _undefined("the second rater gave the same value to every item")
    rx, ry = average_ranks(xv), average_ranks(yv)
    rx -= rx.mean()
    ry -= ry.mean()
    return _ok(np.clip((rx * ry).sum() / math.sqrt((rx**2).sum() * (ry**2).sum()), -1.0, 1.0))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their mean rank (``scipy.stats.rankdata``'s "average");
    exact: every rank is a whole or half number."""
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # the rank of each distinct value's last copy
    return ((last - counts + 1 + last) / 2.0)[inverse.reshape(-1)]
