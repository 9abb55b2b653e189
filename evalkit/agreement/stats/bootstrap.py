"""Percentile bootstrap intervals: of any statistic (resampling items), and exact-and-fast for the
statistics of a confusion matrix (one multinomial draw per resample).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evalkit.agreement.stats.confusion import CONFUSION_STATS, _confusion
from evalkit.agreement.stats.pairwise import cohen_kappa, gwet_ac1, percent_agreement, spearman
from evalkit.agreement.stats.stat import Stat, _as_1d, _missing_mask, _pair_codes, _undefined


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
    return {
        "estimate": estimate["value"],
        "low": low,
        "high": high,
        "ci": ci,
        "n_resamples": n_resamples,
        "n_undefined": n_undef,
        "seed": seed,
        "reason": reason,
    }


def bootstrap_ci(
    statistic: Callable[..., Stat],
    *data: Any,
    n_resamples: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    clusters: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Percentile bootstrap CI of any statistic, resampling items with replacement.

    ``data`` are array-likes sharing their last axis (the items): 1-D rating vectors, or a
    (raters x items) matrix. ``statistic(*resampled)`` must return a :class:`Stat`. Resamples where
    it is undefined are counted in ``n_undefined`` and left out of the quantiles. ``clusters`` (one
    key per item) resamples the keys, each with all of its items (see :func:`bootstrap_confusion`).
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
    members = _cluster_members(clusters, n) if clusters is not None else None
    if members is None:
        values = _resampled(lambda idx: statistic(*[a[..., idx] for a in arrays]), n, n_resamples, seed)
    else:
        order, starts, sizes = members
        rng = np.random.default_rng(seed)
        values = np.empty(n_resamples)
        for b in range(n_resamples):
            drawn = rng.integers(0, len(sizes), size=len(sizes))
            lens = sizes[drawn]  # the items of each drawn cluster, one after another
            at = np.repeat(starts[drawn] - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
            v = statistic(*[a[..., order[at]] for a in arrays])["value"]
            values[b] = np.nan if v is None else v
    return _ci_result(estimate, values, n_resamples, seed, ci)


def _cluster_members(clusters: Sequence[Any], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The items ordered by cluster, and where each cluster starts in that order and how many it
    holds; None when no cluster holds two items."""
    keys = _keys(clusters)
    if keys.size != n:
        raise ValueError(f"clusters has {keys.size} keys for {n} items")
    _, group, sizes = np.unique(keys, return_inverse=True, return_counts=True)
    if len(sizes) == n:
        return None
    order = np.argsort(group, kind="stable")
    return order, np.cumsum(sizes) - sizes, sizes


def _resampled(statistic_at: Callable[[np.ndarray], Stat], n: int, n_resamples: int, seed: int) -> np.ndarray:
    """The statistic of each of ``n_resamples`` seeded resamples of ``n`` items with replacement
    (``statistic_at(idx)``: of the items at ``idx``), NaN where it is undefined."""
    rng = np.random.default_rng(seed)
    values = np.empty(n_resamples)
    for b in range(n_resamples):
        v = statistic_at(rng.integers(0, n, size=n))["value"]
        values[b] = np.nan if v is None else v
    return values


def bootstrap_counts(
    estimate: Stat,
    counts: np.ndarray,
    statistic: Callable[[np.ndarray], Stat],
    n_resamples: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> dict[str, Any]:
    """:func:`bootstrap_ci` of a statistic of (items x labels) counts, each item one row: resampling
    items resamples rows, so each resample is ``counts[idx]`` (the same draws as bootstrap_ci's, in
    the same order) instead of the items' ratings counted again. ``estimate``: the statistic of
    every item."""
    _check_boot(n_resamples, ci)
    n = counts.shape[0]
    if n == 0:
        return _ci_result(_undefined("no items"), np.full(n_resamples, np.nan), n_resamples, seed, ci)
    return _ci_result(
        estimate, _resampled(lambda idx: statistic(counts[idx]), n, n_resamples, seed), n_resamples, seed, ci
    )


def bootstrap_confusion(
    x: Sequence[Any],
    y: Sequence[Any],
    labels: Sequence[Any],
    stat: str = "cohen_kappa",
    n_resamples: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    clusters: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Bootstrap CI for a statistic of the confusion matrix, exact and fast.

    Resampling n pairs with replacement only changes how many pairs fall in each cell, and those
    counts are ``Multinomial(n, cells / n)``; so each resample is one multinomial draw and the
    statistic is evaluated on all resampled matrices at once. ``stat`` is one of
    ``percent_agreement``, ``cohen_kappa``, ``weighted_kappa``, ``gwet_ac1``, ``spearman``
    (``labels`` ordered least to most for the last two). ``clusters`` (one key per pair, such as
    its run) resamples the keys instead, each with all of its pairs: pairs that share a run (two
    judges of one run) are not independent draws, and resampling them apart narrows the interval.
    When every key is distinct this is the pairs' bootstrap.
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
    groups = _cluster_cells(x, y, clusters, xc, yc, k) if clusters is not None else None
    if groups is None:
        draws = rng.multinomial(n, cm.ravel() / n, size=n_resamples).reshape(n_resamples, k, k)
    else:
        draws = _cluster_draws(rng, groups, n_resamples).reshape(n_resamples, k, k)
    values = CONFUSION_STATS[stat](draws)
    return _ci_result(point, values, n_resamples, seed, ci)


def _cluster_cells(
    x: Any, y: Any, clusters: Sequence[Any], xc: np.ndarray, yc: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct confusion counts a cluster holds (patterns x k*k) and how many clusters hold
    each, for the pairs ``_pair_codes`` kept; None when no cluster holds two pairs (then resampling
    clusters is resampling pairs)."""
    keys = _keys(clusters)
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if keys.shape != xa.shape:
        raise ValueError(f"clusters has {keys.size} keys for {xa.size} pairs")
    keys = keys[~(_missing_mask(xa) | _missing_mask(ya))]
    _, group = np.unique(keys, return_inverse=True)
    n_groups = int(group.max()) + 1 if group.size else 0
    if n_groups == group.size:
        return None
    cells = np.zeros((n_groups, k * k), dtype=np.int64)
    np.add.at(cells, (group, xc * k + yc), 1)
    base = int(cells.max()) + 1
    if base ** (k * k) < 1 << 62:  # each row as one integer: a sort of integers, not of rows
        codes = cells @ (base ** np.arange(k * k, dtype=np.int64))
        _, first, counts = np.unique(codes, return_index=True, return_counts=True)
        return cells[first], counts
    patterns, counts = np.unique(cells, axis=0, return_counts=True)
    return patterns, counts


def _keys(clusters: Sequence[Any]) -> np.ndarray:
    """Cluster keys as an array ``np.unique`` sorts: integers as they are, anything else as text."""
    keys = np.asarray(clusters)
    return keys if keys.dtype.kind in "iu" else np.asarray(list(clusters), dtype=object).astype(str)


def _cluster_draws(rng: np.random.Generator, groups: tuple[np.ndarray, np.ndarray], n_resamples: int) -> np.ndarray:
    """``n_resamples`` confusion matrices (flattened), each the sum of as many clusters as there
    are, drawn with replacement. Clusters that hold the same counts are interchangeable, so a
    resample is one multinomial draw over the distinct patterns (a few dozen, however many
    clusters) with their shares as probabilities: the same distribution as drawing the clusters."""
    patterns, counts = groups
    total = int(counts.sum())
    return rng.multinomial(total, counts / total, size=n_resamples) @ patterns
