"""Every agreement statistic the audit reports, declared once.

A :class:`Statistic` names its key (in the audit JSON and the csv's ``statistic`` column), its
table label, how it is computed on judge ↔ mechanical pairs (``pairs``), on a dimension's raters
(``raters``) or both, whether pairings get a bootstrap interval of it, and where the tidy csv lists
it. The comparison engine (:mod:`evalkit.agreement.label_comparison`), the pairing and rater entries of the
audit, its tables (:mod:`evalkit.agreement.view`) and its csv (:mod:`evalkit.agreement.audit_output`) all
read :data:`STATISTICS` when they run; none lists a statistic of its own.

To add one: write its function in a topic module of :mod:`evalkit.agreement.stats` (it returns a
:class:`~evalkit.agreement.stats.Stat`), then add one line to :data:`STATISTICS`. Its place in that
tuple is its place in the JSON and in the tables.

A statistic that does not apply to some data (weighted kappa on a nominal scale) returns
:func:`not_applicable`: a null value whose reason starts with :data:`NOT_APPLICABLE`, which the
renderers show quietly, and which is never bootstrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from evalkit.agreement.stats.confusion import CONFUSION_STATS, _confusion
from evalkit.agreement.stats.multirater import (
    _as_matrix,
    ac1_of_counts,
    alpha_of_confusion,
    alpha_of_counts,
    fleiss_of_counts,
    pairwise_cohen_matrix,
    pooled_of_counts,
    position_counts,
)
from evalkit.agreement.stats.pairwise import cohen_kappa, of_confusion, percent_agreement, spearman
from evalkit.agreement.stats.stat import Stat, _codes, _missing_mask

NOT_APPLICABLE = "not applicable: "
ORDERED = ("ordinal", "interval")


def not_applicable(reason: str) -> Stat:
    return {"value": None, "reason": NOT_APPLICABLE + reason}


def applies(stat: Any) -> bool:
    """False for a :func:`not_applicable` result."""
    return not (isinstance(stat, dict) and str(stat.get("reason") or "").startswith(NOT_APPLICABLE))


@dataclass(frozen=True)
class Pairs:
    """Judge ↔ mechanical labels (or any predictions against references) as positions on ``labels``,
    valid rows only."""

    x: np.ndarray  # predictions (the judge)
    y: np.ndarray  # references (the mechanical label)
    labels: list[Any]
    level: str

    @property
    def codes(self) -> list[int]:
        return list(range(len(self.labels)))

    @property
    def ordered(self) -> bool:
        return self.level in ORDERED

    @cached_property
    def confusion(self) -> np.ndarray:
        """The (k x k) confusion matrix, judge rows (what every statistic of the matrix reads)."""
        return _confusion(self.x, self.y, len(self.labels))


class Raters:
    """A dimension's ratings: one row per rater (``raters``), one column per item; values on
    ``labels``. ``matrix`` holds the values (None where the rater did not rate the item),
    ``positions`` each value's position on ``labels`` (-1 there); give either (the other is worked
    out when read). The statistics read the positions: a dimension has 10^5 items at scale."""

    def __init__(
        self,
        matrix: list[list[Any]] | None,
        raters: list[str],
        labels: list[Any],
        level: str,
        positions: np.ndarray | None = None,
    ) -> None:
        if matrix is None and positions is None:
            raise ValueError("Raters needs a matrix or its positions")
        self.raters, self.labels, self.level = raters, labels, level
        if matrix is not None:
            self.__dict__["matrix"] = matrix
        if positions is not None:
            self.__dict__["positions"] = positions

    @property
    def ordered(self) -> bool:
        return self.level in ORDERED

    @property
    def codes(self) -> list[int]:
        return list(range(len(self.labels)))

    @cached_property
    def matrix(self) -> list[list[Any]]:
        held = np.empty(len(self.labels) + 1, dtype=object)  # the last one (position -1): None
        held[:-1] = self.labels
        return held[self.positions].tolist()

    @cached_property
    def positions(self) -> np.ndarray:
        arr = _as_matrix(self.matrix)
        rated = ~_missing_mask(arr.ravel()).reshape(arr.shape)
        out = np.full(arr.shape, -1, dtype=np.int64)
        out[rated] = _codes(arr[rated], self.labels)
        return out

    @cached_property
    def counts(self) -> np.ndarray:
        """(items x labels) counts of the items two or more raters rated (``item_label_counts``)."""
        return position_counts(self.positions, len(self.labels))

    def coded_matrix(self) -> np.ndarray:
        """The positions as floats, NaN where there is no rating (what the matrix statistics read
        as missing), on the scale :attr:`codes`."""
        return np.where(self.positions >= 0, self.positions, np.nan)

    def two(self) -> tuple[list[Any], list[Any]] | None:
        """The items both raters rated, when there are exactly two raters."""
        if len(self.raters) != 2:
            return None
        both = [(a, b) for a, b in zip(*self.matrix) if a is not None and b is not None]
        return [a for a, _ in both], [b for _, b in both]

    def two_positions(self) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`two` as positions on ``labels``."""
        if len(self.raters) != 2:
            return None
        a, b = self.positions
        both = (a >= 0) & (b >= 0)
        return a[both], b[both]


