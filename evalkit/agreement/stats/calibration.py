"""Calibration of probability forecasts: multi-class Brier score, expected calibration error,
reliability bands, and escalation of low-confidence decisions to a human.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalkit.agreement.stats.stat import Stat, _ok, _undefined

DEFAULT_BAND_EDGES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def brier_multiclass(probs: Any, truth_index: Any) -> Stat:
    """Multi-class Brier score: per row ``sum_k (p_k - [k == truth])^2``, averaged over rows.

    0 is perfect, ``2/3`` a uniform forecast over three classes, 2 a confident wrong answer. For two
    classes with ``probs = [1 - p, p]`` it is exactly ``2 * sklearn.metrics.brier_score_loss(y, p)``
    (both classes' errors are equal, and scikit-learn counts one). Rows containing NaN are not
    forecasts and are skipped; undefined when no row is left."""
    p = np.asarray(probs, dtype=float)
    t = np.asarray(truth_index)
    if p.ndim != 2 or t.shape != (p.shape[0],):
        raise ValueError(f"probs must be (n, k) and truth_index (n,), got {p.shape} and {t.shape}")
    keep = ~np.isnan(p).any(axis=1)
    p, t = p[keep], t[keep].astype(np.intp)
    if p.shape[0] == 0:
        return _undefined("no row has a usable probability forecast")
    if ((t < 0) | (t >= p.shape[1])).any():
        raise ValueError("truth_index outside 0..k-1")
    onehot = np.zeros_like(p)
    onehot[np.arange(p.shape[0]), t] = 1.0
    return _ok(((p - onehot) ** 2).sum(axis=1).mean())


def _conf_pairs(top_prob: Any, correct: Any) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(top_prob, dtype=float).ravel()
    c = np.asarray(correct, dtype=bool).ravel()
    if p.shape != c.shape:
        raise ValueError(f"top_prob and correct differ in length ({p.size} and {c.size})")
    keep = ~np.isnan(p)
    if ((p[keep] < 0) | (p[keep] > 1)).any():
        raise ValueError("probabilities must lie in [0, 1]")
    return p[keep], c[keep]


def reliability_bands(top_prob: Any, correct: Any, edges: Sequence[float] = DEFAULT_BAND_EDGES) -> list[dict[str, Any]]:
    """Confidence bands ``[lo, hi)`` (the last one closed): per band ``n``, mean confidence and
    accuracy (None for an empty band). NaN confidences and values outside the edges are skipped."""
    p, c = _conf_pairs(top_prob, correct)
    e = np.asarray(edges, dtype=float)
    if e.ndim != 1 or e.size < 2 or (np.diff(e) <= 0).any():
        raise ValueError("edges must be at least two increasing numbers")
    nb = e.size - 1
    idx = np.searchsorted(e, p, side="right") - 1
    idx[p == e[-1]] = nb - 1
    inside = (idx >= 0) & (idx < nb)
    idx, p, c = idx[inside], p[inside], c[inside]
    n = np.bincount(idx, minlength=nb)
    conf = np.bincount(idx, weights=p, minlength=nb)
    hits = np.bincount(idx, weights=c.astype(float), minlength=nb)
    out = []
    for b in range(nb):
        nb_ = int(n[b])
        out.append(
            {
                "band": f"{e[b]:.2f}-{e[b + 1]:.2f}",
                "low": float(e[b]),
                "high": float(e[b + 1]),
                "n": nb_,
                "mean_confidence": float(conf[b] / nb_) if nb_ else None,
                "accuracy": float(hits[b] / nb_) if nb_ else None,
            }
        )
    return out


def expected_calibration_error(top_prob: Any, correct: Any, n_bins: int = 10) -> Stat:
    """ECE over ``n_bins`` equal-width bins (bin = ``floor(p * n_bins)``, p = 1 in the last):
    ``sum_b (n_b / n) |accuracy_b - mean confidence_b|``. Undefined with no forecasts."""
    p, c = _conf_pairs(top_prob, correct)
    if p.size == 0:
        return _undefined("no row has a usable probability forecast")
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    idx = np.minimum((p * n_bins).astype(np.intp), n_bins - 1)
    gap = np.abs(
        np.bincount(idx, weights=c.astype(float), minlength=n_bins) - np.bincount(idx, weights=p, minlength=n_bins)
    )
    return _ok(gap.sum() / p.size)


def escalation(top_prob: Any, correct: Any, threshold: float) -> dict[str, Any]:
    """Escalate every decision whose top probability is below ``threshold`` to a human.

    Returns ``{threshold, n, escalated, misses, misses_caught}``: ``misses`` are the wrong
    decisions among rows with a forecast, ``misses_caught`` those of them that were escalated."""
    p, c = _conf_pairs(top_prob, correct)
    esc = p < threshold
    return {
        "threshold": float(threshold),
        "n": int(p.size),
        "escalated": int(esc.sum()),
        "misses": int((~c).sum()),
        "misses_caught": int((esc & ~c).sum()),
    }
