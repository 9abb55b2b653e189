"""Several raters: Krippendorff's alpha, Fleiss' kappa, Gwet's AC1, pooled and pairwise agreement.

Multi-rater functions take a ``matrix``: one row per rater, one column per item, ``None`` where
the rater did not rate the item. Items rated by fewer than two raters are dropped first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalkit.agreement.stats.pairwise import cohen_kappa
from evalkit.agreement.stats.stat import NO_VARIATION, Stat, _codes, _missing_mask, _ok, _undefined, too_little


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
    if arr.dtype.kind in "iub":  # no rating can be missing (a pairing's codes): every cell, raters in order
        present = arr.ravel()
        item_idx = np.tile(np.arange(arr.shape[1]), arr.shape[0])
    else:
        missing = _missing_mask(arr.ravel()).reshape(arr.shape)
        present = arr[~missing]
        item_idx = np.nonzero(~missing)[1]
    if labels is None:
        try:
            labels = _domain(present, ordered=True)
        except ValueError:
            labels = _domain(present, ordered=False)
    return _rated_twice(item_idx, _codes(present, labels), arr.shape[1], len(labels)), list(labels)


def position_counts(positions: np.ndarray, k: int) -> np.ndarray:
    """:func:`item_label_counts` of a (raters x items) matrix of positions on a scale of ``k``
    labels, -1 where the rater did not rate the item."""
    rated = positions >= 0
    return _rated_twice(np.nonzero(rated)[1], positions[rated], positions.shape[1], k)


def _rated_twice(item_idx: np.ndarray, codes: np.ndarray, n_items: int, k: int) -> np.ndarray:
    """(items x labels) counts of the ratings (each an item and a position), items rated once or never dropped."""
    counts = np.bincount(item_idx * k + codes, minlength=n_items * k).reshape(n_items, k)
    return counts[counts.sum(axis=1) >= 2]


def krippendorff_alpha(matrix: Any, level: str = "nominal", labels: Sequence[Any] | None = None) -> Stat:
    """Krippendorff's alpha, ``1 - D_o / D_e`` from the coincidence matrix.

    ``level``: ``nominal`` (any labels), ``ordinal`` (ranks on ``labels``, which must be ordered;
    without labels, numeric values in increasing order), ``interval`` (numeric values; string
    labels are placed at 0, 1, 2, ... in ``labels`` order). Equals
    ``krippendorff.alpha(matrix, level_of_measurement=level, value_domain=labels)``.
    Undefined (the shared rule, :func:`~evalkit.agreement.stats.stat.too_little`) with fewer than
    two items rated twice or every rating the same value."""
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be nominal, ordinal or interval, got {level!r}")
    if labels is None and level != "nominal":
        arr = _as_matrix(matrix)
        present = arr[~_missing_mask(arr.ravel()).reshape(arr.shape)]
        labels = _domain(present, ordered=True)
        if any(isinstance(v, str) for v in labels):
            raise ValueError(f"{level} alpha on string values needs an ordered labels= scale")
    return alpha_of_counts(*item_label_counts(matrix, labels), level)


def alpha_of_counts(counts: np.ndarray, labels: Sequence[Any], level: str) -> Stat:
    """:func:`krippendorff_alpha` of (items x labels) counts (:func:`item_label_counts`)."""
    if reason := _too_little(counts, needs_variation=True):
        return _undefined(reason)
    counts = counts.astype(float)
    m = counts.sum(axis=1)
    weighted = counts / (m - 1.0)[:, None]
    return _alpha(weighted.T @ counts - np.diag(weighted.sum(axis=0)), labels, level)


def alpha_of_confusion(cm: np.ndarray, labels: Sequence[Any], level: str) -> Stat:
    """:func:`krippendorff_alpha` of two raters who both rated every item, from their (k x k)
    confusion matrix: an item's two ratings coincide once each way, so the coincidence matrix is
    ``cm + cm.T`` (what the counts give, exactly: whole numbers)."""
    o = np.array(cm + cm.T, dtype=float, order="C")
    if reason := too_little(int(cm.sum()), int((o.sum(axis=0) > 0).sum()), beyond_chance=True, needs_variation=True):
        return _undefined(reason)
    return _alpha(o, labels, level)


def _alpha(o: np.ndarray, labels: Sequence[Any], level: str) -> Stat:
    """``1 - D_o / D_e`` of the (labels x labels) coincidence matrix ``o``."""
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
        return _undefined(NO_VARIATION)
    return _ok(1.0 - (o * d).sum() / expected)


def _too_little(counts: np.ndarray, *, beyond_chance: bool = True, needs_variation: bool) -> str | None:
    """The shared too-little-data rule on (items x labels) counts."""
    used = int((counts.sum(axis=0) > 0).sum())
    return too_little(counts.shape[0], used, beyond_chance=beyond_chance, needs_variation=needs_variation)


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
    constant number of raters this is exactly Fleiss (1971). Undefined (the shared rule) with fewer
    than two items rated twice or all ratings in one category."""
    return fleiss_of_counts(item_label_counts(matrix, labels)[0])