@dataclass(frozen=True)
class Statistic:
    """One statistic: ``name`` (JSON key, csv statistic), ``label`` (table column; ``raters_label``
    where the raters table says it otherwise), ``pairs`` / ``raters`` (how it is computed there;
    None: it is not reported there), ``bootstrapped`` (pairings get a percentile interval: exact
    multinomial resampling for a confusion-matrix statistic, resampled pairs otherwise),
    ``csv_order`` (its place among the statistics of the tidy csv, ``raters_csv_order`` where the
    raters' rows place it otherwise; None: not in the csv) and ``table`` (a column of the tables)."""

    name: str
    label: str
    pairs: Callable[[Pairs], Stat] | None = None
    raters: Callable[[Raters], Any] | None = None
    bootstrapped: bool = False
    csv_order: int | None = None
    raters_csv_order: int | None = None
    raters_label: str | None = None
    table: bool = True


def _cohen_raters(r: Raters, weighted: bool) -> Stat:
    pair = r.two_positions()
    if pair is None:
        return not_applicable(f"more than two raters, see pairwise_{'weighted' if weighted else 'cohen'}_kappa")
    if weighted and not r.ordered:
        return not_applicable("nominal dimension")
    return cohen_kappa(*pair, r.codes, weighted=weighted)


def _ordered_pairs(p: Pairs, name: str, stat: Callable[[Pairs], Stat]) -> Stat:
    return stat(p) if p.ordered else not_applicable(f"{name} needs an ordinal or interval pairing")


