"""Standard errors and confidence intervals of means, plain and clustered (Miller 2024).

Two estimators, both returning ``(se, reason)`` — ``se`` None with a one-line reason when it is
undefined, never 0 in its place:

- :func:`mean_se`: ``s / √n`` with ``s`` the sample standard deviation (n − 1). Needs n >= 2.
  This is inspect_ai's ``stderr()``.
- :func:`clustered_se`: the standard error of the *pooled* mean of runs grouped into clusters
  (scenarios), ``√(C/(C−1) · Σ_c (Σ_i (x_ci − x̄))²) / N`` (Miller 2024, arXiv 2411.00640, appendix
  A, with the finite-cluster correction C/(C−1)). This is inspect_ai's ``stderr(cluster=...)``.
- :func:`scenario_weighted_se`: the standard error of evalkit's per-model mean, which weights every
  scenario equally (the mean of per-scenario means m_c). Writing that mean as a weighted mean of runs
  (weight 1/(C·n_c)) and applying the same cluster-robust formula gives
  ``SE² = C/(C−1) · Σ_c ((m_c − m̄)/C)² = Σ_c (m_c − m̄)² / (C(C−1))``, i.e. the standard deviation
  of the scenario means over √C. When every scenario has the same number of runs the pooled mean
  *is* the scenario-weighted mean and the two formulas coincide. Needs C >= 2 scenarios.

Intervals are Student-t: ``mean ± t(1 − α/2, df) · se`` with df = n − 1 (runs) or C − 1 (scenarios),
as inspect_ai's ``ci(method="t")``; evalkit's samples are small (3-5 runs, a few dozen scenarios),
where the normal 1.96 would be too narrow. Every metric evalkit averages lies in [0, 1], so the
interval is clipped to [0, 1].

A group's rate (a share of passes over its runs) gets the Wilson score interval instead
(:func:`wilson`): a t interval has zero width when every run passed or every run failed (10 of 10
would read [100 %, 100 %]), while Wilson's keeps the width the n runs allow ([72 %, 100 %]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

from evalkit.aggregate.uncertainty.distributions import t_quantile

DEFAULT_LEVEL = 0.95

Interval = list[float]  # [low, high]


def check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be between 0 and 1 (exclusive), got {level}")
    return level


def _sum_squares(values: Sequence[float], centre: float) -> float:
    return math.fsum((v - centre) ** 2 for v in values)


def _too_few(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}: a standard error needs at least 2"


def se_of_mean(sd: float | None, n: int, what: str = "scored run") -> tuple[float | None, str | None]:
    """``sd / √n`` from a sample standard deviation already computed over ``n`` values."""
    if n < 2 or sd is None:
        return None, _too_few(n, what)
    return sd / math.sqrt(n), None


def mean_se(values: Sequence[float], what: str = "scored run") -> tuple[float | None, str | None]:
    """The standard error of the mean of ``values`` (sample std / √n)."""
    n = len(values)
    if n < 2:
        return None, _too_few(n, what)
    mean = math.fsum(values) / n
    return math.sqrt(_sum_squares(values, mean) / (n - 1) / n), None


def clustered_se(clusters: Sequence[Sequence[float]]) -> tuple[float | None, str | None]:
    """The clustered standard error of the pooled mean of every value in ``clusters``."""
    c = len(clusters)
    if c < 2:
        return None, f"{c} scenario{'' if c == 1 else 's'}: a clustered standard error needs at least 2"
    n = sum(len(cl) for cl in clusters)
    mean = math.fsum(v for cl in clusters for v in cl) / n
    total = math.fsum(math.fsum(v - mean for v in cl) ** 2 for cl in clusters)
    return math.sqrt(total * c / (c - 1)) / n, None


def scenario_weighted_se(scenario_means: Sequence[float]) -> tuple[float | None, str | None]:
    """The clustered standard error of the mean of per-scenario means (module docstring)."""
    return mean_se(scenario_means, "scenario")


def within_error(parts: Sequence[tuple[float, int]], count: int) -> tuple[float, float | None]:
    """The standard error of a mean of ``count`` independent means from their own errors and run
    counts ``parts`` ((se, runs) each): sqrt(Σ se²)/count, and its Welch–Satterthwaite degrees of
    freedom (Σ se²)² / Σ se⁴/(runs − 1) (None when every se is 0)."""
    total = math.fsum(se * se for se, _ in parts)
    den = math.fsum(se**4 / (runs - 1) for se, runs in parts if se > 0.0 and runs > 1)
    return math.sqrt(total) / count, (total * total / den if den > 0.0 else None)


def wilson(successes: int, n: int, level: float = DEFAULT_LEVEL) -> Interval:
    """The Wilson score interval of ``successes`` of ``n`` (n >= 1), within [0, 1]."""
    return list(_wilson(successes, n, level))


# an aggregate's groups share a few (successes, runs) pairs: each interval is worked out once
@lru_cache(maxsize=4096)
def _wilson(successes: int, n: int, level: float) -> tuple[float, float]:
    z = _z(level)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the ends (no 0.9999999999999999)
    return low, 1.0 if successes == n else min(1.0, centre + half)


@lru_cache(maxsize=16)
def _z(level: float) -> float:
    """The normal quantile of a two-sided interval at ``level``."""
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)


def interval(mean: float | None, se: float | None, df: float, level: float = DEFAULT_LEVEL) -> Interval | None:
    """``mean ± t·se`` clipped to [0, 1]; None when either is undefined."""
    if mean is None or se is None:
        return None
    half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se
    return [max(0.0, mean - half), min(1.0, mean + half)]
