"""Confusion matrices, and the chance-corrected statistics computed from them.

The statistics here work on a stack of confusion matrices at once, shape ``(B, k, k)`` (NaN marks
"undefined"): the point estimate is the stack of one and :func:`~evalkit.agreement.stats.bootstrap.bootstrap_confusion`
evaluates all its resampled matrices in one call, so an interval is always about exactly the
statistic reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evalkit.agreement.stats.stat import _pair_codes


def _confusion(xc: np.ndarray, yc: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(xc * k + yc, minlength=k * k).reshape(k, k)


def confusion_matrix(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any]) -> list[list[int]]:
    """Counts of (x, y) label pairs; rows are ``x`` (first argument), columns ``y``, both in
    ``labels`` order. Pairs with a missing side are dropped."""
    xc, yc = _pair_codes(x, y, labels)
    return _confusion(xc, yc, len(labels)).tolist()


# ---------------------------------------------------------------------------------------------
# statistics on stacks of confusion matrices, shape (B, k, k); NaN marks "undefined"


def _batch_percent(cm: np.ndarray) -> np.ndarray:
    n = cm.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.trace(cm, axis1=1, axis2=2) / n


def _disagreement_weights(k: int, weighted: bool) -> np.ndarray:
    if not weighted:
        return 1.0 - np.eye(k)
    idx = np.arange(k)
    # Quadratic weights over the full scale; the (k-1)^2 normaliser cancels but keeps them in [0, 1].
    return (idx[:, None] - idx[None, :]) ** 2 / max(k - 1, 1) ** 2


def _batch_kappa(cm: np.ndarray, weighted: bool) -> np.ndarray:
    cm = cm.astype(float)
    k = cm.shape[-1]
    n = cm.sum(axis=(1, 2))
    rows, cols = cm.sum(axis=2), cm.sum(axis=1)
    w = _disagreement_weights(k, weighted)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.einsum("bi,bj,ij->b", rows, cols, w) / n
        observed = np.einsum("bij,ij->b", cm, w)
        kappa = 1.0 - observed / expected
    constant = ((rows > 0).sum(axis=1) < 2) | ((cols > 0).sum(axis=1) < 2)
    kappa[constant | (n == 0)] = np.nan
    return kappa


def _batch_ac1(cm: np.ndarray) -> np.ndarray:
    cm = cm.astype(float)
    k = cm.shape[-1]
    n = cm.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = np.trace(cm, axis1=1, axis2=2) / n
        pi = (cm.sum(axis=2) + cm.sum(axis=1)) / (2.0 * n[:, None])
        pe = (pi * (1.0 - pi)).sum(axis=1) / (k - 1) if k > 1 else np.full(n.shape, np.nan)
        return (pa - pe) / (1.0 - pe)


def _midranks(marginals: np.ndarray) -> np.ndarray:
    """Average rank of each category given its counts (ties share the mean rank)."""
    before = np.cumsum(marginals, axis=1) - marginals
    return before + (marginals + 1.0) / 2.0


def _batch_spearman(cm: np.ndarray) -> np.ndarray:
    cm = cm.astype(float)
    n = cm.sum(axis=(1, 2))
    rows, cols = cm.sum(axis=2), cm.sum(axis=1)
    a, b = _midranks(rows), _midranks(cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = (rows * a).sum(axis=1) / n
        mb = (cols * b).sum(axis=1) / n
        da, db = a - ma[:, None], b - mb[:, None]
        cov = np.einsum("bij,bi,bj->b", cm, da, db)
        va = (rows * da**2).sum(axis=1)
        vb = (cols * db**2).sum(axis=1)
        rho = cov / np.sqrt(va * vb)
    constant = ((rows > 0).sum(axis=1) < 2) | ((cols > 0).sum(axis=1) < 2)
    rho[constant | (n < 2)] = np.nan
    return np.clip(rho, -1.0, 1.0)


CONFUSION_STATS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "percent_agreement": _batch_percent,
    "cohen_kappa": lambda cm: _batch_kappa(cm, weighted=False),
    "weighted_kappa": lambda cm: _batch_kappa(cm, weighted=True),
    "gwet_ac1": _batch_ac1,
    "spearman": _batch_spearman,
}


def _one(cm: np.ndarray, stat: str) -> float:
    return float(CONFUSION_STATS[stat](cm[None, ...])[0])