STATISTICS: tuple[Statistic, ...] = (
    Statistic(
        "percent_agreement",
        "agreement",
        raters_label="pairwise agreement",
        bootstrapped=True,
        csv_order=10,
        pairs=lambda p: percent_agreement(p.x, p.y),
        raters=lambda r: pooled_of_counts(r.counts),
    ),
    Statistic(
        "cohen_kappa",
        "Cohen \u03ba",
        bootstrapped=True,
        csv_order=20,
        pairs=lambda p: of_confusion(p.confusion, "cohen_kappa"),
        raters=lambda r: _cohen_raters(r, weighted=False),
    ),
    Statistic(
        "weighted_kappa",
        "weighted \u03ba",
        bootstrapped=True,
        csv_order=30,
        raters_csv_order=70,
        pairs=lambda p: _ordered_pairs(p, "weighted kappa", lambda p: of_confusion(p.confusion, "weighted_kappa")),
        raters=lambda r: _cohen_raters(r, weighted=True),
    ),
    Statistic(
        "pairwise_cohen_kappa",
        "pairwise Cohen \u03ba",
        table=False,
        raters=lambda r: pairwise_cohen_matrix(r.coded_matrix(), r.raters, r.codes),
    ),
    Statistic(
        "pairwise_weighted_kappa",
        "pairwise weighted \u03ba",
        table=False,
        raters=lambda r: (
            pairwise_cohen_matrix(r.coded_matrix(), r.raters, r.codes, weighted=True)
            if r.ordered
            else not_applicable("nominal dimension")
        ),
    ),
    Statistic("fleiss_kappa", "Fleiss \u03ba", csv_order=35, raters=lambda r: fleiss_of_counts(r.counts)),
    Statistic(
        "krippendorff_alpha",
        "Krippendorff \u03b1",
        csv_order=40,
        pairs=lambda p: alpha_of_confusion(p.confusion, p.labels, p.level),
        raters=lambda r: alpha_of_counts(r.counts, r.labels, r.level),
    ),
    Statistic(
        "gwet_ac1",
        "Gwet AC1",
        bootstrapped=True,
        csv_order=50,
        pairs=lambda p: of_confusion(p.confusion, "gwet_ac1"),
        raters=lambda r: ac1_of_counts(r.counts, r.labels),
    ),
    Statistic(
        "spearman",
        "Spearman",
        csv_order=60,
        pairs=lambda p: _ordered_pairs(p, "Spearman", lambda p: spearman(p.x, p.y, p.codes)),
    ),
)


def for_pairs() -> list[Statistic]:
    """The statistics of a judge ↔ mechanical pairing, in report order."""
    return [s for s in STATISTICS if s.pairs is not None]


def for_raters() -> list[Statistic]:
    """The statistics of a dimension's raters, in report order."""
    return [s for s in STATISTICS if s.raters is not None]


def columns(kind: str) -> list[tuple[str, str]]:
    """(key, label) of the table columns of ``kind`` (``"pairs"`` or ``"raters"``), in report order."""
    if kind == "pairs":
        return [(s.name, s.label) for s in for_pairs() if s.table]
    return [(s.name, s.raters_label or s.label) for s in for_raters() if s.table]


def csv_names(kind: str) -> list[str]:
    """The keys the tidy csv lists for ``kind`` (``"pairs"`` or ``"raters"``), in its order."""
    if kind == "pairs":
        ranked = [(s.csv_order, s.name) for s in for_pairs() if s.csv_order is not None]
    else:
        ranked = [
            (s.raters_csv_order if s.raters_csv_order is not None else s.csv_order, s.name)
            for s in for_raters()
            if s.csv_order is not None
        ]
    return [name for _, name in sorted(ranked, key=lambda r: r[0])]


def pair_stats(p: Pairs) -> dict[str, Stat]:
    return {s.name: s.pairs(p) for s in for_pairs()}


def pair_intervals(
    p: Pairs, stats: dict[str, Stat], n_resamples: int, seed: int, ci: float, clusters: Any = None
) -> dict[str, dict[str, Any]]:
    """Bootstrap intervals of the bootstrapped statistics that apply to ``p``; ``clusters`` (one key
    per pair) resamples the keys, each with all its pairs (:func:`bootstrap_confusion`)."""
    from evalkit.agreement.stats.bootstrap import bootstrap_ci, bootstrap_confusion

    out = {}
    for s in for_pairs():
        if not s.bootstrapped or not applies(stats[s.name]):
            continue
        if s.name in CONFUSION_STATS:
            out[s.name] = bootstrap_confusion(
                p.x, p.y, p.codes, stat=s.name, n_resamples=n_resamples, seed=seed, ci=ci, clusters=clusters
            )
        else:
            out[s.name] = bootstrap_ci(
                lambda x, y, fn=s.pairs: fn(Pairs(x.astype(np.int64), y.astype(np.int64), p.labels, p.level)),
                p.x,
                p.y,
                n_resamples=n_resamples,
                seed=seed,
                ci=ci,
                clusters=clusters,
            )
    return out
