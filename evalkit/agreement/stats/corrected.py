"""A judge's rate corrected for its errors, with an interval that carries every uncertainty.

Two estimators of what a judge measures at scale, from the judge on every run plus humans on some:

- :func:`corrected_rate` — the Rogan–Gladen correction of a pass rate,
  θ̂ = (p + q₀ − 1)/(q₀ + q₁ − 1), with p the judge's pass rate on the n runs without a human label,
  q₁ its sensitivity on the m₁ labelled passes and q₀ its specificity on the m₀ labelled failures.
  Its interval is the plug-in interval of Lee et al. 2025 ("How to Correctly Report LLM-as-a-Judge
  Evaluations", arXiv 2511.21140): smoothed proportions, a bias term and a standard error that carries
  the uncertainty of p, q₀ and q₁ alike. Worked example of that paper: p 0.4 on n 1,000, q₀ 0.7 and
  q₁ 0.9 on 200 labels each: θ̂ 0.167, 95 % interval (0.0564, 0.2627).
- :func:`allocate_labels` — how to split a labelling budget m into m₀ and m₁ (the same paper's
  adaptive allocation): 200 labels with p 0.4 and a pilot of 10 at q₀ 0.7, q₁ 0.9 give (136, 64).
- :func:`ppi_mean` — prediction-powered inference for the mean of any judge dimension (PPI++, power
  tuned: Angelopoulos, Duchi and Zrnic 2023), from the judge's values on all runs and humans' on a
  uniform random sample of them. λ = 1 is plain PPI, λ = 0 the humans' mean alone.

Pure Python (the normal quantile from :class:`statistics.NormalDist`); no numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import NamedTuple

from evalkit.aggregate.uncertainty.standard_errors import wilson


class Interval(NamedTuple):
    """An estimate and its two-sided interval."""

    estimate: float
    low: float
    high: float


class PPIEstimate(NamedTuple):
    """A prediction-powered mean, its interval, and the power-tuning weight λ it used."""

    estimate: float
    low: float
    high: float
    lam: float


class NotBetterThanChance(ValueError):
    """q₀ + q₁ ≤ 1: the judge's verdicts carry no information about the truth to correct with."""


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, not {level}")
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def _proportion(value: float, name: str) -> None:
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ValueError(f"{name} must be a proportion in [0, 1], not {value}")


def _count(value: int, name: str, *, zero: bool = False) -> None:
    if value != int(value) or value < (0 if zero else 1):
        raise ValueError(f"{name} must be a {'non-negative' if zero else 'positive'} whole number, not {value}")


def rogan_gladen(p: float, q0: float, q1: float) -> float:
    """The corrected rate (p + q₀ − 1)/(q₀ + q₁ − 1), clipped to [0, 1]."""
    for value, name in ((p, "p"), (q0, "q0"), (q1, "q1")):
        _proportion(value, name)
    if q0 + q1 <= 1.0:
        raise NotBetterThanChance(f"q0 + q1 = {q0 + q1:.3f} ≤ 1: the judge is no better than chance")
    return _clip((p + q0 - 1.0) / (q0 + q1 - 1.0))


def corrected_rate(p: float, n: int, q0: float, m0: int, q1: float, m1: int, level: float = 0.95) -> Interval:
    """The Rogan–Gladen estimate of the true rate and Lee et al.'s plug-in interval.

    ``p``: the judge's pass rate over ``n`` unlabelled runs; ``q0``: its specificity over ``m0``
    labelled failures; ``q1``: its sensitivity over ``m1`` labelled passes. Raises
    :class:`NotBetterThanChance` when q₀ + q₁ ≤ 1, or when the smoothed proportions the interval uses
    sum to ≤ 1 (too few labels to tell the judge from chance), ValueError for other impossible inputs.
    """
    estimate = rogan_gladen(p, q0, q1)
    for value, name in ((n, "n"), (m0, "m0"), (m1, "m1")):
        _count(value, name)
    z = _z(level)
    z2 = z * z
    ps = (n * p + z2 / 2.0) / (n + z2)
    q0s = (m0 * q0 + 1.0) / (m0 + 2.0)
    q1s = (m1 * q1 + 1.0) / (m1 + 2.0)
    ns, m0s, m1s = n + z2, m0 + 2.0, m1 + 2.0
    denom = q0s + q1s - 1.0
    if denom <= 0.0:
        # few labels pull the smoothed q0, q1 towards 1/2: the interval's formula would divide by a
        # number ≤ 0 (a low bound above the high one), so on these labels the judge is no better than chance
        raise NotBetterThanChance(
            f"smoothed q0 + q1 = {q0s + q1s:.3f} ≤ 1 on {m0} labelled failure(s) and {m1} labelled pass(es)"
        )
    th = (ps + q0s - 1.0) / denom
    v0 = q0s * (1.0 - q0s) / m0s
    v1 = q1s * (1.0 - q1s) / m1s
    shift = 2.0 * z2 * (-(1.0 - th) * v0 + th * v1)
    se = math.sqrt(ps * (1.0 - ps) / ns + (1.0 - th) ** 2 * v0 + th**2 * v1) / denom
    return Interval(estimate, _clip(th + shift - z * se), _clip(th + shift + z * se))


