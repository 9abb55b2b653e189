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

import bisect
import itertools
import math
import random
from collections.abc import Sequence
from operator import itemgetter

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
    return bootstrap_curves([curves], level, n_resamples, seed)[0]


def bootstrap_curves(
    families: Sequence[Sequence[Sequence[float]]],
    level: float,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[tuple[list[float] | None, list[list[float]] | None, str | None]]:
    """:func:`bootstrap_curve` of each family of curves (pass^k and safe pass^k of one model, over
    the same scenarios), from one draw of the resamples: the same ones each family would draw alone
    (and every model with as many scenarios: each model's stream starts from the seed).

    Each resample's mean at k is the plain sum of the picked scenarios' values in the order drawn,
    over C, as it always was; a resample drawn again (few scenarios: most are) is summed once, and
    a k whose values equal the previous k's (a curve gone to 0) reuses its result. The standard
    error is the sample standard deviation in float arithmetic (``math.fsum``: within 1e-12 of the
    exact one, deterministic); the percentiles are exact (the sorted resampled values).
    """
    out: list[tuple[list[float] | None, list[list[float]] | None, str | None]] = []
    for f, curves in enumerate(families):
        c = len(curves)
        if f and curves == families[f - 1]:  # safe pass^k where no run was unsafe: the same curves
            out.append(out[-1])
            continue
        if n_resamples == 0:
            out.append((None, None, "bootstrap turned off (0 resamples)"))
            continue
        if c < 2:
            out.append(
                (None, None, f"{c} scenario{'' if c == 1 else 's'}: a bootstrap over scenarios needs at least 2")
            )
            continue
        k_max = len(curves[0])
        if k_max == 0:
            out.append((None, None, "no scored runs"))
            continue
        picks, weights = _draw(seed, c, n_resamples)
        se: list[float] = []
        ci: list[list[float]] = []
        tail = (1.0 - level) / 2.0
        previous: list[float] | None = None
        for k in range(k_max):
            values = [curve[k] for curve in curves]
            if values != previous:
                means = [sum(pick(values)) / c for pick in picks]
                stats = _weighted_stats(means, weights, n_resamples, tail)
                previous = values
            se.append(stats[0])
            ci.append([stats[1], stats[2]])
        out.append((se, ci, None))
    return out


_DRAWS: dict[tuple[int, int, int], tuple[list[itemgetter], list[int]]] = {}
_DRAWS_KEPT = 4


def _draw(seed: int, c: int, n_resamples: int) -> tuple[list[itemgetter], list[int]]:
    """The resamples of ``random.Random(seed)`` over ``c`` >= 2 scenarios: the distinct picks, in
    the order first drawn, each as the getter of its scenarios' values in the order drawn (a tuple:
    a pick holds c >= 2 of them), and how many resamples drew each. The same for every model with
    as many scenarios (each model's stream starts from the seed), so drawn once."""
    key = (seed, c, n_resamples)
    drawn = _DRAWS.get(key)
    if drawn is None:
        rng = random.Random(seed)
        population = range(c)
        distinct: dict[tuple[int, ...], int] = {}
        index = [distinct.setdefault(tuple(rng.choices(population, k=c)), len(distinct)) for _ in range(n_resamples)]
        if len(_DRAWS) >= _DRAWS_KEPT:
            _DRAWS.pop(next(iter(_DRAWS)))
        weights = [0] * len(distinct)
        for i in index:
            weights[i] += 1
        drawn = _DRAWS[key] = ([itemgetter(*pick) for pick in distinct], weights)
    return drawn


def _weighted_stats(values: list[float], weights: list[int], n: int, tail: float) -> tuple[float, float, float]:
    """Sample standard deviation and the ``tail`` and ``1 - tail`` percentiles of the multiset of
    ``values`` each repeated ``weights`` times (``n`` in all), as over the list written out."""
    order = sorted(range(len(values)), key=values.__getitem__)
    if values[order[0]] == values[order[-1]]:
        sd = 0.0  # one value: exactly 0, as the exact computation gives
    else:
        mean = math.fsum(v * w for v, w in zip(values, weights)) / n
        sd = math.sqrt(math.fsum(w * (v - mean) ** 2 for v, w in zip(values, weights)) / (n - 1))
    sorted_values = [values[i] for i in order]
    ends = list(itertools.accumulate(weights[i] for i in order))  # position after each value, sorted

    def at(position: int) -> float:
        return sorted_values[bisect.bisect_right(ends, position)]

    def quantile(q: float) -> float:  # percentile() over the written-out list
        h = (n - 1) * q
        lo = math.floor(h)
        hi = min(lo + 1, n - 1)
        low = at(lo)
        return low + (h - lo) * (at(hi) - low)

    return sd, quantile(tail), quantile(1.0 - tail)
