"""Uncertainty of evalkit's results: error bars, paired model comparisons, sample-size planning.

Plain Python (``math``, ``statistics``, ``random``): the aggregate on the score path uses it, and the
score path imports no numpy or scipy. Table of contents:

- :mod:`.distributions` — Student's t and the normal distribution.
- :mod:`.standard_errors` — the standard error of a mean, plain and clustered by scenario; t intervals.
- :mod:`.bootstrap` — the seeded percentile bootstrap over scenarios (pass^k).
- :mod:`.intervals` — the ``<metric>_se`` / ``<metric>_ci`` fields of the aggregate.
- :mod:`.multitest` — Holm and Benjamini–Hochberg adjusted p-values.
- :mod:`.paired` — paired comparison of models on the scenarios both ran.
- :mod:`.power` — scenarios × runs needed to detect a difference, and the power of the data.

The formulas, and the choices where the issue was silent, are in docs/uncertainty.md.
"""