def allocate_labels(m: int, p: float, q0: float, q1: float, m_pilot: int = 0, eps: float = 1e-6) -> tuple[int, int]:
    """How many of ``m`` labels to spend on true failures and on true passes, ``(m0, m1)``.

    ``p`` is the judge's pass rate; ``q0``/``q1`` its specificity and sensitivity from a pilot of
    ``m_pilot`` labels (0: taken as given). The split minimises the corrected interval's width; at
    least ``m_pilot`` labels go to each side where the budget allows.
    """
    _count(m, "m")
    _count(m_pilot, "m_pilot", zero=True)
    for value, name in ((p, "p"), (q0, "q0"), (q1, "q1")):
        _proportion(value, name)
    if p < eps:
        m1 = m - m_pilot
    else:
        if m_pilot == 0:
            kappa = (1.0 - q0) / (1.0 - min(q1, 1.0 - eps))
        else:
            kappa = (m_pilot * (1.0 - q0) + 1.0) / (m_pilot * (1.0 - q1) + 1.0)
        share = m / (1.0 + (1.0 / p - 1.0) * math.sqrt(kappa))
        m1 = max(m_pilot, round(min(m - m_pilot, share)))
    return m - m1, m1


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def ppi_mean(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabeled: Sequence[float],
    level: float = 0.95,
    lam: float | None = None,
) -> PPIEstimate:
    """The prediction-powered mean of a judge dimension and its interval (PPI++).

    ``y``: the humans' values on the labelled runs; ``yhat``: the judge's on the same runs, in the
    same order; ``yhat_unlabeled``: the judge's on the other runs. ``lam`` None tunes λ for the
    narrowest interval (clipped to [0, 1]); 1 is plain PPI; 0 the humans alone.
    """
    n, big_n = len(y), len(yhat_unlabeled)
    if n != len(yhat):
        raise ValueError(f"y and yhat must have the same length ({n} and {len(yhat)})")
    if n < 2 or big_n < 1:
        raise ValueError("ppi_mean needs at least two labelled runs and one unlabelled run")
    z = _z(level)
    if lam is None:
        y_mean, yh_mean = _mean(y), _mean(yhat)
        cov = math.fsum((a - y_mean) * (b - yh_mean) for a, b in zip(y, yhat)) / n
        every = [*yhat, *yhat_unlabeled]
        every_mean = _mean(every)
        var = math.fsum((v - every_mean) ** 2 for v in every) / (len(every) - 1)
        lam = 0.0 if var == 0.0 else _clip(2.0 * cov / (2.0 * (1.0 + n / big_n) * var))
    imputed = [lam * v for v in yhat_unlabeled]
    rectifier = [a - lam * b for a, b in zip(y, yhat)]
    imputed_mean, rectifier_mean = _mean(imputed), _mean(rectifier)
    estimate = imputed_mean + rectifier_mean
    var_imputed = math.fsum((v - imputed_mean) ** 2 for v in imputed) / big_n
    var_rectifier = math.fsum((v - rectifier_mean) ** 2 for v in rectifier) / n
    se = math.sqrt(var_imputed / big_n + var_rectifier / n)
    return PPIEstimate(estimate, estimate - z * se, estimate + z * se, lam)


def classical_interval(y: Sequence[float], level: float = 0.95) -> Interval:
    """The humans' labels alone: their mean with the normal interval (λ = 0 of :func:`ppi_mean`)."""
    n = len(y)
    if n < 2:
        raise ValueError("an interval from labels alone needs at least two labels")
    mean = _mean(y)
    se = math.sqrt(math.fsum((v - mean) ** 2 for v in y) / n / n)
    z = _z(level)
    return Interval(mean, mean - z * se, mean + z * se)


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Interval:
    """A rate from ``n`` labels alone: the share and its Wilson score interval, which keeps its width
    (and stays in [0, 1]) when every label is a pass or every label a failure."""
    if n < 1:
        raise ValueError("an interval from labels alone needs at least one label")
    _z(level)  # the level checked
    low, high = wilson(successes, n, level)
    return Interval(successes / n, low, high)
