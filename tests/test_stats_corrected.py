"""The corrected judge rate and PPI++ against their references: Lee et al.'s plug-in interval and
allocation (the reference values their Python package generates, as the R port's parity fixtures
list them), ppi-python's PPI++ mean interval to 1e-9, judgy's Rogan–Gladen point estimate, and the
coverage of each interval by seeded simulation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evalkit.agreement.stats.corrected import (
    NotBetterThanChance,
    allocate_labels,
    classical_interval,
    corrected_rate,
    ppi_mean,
    rogan_gladen,
)

# p, q0, q1, n, m0, m1, alpha, lower, upper (llm_judge_reporting.confidence_interval)
LEE_INTERVALS = [
    (0.4, 0.7, 0.9, 1000, 200, 200, 0.05, 0.05635072484160894, 0.2627330257859588),
    (0.5, 0.8, 0.8, 500, 100, 100, 0.05, 0.3799746588561528, 0.6200253411438469),
    (0.62, 0.85, 0.93, 2000, 150, 350, 0.05, 0.5544774781496563, 0.6456327845409667),
    (0.1, 0.95, 0.6, 300, 50, 80, 0.1, 0.0, 0.17813731660303905),
    (0.9, 0.6, 0.99, 10000, 1000, 1000, 0.01, 0.8273348478706124, 0.8686713102464316),
    (0.05, 0.9, 0.9, 1000, 200, 200, 0.05, 0.0, 0.0),
    (0.97, 0.9, 0.9, 1000, 200, 200, 0.05, 1.0, 1.0),
    (0.3333, 0.777, 0.888, 123, 45, 67, 0.2, 0.012521172499902977, 0.2816724189695818),
    (0.0, 1.0, 1.0, 50, 10, 10, 0.05, 0.0, 0.09568563633822108),
    (1.0, 1.0, 1.0, 50, 10, 10, 0.05, 0.9043143636617791, 1.0),
    (0.4, 0.7, 0.9, 1000, 1, 1, 0.05, 0.0, 1.0),
    (0.55, 0.75, 0.85, 1, 30, 40, 0.5, 0.0, 0.9666883803310964),
]

# m, p, q0_pilot, q1_pilot, m_pilot, m0, m1 (llm_judge_reporting.allocate_calibration_sample)
LEE_ALLOCATIONS = [
    (200, 0.4, 0.7, 0.9, 10, 136, 64),
    (200, 0.4, 0.9, 0.9, 0, 120, 80),
    (100, 0.5, 0.8, 0.8, 5, 50, 50),
    (1000, 0.1, 0.95, 0.6, 50, 786, 214),
    (1000, 0.9, 0.6, 0.99, 50, 294, 706),
    (500, 0.0, 0.9, 0.9, 20, 20, 480),
    (500, 1e-07, 0.9, 0.9, 0, 0, 500),
    (50, 0.3, 0.7, 1.0, 0, 50, 0),
    (50, 1.0, 0.7, 0.8, 5, 5, 45),
    (300, 0.62, 0.85, 0.93, 0, 142, 158),
    (20, 0.02, 0.5, 0.99, 8, 12, 8),
    (7, 0.5, 0.6, 0.6, 1, 3, 4),
    (5, 0.5, 0.6, 0.6, 1, 3, 2),
]


@pytest.mark.parametrize("p, q0, q1, n, m0, m1, alpha, lower, upper", LEE_INTERVALS)
def test_corrected_rate_matches_lee_et_al(p, q0, q1, n, m0, m1, alpha, lower, upper):
    got = corrected_rate(p, n, q0, m0, q1, m1, level=1 - alpha)
    assert got.low == pytest.approx(lower, abs=1e-12)
    assert got.high == pytest.approx(upper, abs=1e-12)
    assert got.estimate == pytest.approx(min(1, max(0, (p + q0 - 1) / (q0 + q1 - 1))))


@pytest.mark.parametrize("m, p, q0, q1, m_pilot, m0, m1", LEE_ALLOCATIONS)
def test_allocate_labels_matches_lee_et_al(m, p, q0, q1, m_pilot, m0, m1):
    assert allocate_labels(m, p, q0, q1, m_pilot) == (m0, m1)


def test_rogan_gladen_matches_judgy_point_estimate():
    judgy = pytest.importorskip("judgy")
    rng = np.random.default_rng(7)
    truth = rng.random(300) < 0.4
    preds = np.where(truth, rng.random(300) < 0.9, rng.random(300) < 0.25).astype(int)
    unlabeled = (rng.random(2000) < 0.5).astype(int)
    theta, _, _ = judgy.estimate_success_rate(truth.astype(int), preds, unlabeled, bootstrap_iterations=10)
    q1 = preds[truth].mean()
    q0 = 1 - preds[~truth].mean()
    assert rogan_gladen(unlabeled.mean(), q0, q1) == pytest.approx(theta, abs=1e-12)


def test_judge_no_better_than_chance_is_refused():
    with pytest.raises(NotBetterThanChance, match="no better than chance"):
        corrected_rate(0.5, 100, 0.4, 50, 0.6, 50)


def test_ppi_mean_matches_ppi_python():
    ppi_py = pytest.importorskip("ppi_py")
    rng = random.Random(3)
    for _ in range(20):
        n, big_n = rng.randint(5, 60), rng.randint(20, 800)
        y = [rng.randint(0, 3) for _ in range(n)]
        yhat = [min(3, max(0, v + rng.choice([-1, 0, 0, 1]))) for v in y]
        unl = [rng.randint(0, 3) for _ in range(big_n)]
        for lam in (None, 1.0, 0.0):
            got = ppi_mean(y, yhat, unl, level=0.9, lam=lam)
            lo, hi = ppi_py.ppi_mean_ci(
                np.array(y, float), np.array(yhat, float), np.array(unl, float), alpha=0.1, lam=lam
            )
            assert got.low == pytest.approx(float(lo[0]), abs=1e-9)
            assert got.high == pytest.approx(float(hi[0]), abs=1e-9)


def test_ppi_with_lambda_zero_is_the_labels_alone():
    y, yhat, unl = [1, 0, 1, 1, 0, 1], [1, 1, 1, 0, 0, 1], [1, 0, 1] * 30
    alone = classical_interval(y)
    ppi = ppi_mean(y, yhat, unl, lam=0.0)
    assert (ppi.estimate, ppi.low, ppi.high) == pytest.approx(tuple(alone))


def _judge(truth: list[bool], q0: float, q1: float, rng: random.Random) -> list[int]:
    return [int(rng.random() < q1) if t else int(rng.random() >= q0) for t in truth]


def test_corrected_interval_covers_the_true_rate():
    """A judge right on 90 % of passes and 75 % of failures, a true rate of 0.42: the raw rate's
    interval rarely covers the truth, the corrected one about 95 % of the time."""
    rng = random.Random(11)
    theta, q0, q1, n, m0, m1, reps = 0.42, 0.75, 0.9, 200, 60, 60, 1000
    covered = raw_covered = 0
    for _ in range(reps):
        unl = _judge([rng.random() < theta for _ in range(n)], q0, q1, rng)
        p = sum(unl) / n
        q1_hat = sum(_judge([True] * m1, q0, q1, rng)) / m1
        q0_hat = 1 - sum(_judge([False] * m0, q0, q1, rng)) / m0
        try:
            est = corrected_rate(p, n, q0_hat, m0, q1_hat, m1)
        except NotBetterThanChance:
            continue
        covered += est.low <= theta <= est.high
        half = 1.96 * (p * (1 - p) / n) ** 0.5
        raw_covered += p - half <= theta <= p + half
    assert 0.93 <= covered / reps <= 0.985
    assert raw_covered / reps < 0.5


def test_ppi_interval_covers_the_true_mean():
    rng = random.Random(5)
    reps, big_n, n, covered = 1000, 600, 80, 0
    for _ in range(reps):
        truth = [rng.choice([0, 1, 2, 3]) for _ in range(big_n + n)]
        judge = [min(3, max(0, t + rng.choice([0, 0, 1, 1, -1]))) for t in truth]  # biased upward
        true_mean = 1.5
        est = ppi_mean(truth[:n], judge[:n], judge[n:])
        covered += est.low <= true_mean <= est.high
    assert 0.93 <= covered / reps <= 0.97


@pytest.mark.parametrize("k, n", [(0, 10), (10, 10), (3, 17), (50, 60)])
def test_wilson_interval_matches_statsmodels(k, n):
    from statsmodels.stats.proportion import proportion_confint

    from evalkit.agreement.stats.corrected import wilson_interval

    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    got = wilson_interval(k, n)
    assert (got.low, got.high) == pytest.approx((lo, hi), abs=1e-12)
