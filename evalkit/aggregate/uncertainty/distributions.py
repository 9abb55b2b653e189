"""Student's t and the normal distribution in plain Python (the score path imports no scipy).

``t_cdf`` goes through the regularized incomplete beta function, for t >= 0
``F(t) = 1 - I_x(df/2, 1/2) / 2`` with ``x = df / (df + t²)``; ``I`` is evaluated by Lentz's
continued fraction (Numerical Recipes §6.4). ``t_quantile`` inverts it by bisection. Both agree
with ``scipy.stats.t`` to 1e-10 (tests/test_uncertainty_distributions.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_NORMAL = NormalDist()
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    qab, qap = a + b, a + 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    terms = _fraction_terms(a, b)
    tiny = _TINY
    for m in range(1, 500):
        if m > len(terms):
            _more_terms(a, b, terms)
        odd_num, odd_den, even_num, even_den = terms[m - 1]
        # the m-th pair of steps of Lentz's method, one coefficient each
        aa = odd_num * x / odd_den
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = even_num * x / even_den
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-16:
            break
    return h


@lru_cache(maxsize=64)
def _fraction_terms(a: float, b: float) -> list[tuple[float, float, float, float]]:
    """The parts of the continued fraction's m-th pair of coefficients that do not depend on x
    (a quantile's bisection evaluates it at many x for one a, b): m(b − m) over
    (a − 1 + 2m)(a + 2m), and −(a + m)(a + b + m) over (a + 2m)(a + 1 + 2m), as many as used."""
    return []


def _more_terms(a: float, b: float, terms: list[tuple[float, float, float, float]]) -> None:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    for m in range(len(terms) + 1, len(terms) + 17):
        m2 = 2 * m
        terms.append((m * (b - m), (qam + m2) * (a + m2), -(a + m) * (qab + m), (a + m2) * (qap + m2)))


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    # the fraction converges fast only below (a+1)/(a+b+2); above it use I_x(a,b) = 1 - I_{1-x}(b,a)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (infinite t gives 0)."""
    if math.isinf(t):
        return 0.0
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    if t * t < df:  # near the centre 1 - tail would cancel: integrate from 0 instead
        half = 0.5 * regularized_beta(0.5, df / 2.0, t * t / (df + t * t))
        return 0.5 + half if t >= 0 else 0.5 - half
    tail = t_two_sided_p(t, df) / 2.0
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` > 0 degrees of freedom, 0 < p < 1."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    hi = 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    lo = 0.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def normal_quantile(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def normal_cdf(x: float) -> float:
    return _NORMAL.cdf(x)


def normal_two_sided_p(z: float) -> float:
    return 2.0 * _NORMAL.cdf(-abs(z))
