"""The plain-Python Student t and normal distributions against scipy.stats (test-only dependency)."""

import pytest
from scipy import stats

from evalkit.aggregate.uncertainty.distributions import normal_two_sided_p, t_cdf, t_quantile, t_two_sided_p

DFS = [1, 2, 3, 4, 5, 7, 10, 29, 30, 100, 1000, 10000]


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_equals_scipy(df):
    for p in (0.6, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 0.025, 0.2):
        assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), abs=1e-9)


@pytest.mark.parametrize("df", DFS)
def test_t_cdf_and_two_sided_p_equal_scipy(df):
    for t in (0.0, 0.001, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 50.0, -2.0, -0.3):
        assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), abs=1e-9)
        assert t_two_sided_p(t, df) == pytest.approx(2 * stats.t.sf(abs(t), df), abs=1e-9)


def test_infinite_t_has_p_zero():
    assert t_two_sided_p(float("inf"), 3) == 0.0


def test_normal_two_sided_p_equals_scipy():
    for z in (0.0, 0.5, 1.96, 3.0, -2.5):
        assert normal_two_sided_p(z) == pytest.approx(2 * stats.norm.sf(abs(z)), abs=1e-12)


def test_t_quantile_rejects_bad_arguments():
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


def test_the_continued_fraction_answers_the_same_with_its_terms_kept_or_made_afresh():
    # a quantile's bisection keeps each (a, b)'s coefficients and extends them as deeper terms are
    # needed; whatever was kept before, every value is the same
    from evalkit.aggregate.uncertainty import distributions

    points = [(t, df) for df in (1, 2.5, 7, 199, 541.3768617341364) for t in (0.01, 0.7, 1.96, 4.0, 30.0)]
    warm = [t_cdf(t, df) for t, df in reversed(points)][::-1]
    fresh = []
    for t, df in points:
        distributions._fraction_terms.cache_clear()
        fresh.append(t_cdf(t, df))
    assert fresh == warm
    assert all(abs(v - stats.t.cdf(t, df)) < 1e-10 for v, (t, df) in zip(fresh, points))
