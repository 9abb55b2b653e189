"""Agreement and calibration statistics (numpy; scipy only where a distribution is needed).

Every statistic returns a :class:`Stat`, ``{"value": float | None, "reason": str | None}``. A
statistic that is undefined for the data (a constant rater, too few items, a zero denominator) has
``value`` None and a human-readable ``reason``; it is never reported as 0 and never raises. Bad
*input* (a value outside the declared ``labels``, an unknown level of measurement, arrays of
different lengths) is a caller error and raises ``ValueError`` naming the problem.

Conventions shared by all functions:

- A *rating* is any hashable value (string, int, float); ``None`` and float NaN mean "missing".
- Two-rater functions take two equally long sequences; a pair with a missing side is dropped.
- ``labels`` is the full scale. Where order matters (weighted kappa, ordinal alpha, Spearman,
  error direction) it is ordered from least to most; statistics that depend on the number of
  categories (Gwet's AC1, weighted kappa) use the whole scale, including labels nobody used.
- Multi-rater functions take a ``matrix``: one row per rater, one column per item, ``None`` where
  the rater did not rate the item. Items rated by fewer than two raters are dropped first.

Chance-corrected pair statistics are computed from the confusion matrix by functions that work on
a stack of matrices at once; the point estimate and :func:`bootstrap_confusion` share them, so a
bootstrap interval is always about exactly the statistic reported.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import numpy as np

__all__ = [
    "Stat",
    "percent_agreement",
    "cohen_kappa",
    "gwet_ac1",
    "spearman",
    "confusion_matrix",
    "krippendorff_alpha",
    "fleiss_kappa",
    "gwet_ac1_multi",
    "pooled_pairwise_agreement",
    "pairwise_cohen_matrix",
    "item_label_counts",
    "brier_multiclass",
    "reliability_bands",
    "expected_calibration_error",
    "escalation",
    "direction",
    "direction_counts",
    "bootstrap_ci",
    "bootstrap_confusion",
    "DEFAULT_BAND_EDGES",
    "CONFUSION_STATS",
]


class Stat(TypedDict):
    value: float | None
    reason: str | None


def _ok(value: float) -> Stat:
    value = float(value)
    if not math.isfinite(value):
        return _undefined("the statistic is not finite for these data")
    return {"value": value, "reason": None}


def _undefined(reason: str) -> Stat:
    return {"value": None, "reason": reason}


# ---------------------------------------------------------------------------------------------
# encoding ratings


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _as_1d(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a one-dimensional sequence, got shape {arr.shape}")
    return arr


def _missing_mask(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "O":
        return np.frompyfunc(_is_missing, 1, 1)(arr).astype(bool) if arr.size else np.zeros(0, bool)
    return np.zeros(arr.shape, dtype=bool)


def _label_lookup(labels: Sequence[Any]) -> dict[Any, int]:
    lookup = {lab: i for i, lab in enumerate(labels)}
    if len(lookup) != len(labels):
        raise ValueError(f"labels contain duplicates: {list(labels)!r}")
    return lookup


def _codes(values: np.ndarray, labels: Sequence[Any]) -> np.ndarray:
    """Positions of (non-missing) ``values`` on the scale ``labels``."""
    lookup = _label_lookup(labels)
    if values.size == 0:
        return np.zeros(0, dtype=np.intp)
    # Factorise first so the dictionary lookup runs once per distinct value, not once per item.
    if values.dtype.kind in "iufUSb":
        uniq, inverse = np.unique(values, return_inverse=True)
        uniq = [u.item() for u in uniq]
    else:
        first: dict[Any, int] = {}
        inverse = np.fromiter((first.setdefault(v, len(first)) for v in values), np.intp, values.size)
        uniq = list(first)
    try:
        mapped = np.array([lookup[u] for u in uniq], dtype=np.intp)
    except KeyError as exc:
        raise ValueError(f"value {exc.args[0]!r} is not on the scale {list(labels)!r}") from None
    return mapped[inverse]


def _pair_codes(x: Any, y: Any, labels: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.size} and {ya.size})")
    keep = ~(_missing_mask(xa) | _missing_mask(ya))
    return _codes(xa[keep], labels), _codes(ya[keep], labels)


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


# ---------------------------------------------------------------------------------------------
# two raters


def percent_agreement(x: Sequence[Any], y: Sequence[Any]) -> Stat:
    """Share of pairs with ``x == y`` (pairs with a missing side dropped). Undefined with no pairs."""
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.size} and {ya.size})")
    keep = ~(_missing_mask(xa) | _missing_mask(ya))
    xa, ya = xa[keep], ya[keep]
    if xa.size == 0:
        return _undefined("no item has both ratings")
    same = np.asarray(xa == ya, dtype=bool) if xa.dtype == ya.dtype else np.asarray(
        xa.astype(object) == ya.astype(object), dtype=bool)
    return _ok(same.mean())


def _pair_reason(cm: np.ndarray, k: int, *, need_variation: bool) -> str | None:
    n = int(cm.sum())
    if n == 0:
        return "no item has both ratings"
    if k < 2:
        return "the scale has fewer than two labels"
    if need_variation:
        if n == 1:
            return "only one item has both ratings"
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
    xc, yc = _pair_codes(x, y, labels)
    k = len(labels)
    cm = _confusion(xc, yc, k)
    reason = _pair_reason(cm, k, need_variation=True)
    if reason:
        return _undefined(reason)
    return _ok(_one(cm, "weighted_kappa" if weighted else "cohen_kappa"))


def gwet_ac1(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any]) -> Stat:
    """Gwet's AC1 for two raters: ``(pa - pe) / (1 - pe)`` with
    ``pe = sum_k pi_k (1 - pi_k) / (K - 1)``, ``pi_k`` the mean of the two raters' marginal shares,
    ``K = len(labels)`` (the full scale, as in Gwet's handbook when categories are given).
    Defined for constant raters (that is its point); undefined with no pairs or K < 2."""
    xc, yc = _pair_codes(x, y, labels)
    k = len(labels)
    cm = _confusion(xc, yc, k)
    reason = _pair_reason(cm, k, need_variation=False)
    if reason:
        return _undefined(reason)
    return _ok(_one(cm, "gwet_ac1"))


def _rankdata(v: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank), 1-based."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    new = np.r_[True, sv[1:] != sv[:-1]]
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.r_[starts, sv.size])
    avg = starts + (counts + 1) / 2.0
    ranks = np.empty(v.size)
    ranks[order] = avg[group]
    return ranks


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
    if xv.size < 2:
        return _undefined(f"Spearman needs at least two pairs (got {xv.size})")
    if np.all(xv == xv[0]):
        return _undefined("the first rater gave the same value to every item")
    if np.all(yv == yv[0]):
        return _undefined("the second rater gave the same value to every item")
    rx, ry = _rankdata(xv), _rankdata(yv)
    rx -= rx.mean()
    ry -= ry.mean()
    return _ok(np.clip((rx * ry).sum() / math.sqrt((rx**2).sum() * (ry**2).sum()), -1.0, 1.0))


# ---------------------------------------------------------------------------------------------
# several raters


def _as_matrix(matrix: Any) -> np.ndarray:
    if isinstance(matrix, np.ndarray):
        arr = matrix
    else:
        rows = [list(r) for r in matrix]
        if rows and len({len(r) for r in rows}) != 1:
            raise ValueError("matrix: every rater row must have one entry per item")
        arr = np.empty((len(rows), len(rows[0]) if rows else 0), dtype=object)
        for i, r in enumerate(rows):
            arr[i, :] = r
    if arr.ndim != 2:
        raise ValueError(f"matrix: expected raters x items, got shape {arr.shape}")
    return arr


def _domain(values: np.ndarray, ordered: bool) -> list[Any]:
    if values.dtype.kind in "iufUSb":
        return [u.item() for u in np.unique(values)]
    uniq = list(dict.fromkeys(values.tolist()))
    if ordered:
        try:
            uniq = sorted(uniq)
        except TypeError:
            raise ValueError("values of mixed types cannot be ordered; pass labels=") from None
    return uniq


def item_label_counts(matrix: Any, labels: Sequence[Any] | None = None) -> tuple[np.ndarray, list[Any]]:
    """(items x labels) counts of ratings per item, items with fewer than two ratings dropped.

    Returns ``(counts, labels)``; without ``labels`` the scale is the sorted distinct values
    (order of first appearance when they cannot be sorted)."""
    arr = _as_matrix(matrix)
    missing = _missing_mask(arr.ravel()).reshape(arr.shape)
    present = arr[~missing]
    if labels is None:
        try:
            labels = _domain(present, ordered=True)
        except ValueError:
            labels = _domain(present, ordered=False)
    k = len(labels)
    rater_idx, item_idx = np.nonzero(~missing)
    codes = _codes(arr[rater_idx, item_idx], labels)
    counts = np.bincount(item_idx * k + codes, minlength=arr.shape[1] * k).reshape(arr.shape[1], k)
    return counts[counts.sum(axis=1) >= 2], list(labels)


def krippendorff_alpha(matrix: Any, level: str = "nominal", labels: Sequence[Any] | None = None) -> Stat:
    """Krippendorff's alpha, ``1 - D_o / D_e`` from the coincidence matrix.

    ``level``: ``nominal`` (any labels), ``ordinal`` (ranks on ``labels``, which must be ordered;
    without labels, numeric values in increasing order), ``interval`` (numeric values; string
    labels are placed at 0, 1, 2, ... in ``labels`` order). Equals
    ``krippendorff.alpha(matrix, level_of_measurement=level, value_domain=labels)``.
    Undefined when no item has two ratings or every rating has the same value."""
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be nominal, ordinal or interval, got {level!r}")
    if labels is None and level != "nominal":
        arr = _as_matrix(matrix)
        present = arr[~_missing_mask(arr.ravel()).reshape(arr.shape)]
        labels = _domain(present, ordered=True)
        if any(isinstance(v, str) for v in labels):
            raise ValueError(f"{level} alpha on string values needs an ordered labels= scale")
    counts, labels = item_label_counts(matrix, labels)
    if counts.shape[0] == 0:
        return _undefined("no item has ratings from two or more raters")
    counts = counts.astype(float)
    m = counts.sum(axis=1)
    weighted = counts / (m - 1.0)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_v = o.sum(axis=0)
    n = n_v.sum()
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n - 1.0)
    k = len(labels)
    if level == "nominal":
        d = 1.0 - np.eye(k)
    elif level == "ordinal":
        cum = np.r_[0.0, np.cumsum(n_v)]
        lo = np.minimum.outer(np.arange(k), np.arange(k))
        hi = np.maximum.outer(np.arange(k), np.arange(k))
        d = (cum[hi + 1] - cum[lo] - (n_v[lo] + n_v[hi]) / 2.0) ** 2
    else:
        try:
            pos = np.array(labels, dtype=float)
        except (TypeError, ValueError):
            pos = np.arange(k, dtype=float)
        d = (pos[:, None] - pos[None, :]) ** 2
    expected = (e * d).sum()
    if not expected > 0:
        return _undefined("every rating has the same value: expected disagreement is zero")
    return _ok(1.0 - (o * d).sum() / expected)


def _multi_pa_pi(counts: np.ndarray) -> tuple[float, np.ndarray]:
    c = counts.astype(float)
    r = c.sum(axis=1)
    pa = ((c * (c - 1.0)).sum(axis=1) / (r * (r - 1.0))).mean()
    pi = (c / r[:, None]).mean(axis=0)
    return float(pa), pi


def fleiss_kappa(matrix: Any, labels: Sequence[Any] | None = None) -> Stat:
    """Fleiss' kappa, generalised to items rated by different numbers of raters.

    Per item ``P_i = sum_k n_ik (n_ik - 1) / (r_i (r_i - 1))`` with ``r_i`` the raters of that item;
    ``P_o`` is the mean of ``P_i`` over items with ``r_i >= 2``; ``p_k`` is the mean over those
    items of the share ``n_ik / r_i`` (Gwet's handbook generalisation: each item weighs the same
    however many raters it had); ``P_e = sum_k p_k^2``; kappa = ``(P_o - P_e) / (1 - P_e)``. With a
    constant number of raters this is exactly Fleiss (1971). Undefined when no item has two
    ratings or all ratings fall in one category."""
    counts, _ = item_label_counts(matrix, labels)
    if counts.shape[0] == 0:
        return _undefined("no item has ratings from two or more raters")
    if (counts.sum(axis=0) > 0).sum() < 2:
        return _undefined("every rating is the same label: chance agreement is total")
    pa, pi = _multi_pa_pi(counts)
    pe = float((pi**2).sum())
    return _ok((pa - pe) / (1.0 - pe))


def gwet_ac1_multi(matrix: Any, labels: Sequence[Any]) -> Stat:
    """Gwet's AC1 for any number of raters with missing ratings (Gwet 2008 / handbook):
    ``P_o`` and ``pi_k`` as in :func:`fleiss_kappa`, ``P_e = sum_k pi_k (1 - pi_k) / (K - 1)``,
    ``K = len(labels)``. Items rated by fewer than two raters are dropped before ``pi_k`` is
    computed (the handbook keeps single-rated items in ``pi_k``; with complete data both agree).
    With two raters and no missing ratings this equals :func:`gwet_ac1`."""
    counts, labels = item_label_counts(matrix, labels)
    k = len(labels)
    if counts.shape[0] == 0:
        return _undefined("no item has ratings from two or more raters")
    if k < 2:
        return _undefined("the scale has fewer than two labels")
    pa, pi = _multi_pa_pi(counts)
    pe = float((pi * (1.0 - pi)).sum() / (k - 1))
    return _ok((pa - pe) / (1.0 - pe))


def pooled_pairwise_agreement(matrix: Any) -> Stat:
    """Agreeing rater pairs / all rater pairs that rated the same item, pooled over items
    (an item with ``r`` ratings contributes ``r (r - 1) / 2`` pairs)."""
    counts, _ = item_label_counts(matrix, None)
    c = counts.astype(float)
    pairs = (c.sum(axis=1) * (c.sum(axis=1) - 1.0) / 2.0).sum()
    if pairs == 0:
        return _undefined("no item has ratings from two or more raters")
    return _ok((c * (c - 1.0) / 2.0).sum() / pairs)


def pairwise_cohen_matrix(matrix: Any, rater_names: Sequence[str], labels: Sequence[Any],
                          weighted: bool = False) -> dict[str, Any]:
    """Cohen's kappa for every pair of raters on the items both rated.

    Returns ``{"raters": [...], "weighted": bool, "values": [[float | None]] (symmetric, diagonal
    None), "pairs": [{"raters": [a, b], "n": int, "value", "reason"}]}`` with pairs in row order."""
    arr = _as_matrix(matrix)
    names = list(rater_names)
    if len(names) != arr.shape[0]:
        raise ValueError(f"rater_names has {len(names)} names for {arr.shape[0]} rater rows")
    missing = _missing_mask(arr.ravel()).reshape(arr.shape)
    r = len(names)
    values: list[list[float | None]] = [[None] * r for _ in range(r)]
    pairs = []
    for i in range(r):
        for j in range(i + 1, r):
            both = ~missing[i] & ~missing[j]
            st = cohen_kappa(arr[i, both], arr[j, both], labels, weighted=weighted)
            values[i][j] = values[j][i] = st["value"]
            pairs.append({"raters": [names[i], names[j]], "n": int(both.sum()), **st})
    return {"raters": names, "weighted": weighted, "values": values, "pairs": pairs}


# ---------------------------------------------------------------------------------------------
# calibration


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
        out.append({
            "band": f"{e[b]:.2f}-{e[b + 1]:.2f}",
            "low": float(e[b]), "high": float(e[b + 1]), "n": nb_,
            "mean_confidence": float(conf[b] / nb_) if nb_ else None,
            "accuracy": float(hits[b] / nb_) if nb_ else None,
        })
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
    n = np.bincount(idx, minlength=n_bins).astype(float)
    gap = np.abs(np.bincount(idx, weights=c.astype(float), minlength=n_bins)
                 - np.bincount(idx, weights=p, minlength=n_bins))
    return _ok(gap.sum() / p.size)


def escalation(top_prob: Any, correct: Any, threshold: float) -> dict[str, Any]:
    """Escalate every decision whose top probability is below ``threshold`` to a human.

    Returns ``{threshold, n, escalated, misses, misses_caught}``: ``misses`` are the wrong
    decisions among rows with a forecast, ``misses_caught`` those of them that were escalated."""
    p, c = _conf_pairs(top_prob, correct)
    esc = p < threshold
    return {"threshold": float(threshold), "n": int(p.size), "escalated": int(esc.sum()),
            "misses": int((~c).sum()), "misses_caught": int((esc & ~c).sum())}


# ---------------------------------------------------------------------------------------------
# error direction


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
    return {"n": int(jc.size), "agree": int((jc == mc).sum()),
            "lenient": int((jc > mc).sum()), "strict": int((jc < mc).sum())}


# ---------------------------------------------------------------------------------------------
# bootstrap


def _interval(values: np.ndarray, ci: float) -> tuple[float | None, float | None]:
    good = values[np.isfinite(values)]
    if good.size == 0:
        return None, None
    lo, hi = np.quantile(good, [(1.0 - ci) / 2.0, 1.0 - (1.0 - ci) / 2.0])
    return float(lo), float(hi)


def _check_boot(n_resamples: int, ci: float) -> None:
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must lie strictly between 0 and 1")


def _ci_result(estimate: Stat, values: np.ndarray, n_resamples: int, seed: int, ci: float) -> dict[str, Any]:
    low, high = _interval(values, ci)
    n_undef = int((~np.isfinite(values)).sum())
    reason = None
    if estimate["value"] is None:
        reason = estimate["reason"]
    elif low is None:
        reason = "the statistic was undefined in every resample"
    return {"estimate": estimate["value"], "low": low, "high": high, "ci": ci,
            "n_resamples": n_resamples, "n_undefined": n_undef, "seed": seed, "reason": reason}


def bootstrap_ci(statistic: Callable[..., Stat], *data: Any, n_resamples: int = 1000, seed: int = 0,
                 ci: float = 0.95) -> dict[str, Any]:
    """Percentile bootstrap CI of any statistic, resampling items with replacement.

    ``data`` are array-likes sharing their last axis (the items): 1-D rating vectors, or a
    (raters x items) matrix. ``statistic(*resampled)`` must return a :class:`Stat`. Resamples where
    it is undefined are counted in ``n_undefined`` and left out of the quantiles.
    Returns ``{estimate, low, high, ci, n_resamples, n_undefined, seed, reason}``."""
    _check_boot(n_resamples, ci)
    arrays = [np.asarray(d, dtype=object) if not isinstance(d, np.ndarray) else d for d in data]
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one data array")
    n = arrays[0].shape[-1]
    if any(a.shape[-1] != n for a in arrays):
        raise ValueError("all data must have the same number of items (last axis)")
    estimate = statistic(*arrays)
    if n == 0:
        return _ci_result(_undefined("no items"), np.full(n_resamples, np.nan), n_resamples, seed, ci)
    rng = np.random.default_rng(seed)
    values = np.empty(n_resamples)
    for b in range(n_resamples):
        idx = rng.integers(0, n, size=n)
        v = statistic(*[a[..., idx] for a in arrays])["value"]
        values[b] = np.nan if v is None else v
    return _ci_result(estimate, values, n_resamples, seed, ci)


def bootstrap_confusion(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any], stat: str = "cohen_kappa",
                        n_resamples: int = 1000, seed: int = 0, ci: float = 0.95) -> dict[str, Any]:
    """Bootstrap CI for a statistic of the confusion matrix, exact and fast.

    Resampling n pairs with replacement only changes how many pairs fall in each cell, and those
    counts are ``Multinomial(n, cells / n)``; so each resample is one multinomial draw and the
    statistic is evaluated on all resampled matrices at once. ``stat`` is one of
    ``percent_agreement``, ``cohen_kappa``, ``weighted_kappa``, ``gwet_ac1``, ``spearman``
    (``labels`` ordered least to most for the last two).
    Returns ``{estimate, low, high, ci, n_resamples, n_undefined, seed, reason}``."""
    if stat not in CONFUSION_STATS:
        raise ValueError(f"stat must be one of {sorted(CONFUSION_STATS)}, got {stat!r}")
    _check_boot(n_resamples, ci)
    xc, yc = _pair_codes(x, y, labels)
    k = len(labels)
    cm = _confusion(xc, yc, k)
    n = int(cm.sum())
    point = {
        "percent_agreement": lambda: percent_agreement(xc, yc),
        "cohen_kappa": lambda: cohen_kappa(xc, yc, range(k)),
        "weighted_kappa": lambda: cohen_kappa(xc, yc, range(k), weighted=True),
        "gwet_ac1": lambda: gwet_ac1(xc, yc, range(k)),
        "spearman": lambda: spearman(xc, yc),
    }[stat]()
    if n == 0:
        return _ci_result(point, np.full(n_resamples, np.nan), n_resamples, seed, ci)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, cm.ravel() / n, size=n_resamples).reshape(n_resamples, k, k)
    values = CONFUSION_STATS[stat](draws)
    return _ci_result(point, values, n_resamples, seed, ci)
