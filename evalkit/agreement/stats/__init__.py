"""Agreement and calibration statistics (numpy; scipy where scipy has the function).

Every statistic returns a :class:`Stat`, ``{"value": float | None, "reason": str | None}``. A
statistic that is undefined for the data (a constant rater, too few items, a zero denominator) has
``value`` None and a human-readable ``reason``; it is never reported as 0 and never raises. Too
little data is one rule for all of them (``stat.too_little``): no item rated twice, one item (for
anything beyond chance), every rating the same label (where the chance term needs a spread), with
the same reason wherever it applies. Bad
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

One module per topic; everything public is re-exported here (import from
``evalkit.agreement.stats``; the modules are free to move):

- ``stat``: the :class:`Stat` result, ratings as positions on a scale
- ``confusion``: confusion matrices and the statistics computed on stacks of them
- ``pairwise``: two raters (percent agreement, Cohen's kappa, Gwet's AC1, Spearman)
- ``multirater``: several raters (Krippendorff's alpha, Fleiss' kappa, Gwet's AC1, ...)
- ``calibration``: Brier score, expected calibration error, reliability bands, escalation
- ``direction``: error direction (lenient / strict)
- ``bootstrap``: percentile bootstrap intervals
"""

from __future__ import annotations

from evalkit.agreement.stats.bootstrap import bootstrap_ci, bootstrap_confusion
from evalkit.agreement.stats.calibration import (
    DEFAULT_BAND_EDGES,
    brier_multiclass,
    escalation,
    expected_calibration_error,
    reliability_bands,
)
from evalkit.agreement.stats.confusion import CONFUSION_STATS, confusion_matrix
from evalkit.agreement.stats.direction import direction, direction_counts
from evalkit.agreement.stats.multirater import (
    fleiss_kappa,
    gwet_ac1_multi,
    item_label_counts,
    krippendorff_alpha,
    pairwise_cohen_matrix,
    pooled_pairwise_agreement,
)
from evalkit.agreement.stats.pairwise import cohen_kappa, gwet_ac1, percent_agreement, spearman
from evalkit.agreement.stats.stat import Stat

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
