"""A rate's interval (pass rate and the safety rates): Wilson's score interval per group, so that
0 of n and n of n keep the width n runs allow; checked against statsmodels and by simulated
coverage."""

from __future__ import annotations

import random

import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalkit.aggregate.groups import Aggregator, RunSummary
from evalkit.aggregate.uncertainty.standard_errors import wilson


def runs(passes: list[bool], scenario: str = "s", model: str = "m", start: int = 0) -> list[RunSummary]:
    return [
        RunSummary(
            scenario_id=scenario,
            model=model,
            status="scored",
            scalar=1.0 if ok else 0.0,
            coverage=1.0,
            order=1.0,
            end_state=1.0 if ok else 0.0,
            all_passed=ok,
            dangerous=0,
            run_id=f"{scenario}-{model}-{start + i}",
            scenario_hash="h",
        )
        for i, ok in enumerate(passes)
    ]


def aggregate(summaries) -> dict:
    agg = Aggregator()
    for s in summaries:
        agg.add(s)
    return agg.result(bootstrap=False)


@pytest.mark.parametrize("k, n", [(0, 5), (3, 7), (10, 10), (1, 2), (40, 41)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_equals_statsmodels(k, n, level):
    assert wilson(k, n, level) == pytest.approx(list(proportion_confint(k, n, alpha=1 - level, method="wilson")))


def test_ten_of_ten_passes_is_not_a_zero_width_interval():
    (group,) = aggregate(runs([True] * 10))["groups"]
    low, high = group["pass_rate_ci"]
    assert group["pass_rate"] == 1.0 and high == 1.0 and 0.69 < low < 0.73  # Wilson: [0.722, 1]
    assert group["pass_rate_se"] == 0.0  # the standard error is what it is


def test_a_model_with_every_scenario_at_one_gets_the_wilson_interval_of_its_runs():
    model = aggregate(runs([True] * 3, "a") + runs([True] * 3, "b") + runs([True] * 3, "c"))["models"][0]
    assert model["pass_rate_ci"] == pytest.approx(list(proportion_confint(9, 9, method="wilson")))
    spread = aggregate(runs([True, False, True], "a") + runs([True] * 3, "b"))["models"][0]
    # scenarios that differ: a t interval. The floor is the larger: "a" has se 1/3, and "b" (3 of 3)
    # counts the rate (3 + 1)/(3 + 2) = 0.8 over its 3 runs; Welch-Satterthwaite df over both
    se_a, se_b = 1 / 3, (0.8 * 0.2 / 3) ** 0.5
    floor = (se_a**2 + se_b**2) ** 0.5 / 2
    df = (se_a**2 + se_b**2) ** 2 / (se_a**4 / 2 + se_b**4 / 2)
    assert spread["pass_rate_se"] == pytest.approx(floor)
    half = stats.t.ppf(0.975, df) * floor
    assert spread["pass_rate_ci"] == pytest.approx([spread["pass_rate"] - half, 1.0])


def test_group_rate_intervals_cover_at_their_level():
    rng = random.Random(7)
    for p in (0.5, 0.9, 0.97):
        covered = 0
        trials = 400
        for t in range(trials):
            passes = [rng.random() < p for _ in range(10)]
            (group,) = aggregate(runs(passes, start=t * 10))["groups"]
            low, high = group["pass_rate_ci"]
            covered += low <= p <= high
        assert covered / trials >= 0.90, (p, covered / trials)  # nominal 0.95; Wilson runs close to it


def test_scenarios_that_agree_by_chance_do_not_make_a_model_certain():
    """Two scenarios at 7 of 8 passes each: the scenario means agree, so the clustered standard error
    is 0 and its t interval would read [87.5 %, 87.5 %]; the within-scenario error of each mean
    remains, and the model's interval is no narrower than it."""
    model = aggregate(runs([True] * 7 + [False], "a") + runs([True] * 7 + [False], "b"))["models"][0]
    group_se = (8 / 7 * 0.875 * 0.125) ** 0.5 / 8**0.5  # sample sd of 7 ones and a zero, over sqrt(8)
    assert model["pass_rate"] == 0.875
    assert model["pass_rate_se"] == pytest.approx((2 * group_se**2) ** 0.5 / 2)
    low, high = model["pass_rate_ci"]
    # the floor's own degrees of freedom (Welch-Satterthwaite: (2 se^2)^2 / (2 se^4 / 7) = 14), not
    # the two scenarios' one, which would stretch 14 of 16 passes to [0, 1]
    assert low == pytest.approx(0.875 - stats.t.ppf(0.975, 14) * model["pass_rate_se"]) and high == 1.0
    nine = aggregate(runs([True] * 8, "a") + runs([True] * 8, "b"))["models"][0]
    assert nine["pass_rate_ci"][0] > low  # 16 of 16 is surer than 14 of 16, never the reverse


def test_the_within_scenario_floor_leaves_a_larger_clustered_error_alone():
    model = aggregate(runs([True] * 8, "a") + runs([False] * 7 + [True], "b"))["models"][0]
    scenario_means = [1.0, 0.125]
    clustered = abs(scenario_means[0] - scenario_means[1]) / 2  # C = 2: sqrt(sum of squares * 2 / 1) / 2
    assert model["pass_rate_se"] == pytest.approx(clustered)


def test_model_rate_intervals_cover_with_few_scenarios():
    """Three scenarios drawn around p, eight runs each: the per-model interval covers the mean of
    the scenarios' true rates at least at its nominal level, and is never zero-width while runs vary."""
    rng = random.Random(11)
    for p in (0.6, 0.85):
        covered, trials = 0, 300
        for t in range(trials):
            rates = [min(0.99, max(0.01, rng.gauss(p, 0.05))) for _ in range(3)]
            summaries = []
            for s, rate in enumerate(rates):
                summaries += runs([rng.random() < rate for _ in range(8)], f"s{s}", start=t * 100 + s * 10)
            model = aggregate(summaries)["models"][0]
            low, high = model["pass_rate_ci"]
            assert high > low or model["pass_rate"] in (0.0, 1.0)
            covered += low <= sum(rates) / 3 <= high
        assert covered / trials >= 0.93, (p, covered / trials)


def test_a_scenario_of_two_runs_among_many_leaves_the_model_its_clustered_degrees_of_freedom():
    """15 scenarios of 90 runs near 90 % and one of 2 runs at 1 of 2: that one's error (one degree
    of freedom) makes the floor the larger, and its Welch-Satterthwaite degrees of freedom (about
    one) stretched the interval of 1,352 runs to [0.56, 1]; the model keeps the clustered C - 1."""
    summaries = []
    for s in range(15):
        passes = 80 + s % 3  # 80 to 82 of 90
        summaries += runs([True] * passes + [False] * (90 - passes), f"s{s:02d}")
    summaries += runs([True, False], "tiny")
    model = aggregate(summaries)["models"][0]
    groups = aggregate(summaries)["groups"]
    se_c = [g["pass_rate_se"] for g in groups]
    floor = sum(e * e for e in se_c) ** 0.5 / 16
    ws = sum(e * e for e in se_c) ** 2 / sum(e**4 / (g["n_scored"] - 1) for e, g in zip(se_c, groups))
    assert ws < 2 and model["pass_rate_se"] == pytest.approx(floor)  # the case: the floor, ~1 df
    low, high = model["pass_rate_ci"]
    half = stats.t.ppf(0.975, 15) * floor
    assert (low, high) == (pytest.approx(model["pass_rate"] - half), pytest.approx(model["pass_rate"] + half))
    assert (round(low, 2), round(high, 2)) == (0.81, 0.94) and model["n_scored"] == 1352  # docs/uncertainty.md
    stretched = model["pass_rate"] - stats.t.ppf(0.975, ws) * floor
    assert round(stretched, 2) == 0.56  # what the floor's own degrees of freedom gave: [0.56, 1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "sizes, rate",
    [([40] * 7 + [2], 0.9), ([2] * 20, 0.6), ([3] * 10, 0.8)],
    ids=["one scenario of 2 runs among 8", "20 scenarios of 2 runs", "10 scenarios of 3 runs"],
)
def test_model_rate_intervals_cover_with_scenarios_of_few_runs(sizes, rate):
    """Scenarios of two or three runs, alone or among larger ones, drawn around ``rate``: the
    interval covers the mean of their true rates at least at about its nominal level."""
    rng = random.Random(5)
    covered, trials = 0, 300
    for t in range(trials):
        rates = [min(0.99, max(0.01, rng.gauss(rate, 0.05))) for _ in sizes]
        summaries = []
        for s, (n, r) in enumerate(zip(sizes, rates)):
            summaries += runs([rng.random() < r for _ in range(n)], f"s{s:02d}", start=t * 1000)
        low, high = aggregate(summaries)["models"][0]["pass_rate_ci"]
        covered += low <= sum(rates) / len(rates) <= high
    assert covered / trials >= 0.93, covered / trials


def test_a_scenario_of_two_agreeing_runs_is_not_a_certain_rate_in_the_models_error():
    """15 scenarios of 30 runs at rates between 0.8 and 0.97, and one of 2 runs whose true rate is
    0.5: when both of its runs pass (a quarter of draws) its own error is 0, and without more the
    model's interval missed the scenarios' mean rate in about one draw of ten (coverage 0.90-0.92).
    Counting that group's error at (k + 1)/(n + 2) brings coverage to its level."""
    rng = random.Random(11)
    covered, trials = 0, 300
    for t in range(trials):
        rates = [rng.uniform(0.8, 0.97) for _ in range(15)] + [0.5]
        summaries = []
        for s, (n, r) in enumerate(zip([30] * 15 + [2], rates)):
            summaries += runs([rng.random() < r for _ in range(n)], f"s{s:02d}", start=t * 1000)
        low, high = aggregate(summaries)["models"][0]["pass_rate_ci"]
        covered += low <= sum(rates) / len(rates) <= high
    assert covered / trials >= 0.95, covered / trials
