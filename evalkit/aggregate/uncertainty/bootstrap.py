"""Percentile bootstrap over scenarios for pass^k (seeded, plain Python).

pass^k has no closed-form standard error across scenarios of different difficulty, so evalkit
resamples whole scenarios with replacement (each resample keeps a scenario's runs together, like a
cluster bootstrap) and recomputes the per-model pass^k curve — the mean over scenarios of
C(c, k)/C(n, k). The interval is the (α/2, 1 − α/2) percentile of the resampled values, with
numpy's default "linear" interpolation; the standard error is their sample standard deviation.

The random stream is ``random.Random(seed)``, fresh for each model, so one model's interval does not
depend on which other models are in the database, and the same inputs give the same output.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


def check_resamples(n_resamples: int) -> int:
    if n_resamples != 0 and n_resamples < 2:
        raise ValueError(f"bootstrap resamples must be 0 (off) or at least 2, got {n_resamples}")
    return n_resamples


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted values, linear interpolation (numpy's default)."""
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def bootstrap_curve(
    curves: Sequence[Sequence[float]],
    level: float,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[list[float] | None, list[list[float]] | None, str | None]:
    """Bootstrap the mean of per-scenario curves (one pass^k list per scenario, equally long).

    Returns ``(se per k, [low, high] per k, None)``, or ``(None, None, reason)`` with fewer than two
    scenarios, an empty curve, or ``n_resamples`` 0 (turned off).
    """
    c = len(curves)
    if n_resamples == 0:
        return None, None, "bootstrap turned off (0 resamples)"
    if c < 2:
        return None, None, f"{c} scenario{'' if c == 1 else 's'}: a bootstrap over scenarios needs at least 2"
    k_max = len(curves[0])
    if k_max == 0:
        return None, None, "no scored runs"
    rng = random.Random(seed)
    population = range(c)
    by_k = [[curve[k] for curve in curves] for k in range(k_max)]
    columns: list[list[float]] = [[] for _ in range(k_max)]
    for _ in range(n_resamples):
        picks = rng.choices(population, k=c)
        for values, column in zip(by_k, columns):
            # plain sum: a resample's mean need not be correctly rounded, and this is the hot loop
            column.append(sum(map(values.__getitem__, picks)) / c)
    tail = (1.0 - level) / 2.0
    se, ci = [], []
    for column in columns:
        column.sort()
        se.append(statistics.stdev(column))
        ci.append([percentile(column, tail), percentile(column, 1.0 - tail)])
    return se, ci, None