def fleiss_of_counts(counts: np.ndarray) -> Stat:
    """:func:`fleiss_kappa` of (items x labels) counts (:func:`item_label_counts`)."""
    if reason := _too_little(counts, needs_variation=True):
        return _undefined(reason)
    pa, pi = _multi_pa_pi(counts)
    pe = float((pi**2).sum())
    return _ok((pa - pe) / (1.0 - pe))


def gwet_ac1_multi(matrix: Any, labels: Sequence[Any]) -> Stat:
    """Gwet's AC1 for any number of raters with missing ratings (Gwet 2008 / handbook):
    ``P_o`` and ``pi_k`` as in :func:`fleiss_kappa`, ``P_e = sum_k pi_k (1 - pi_k) / (K - 1)``,
    ``K = len(labels)``. Items rated by fewer than two raters are dropped before ``pi_k`` is
    computed (the handbook keeps single-rated items in ``pi_k``; with complete data both agree).
    With two raters and no missing ratings this equals :func:`gwet_ac1`. Undefined (the shared rule)
    with fewer than two items rated twice; defined when every rating is the same label of a scale
    of two or more."""
    return ac1_of_counts(*item_label_counts(matrix, labels))


def ac1_of_counts(counts: np.ndarray, labels: Sequence[Any]) -> Stat:
    """:func:`gwet_ac1_multi` of (items x labels) counts (:func:`item_label_counts`)."""
    k = len(labels)
    if reason := _too_little(counts, needs_variation=k < 2):  # one label on the scale: no variation
        return _undefined(reason)
    pa, pi = _multi_pa_pi(counts)
    pe = float((pi * (1.0 - pi)).sum() / (k - 1))
    return _ok((pa - pe) / (1.0 - pe))


def pooled_pairwise_agreement(matrix: Any) -> Stat:
    """Agreeing rater pairs / all rater pairs that rated the same item, pooled over items
    (an item with ``r`` ratings contributes ``r (r - 1) / 2`` pairs)."""
    return pooled_of_counts(item_label_counts(matrix, None)[0])


def pooled_of_counts(counts: np.ndarray) -> Stat:
    """:func:`pooled_pairwise_agreement` of (items x labels) counts (:func:`item_label_counts`; on
    any scale holding the labels used: a label nobody used adds no pair)."""
    c = counts.astype(float)
    pairs = (c.sum(axis=1) * (c.sum(axis=1) - 1.0) / 2.0).sum()
    if reason := _too_little(counts, beyond_chance=False, needs_variation=False):
        return _undefined(reason)
    return _ok((c * (c - 1.0) / 2.0).sum() / pairs)


def pairwise_cohen_matrix(
    matrix: Any, rater_names: Sequence[str], labels: Sequence[Any], weighted: bool = False
) -> dict[str, Any]:
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
