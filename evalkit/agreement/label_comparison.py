"""The comparison engine: predictions against references on one label scale → a :class:`Comparison`.

Both things evalkit compares go through it: an audit pairing (the judge's label against the
mechanical label of each run, :mod:`evalkit.agreement.judge_vs_mechanical`) and a classifier's verdict file (its
predicted permission against the true one, :mod:`evalkit.verdicts.analysis`). What differs between them —
where the rows come from, which rows are usable, how the result is laid out — stays with them.

Inputs are positions on ``labels`` (``0 .. k-1``). A reference is always on the scale; a
prediction may not be (a reply outside the labels, an error): give it as a negative position. Such
a row counts as a disagreement in ``agree`` / ``n``, has no direction, and is left out of every
chance-corrected statistic (which need two labels).

Direction: ``more_credit="higher"`` when ``labels`` run from least to most credit (the audit's
scales), ``"lower"`` when they run from most to least (a verdict file's ``allow > confirm > deny``).
A prediction granting more credit than its reference is an error of *more credit* (the audit calls
it "lenient", verdict files "grants more"), less credit is *less credit* ("strict", "grants less").

Calibration is computed when ``probabilities`` are given (one row per item, ``None`` for an item
without a usable forecast; or an ``(n, k)`` array with a row of NaN there): the Brier score
against the reference, and, with the top probability as the confidence (or ``confidences`` when
the caller defines confidence otherwise), the expected calibration error, reliability bands and
escalation of decisions below ``threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from evalkit.agreement import stats as st
from evalkit.agreement.stats import DEFAULT_BAND_EDGES, Stat, registry

ORDERED_LEVELS = registry.ORDERED


@dataclass(frozen=True)
class Calibration:
    """Calibration of the rows that carry a forecast (``rows``: their positions in the input)."""

    rows: list[int]
    top: np.ndarray  # the confidence of each forecast row
    correct: np.ndarray  # prediction == reference, per forecast row
    brier: Stat
    ece: Stat
    bands: list[dict[str, Any]]
    escalation: dict[str, Any]
    uncaught_more_credit: int  # wrong, not escalated, and granting more credit than the reference


@dataclass(frozen=True)
class Comparison:
    labels: list[Any]
    level: str
    n: int  # rows compared
    n_valid: int  # rows whose prediction is on the scale
    agree: int  # rows with prediction == reference
    # every registered statistic over the valid rows (evalkit.agreement.stats.registry), by name
    stats: dict[str, Stat]
    confusion: list[list[int]]  # prediction rows x reference columns, in ``labels`` order
    more_credit: int
    less_credit: int
    correct: np.ndarray
    more_credit_rows: np.ndarray  # bool per row: a valid prediction granting more credit
    calibration: Calibration | None = None
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)
    slices: dict[str, Comparison] = field(default_factory=dict)

    @property
    def invalid(self) -> int:
        """Rows whose prediction is not on the scale."""
        return self.n - self.n_valid

    def __getattr__(self, name: str) -> Stat | None:
        """A statistic by name (``comparison.cohen_kappa``); None where it does not apply (weighted
        kappa on a nominal scale)."""
        stats = self.__dict__.get("stats")
        if name.startswith("_") or stats is None or name not in stats:
            raise AttributeError(name)
        stat = stats[name]
        return stat if registry.applies(stat) else None


def _valid_keys(clusters: Sequence[Any] | None, valid: np.ndarray) -> list[Any] | None:
    if clusters is None:
        return None
    keys = list(clusters)
    if len(keys) != valid.size:
        raise ValueError(f"clusters has {len(keys)} keys for {valid.size} rows")
    return [key for key, ok in zip(keys, valid.tolist()) if ok]


def compare(
    predictions: Sequence[int] | np.ndarray,
    references: Sequence[int] | np.ndarray,
    labels: Sequence[Any],
    *,
    level: str = "nominal",
    more_credit: Literal["higher", "lower"] = "higher",
    probabilities: Sequence[Sequence[float] | None] | None = None,
    confidences: Sequence[float | None] | None = None,
    threshold: float = 0.8,
    ece_bins: int = 10,
    band_edges: Sequence[float] = DEFAULT_BAND_EDGES,
    bootstrap: dict[str, Any] | None = None,
    slices: Sequence[str] | None = None,
    clusters: Sequence[Any] | None = None,
) -> Comparison:
    """Compare ``predictions`` with ``references`` (positions on ``labels``; see the module doc).

    ``bootstrap`` (``{"n_resamples", "seed", "ci"}``) adds percentile intervals of the bootstrapped
    statistics that apply to the level (percent agreement, kappa, AC1, weighted kappa on ordered
    levels); ``clusters`` (one key per row, such as its run) makes them resample the keys, each
    with all of its rows. ``slices`` (one key per row) adds the same comparison for each key's rows,
    keys sorted; intervals are not sliced."""
    pred = np.asarray(predictions, dtype=np.int64).reshape(-1)
    ref = np.asarray(references, dtype=np.int64).reshape(-1)
    if pred.shape != ref.shape:
        raise ValueError(f"predictions and references differ in length ({pred.size} and {ref.size})")
    labels = list(labels)
    k = len(labels)
    if ((ref < 0) | (ref >= k)).any() or (pred >= k).any():
        raise ValueError("positions must lie in 0 .. len(labels) - 1 (predictions may be negative: off the scale)")
    valid = pred >= 0
    pv, rv = pred[valid], ref[valid]
    codes = list(range(k))
    pairs = registry.Pairs(pv, rv, labels, level)
    stats = registry.pair_stats(pairs)
    higher = more_credit == "higher"
    more_rows = valid & ((pred > ref) if higher else (pred < ref))
    less_rows = valid & ((pred < ref) if higher else (pred > ref))
    correct = pred == ref
    result = Comparison(
        labels=labels,
        level=level,
        n=int(pred.size),
        n_valid=int(valid.sum()),
        agree=int(correct.sum()),
        stats=stats,
        confusion=st.confusion_matrix(pv, rv, codes),
        more_credit=int(more_rows.sum()),
        less_credit=int(less_rows.sum()),
        correct=correct,
        more_credit_rows=more_rows,
        calibration=None
        if probabilities is None
        else _calibration(ref, correct, more_rows, k, probabilities, confidences, threshold, ece_bins, band_edges),
        intervals=registry.pair_intervals(pairs, stats, **bootstrap, clusters=_valid_keys(clusters, valid))
        if bootstrap is not None
        else {},
    )
    if slices is not None:
        keys = list(slices)
        if len(keys) != pred.size:
            raise ValueError(f"slices has {len(keys)} keys for {pred.size} rows")
        rows_of: dict[str, list[int]] = {}  # one pass: a scan per key is quadratic
        for i, key in enumerate(keys):
            rows_of.setdefault(key, []).append(i)
        for key in sorted(rows_of):
            idx = rows_of[key]
            result.slices[key] = compare(
                pred[idx],
                ref[idx],
                labels,
                level=level,
                more_credit=more_credit,
                probabilities=None if probabilities is None else _rows(probabilities, idx),
                confidences=None if confidences is None else _rows(confidences, idx),
                threshold=threshold,
                ece_bins=ece_bins,
                band_edges=band_edges,
            )
    return result


def _rows(data: Sequence[Any], idx: list[int]) -> Sequence[Any]:
    """The rows ``idx`` of a list or an array."""
    return data[idx] if isinstance(data, np.ndarray) else [data[i] for i in idx]


def _calibration(
    ref: np.ndarray,
    correct: np.ndarray,
    more_rows: np.ndarray,
    k: int,
    probabilities: Sequence[Sequence[float] | None],
    confidences: Sequence[float | None] | None,
    threshold: float,
    ece_bins: int,
    band_edges: Sequence[float],
) -> Calibration:
    if len(probabilities) != ref.size:
        raise ValueError(f"probabilities has {len(probabilities)} rows for {ref.size} items")
    if isinstance(probabilities, np.ndarray):  # (n, k) floats, a row of NaN for an item without a forecast
        at = np.flatnonzero(~np.isnan(probabilities).all(axis=1))
        rows = at.tolist()
        probs = np.asarray(probabilities[at], dtype=float).reshape(len(rows), k)
        given = None if confidences is None else np.asarray(confidences, dtype=float)[at]
    else:
        rows = [i for i, p in enumerate(probabilities) if p is not None]
        probs = np.array([probabilities[i] for i in rows], dtype=float).reshape(len(rows), k)
        given = None if confidences is None else np.array([confidences[i] for i in rows], dtype=float)
    if given is not None:
        top = given
    else:
        top = probs.max(axis=1) if rows else np.zeros(0)
    ok = correct[rows] if rows else np.zeros(0, dtype=bool)
    return Calibration(
        rows=rows,
        top=top,
        correct=ok,
        brier=st.brier_multiclass(probs, ref[rows].astype(np.intp)),
        ece=st.expected_calibration_error(top, ok, n_bins=ece_bins),
        bands=st.reliability_bands(top, ok, band_edges),
        escalation=st.escalation(top, ok, threshold),
        uncaught_more_credit=int(((top >= threshold) & ~ok & more_rows[rows]).sum()) if rows else 0,
    )
