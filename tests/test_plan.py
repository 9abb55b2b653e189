"""Sample-size planning (evalkit.aggregate.uncertainty.power) against statsmodels' NormalIndPower (one-sample,
ratio=0: the paired comparison) and a hand computation of the measured variances."""

import math
import statistics

import pytest
from statsmodels.stats.power import NormalIndPower

from evalkit.aggregate.groups import RunSummary, aggregate
from evalkit.aggregate.uncertainty.power import measured_variances, plan, power_of, scenarios_needed
from evalkit.present.comparison_tables import plan_tables


def rs(scenario, model, value):
    return RunSummary(scenario, model, "scored", value, value, value, value, value >= 0.5, 0)


@pytest.mark.parametrize("delta, sd_w, sd_b, runs", [(0.05, 0.5, 0.3, 1), (0.1, 0.4, 0.2, 3), (0.2, 0.3, 0.0, 10)])
def test_scenarios_needed_equals_statsmodels(delta, sd_w, sd_b, runs):
    sd = math.sqrt(sd_b**2 + 2 * sd_w**2 / runs)
    ref = NormalIndPower().solve_power(effect_size=delta / sd, alpha=0.05, power=0.8, ratio=0, alternative="two-sided")
    assert scenarios_needed(delta, sd_w, sd_b, runs) == max(2, math.ceil(ref))


@pytest.mark.parametrize("scenarios", [5, 20, 120])
def test_power_equals_statsmodels(scenarios):
    sd = math.sqrt(0.2**2 + 2 * 0.4**2 / 3)
    ref = NormalIndPower().power(effect_size=0.1 / sd, nobs1=scenarios, alpha=0.05, ratio=0, alternative="two-sided")
    assert power_of(0.1, 0.4, 0.2, 3, scenarios) == pytest.approx(ref, rel=1e-9)


def test_more_runs_only_shrink_the_within_term():
    few = scenarios_needed(0.05, 0.5, 0.2, 1)
    many = scenarios_needed(0.05, 0.5, 0.2, 10**6)
    floor = scenarios_needed(0.05, 0.0, 0.2, 1)  # only ω left
    assert few > many >= floor and many - floor <= 1


def test_measured_variances_by_hand():
    a = {"s1": [0.2, 0.4, 0.6], "s2": [0.9, 0.7, 0.8], "s3": [0.1, 0.3, 0.2]}
    b = {"s1": [0.5, 0.5, 0.8], "s2": [0.9, 1.0, 0.8], "s3": [0.6, 0.4, 0.5]}
    runs = [rs(s, m, v) for m, data in (("a", a), ("b", b)) for s, vs in data.items() for v in vs]
    v = measured_variances(aggregate(runs), "score_mean")
    pooled = statistics.fmean(statistics.variance(vs) for data in (a, b) for vs in data.values())
    assert v["sd_within"] == pytest.approx(math.sqrt(pooled))  # equal runs: the pooled variance is the mean
    diffs = [statistics.fmean(b[s]) - statistics.fmean(a[s]) for s in a]
    noise = statistics.fmean(statistics.variance(a[s]) / 3 + statistics.variance(b[s]) / 3 for s in a)
    assert v["sd_between"] == pytest.approx(math.sqrt(max(0.0, statistics.variance(diffs) - noise)))
    assert statistics.variance(diffs) <= noise  # run noise explains the spread: floored, and said so
    assert v["sd_between_source"] == (
        "measured on 1 model pair(s), 3 shared scenarios at most; floored at 0, as the differences vary no more "
        "than run noise explains: too few scenarios to tell how much the difference varies across scenarios "
        "(--sd-between states it)"
    )


def test_a_spread_beyond_the_runs_noise_is_measured_and_not_called_floored():
    a = {"s1": [0.1, 0.1], "s2": [0.9, 0.9], "s3": [0.5, 0.5]}
    b = {"s1": [0.9, 0.9], "s2": [0.1, 0.1], "s3": [0.5, 0.5]}
    runs = [rs(s, m, v) for m, data in (("a", a), ("b", b)) for s, vs in data.items() for v in vs]
    v = measured_variances(aggregate(runs), "score_mean")
    assert v["sd_between"] == pytest.approx(0.8)  # differences 0.8, -0.8, 0 with no run noise
    assert v["sd_between_source"] == "measured on 1 model pair(s), 3 shared scenarios at most"


def test_one_model_assumes_omega_from_the_spread_of_its_scenario_means():
    runs = [rs(s, "a", x) for s, xs in {"s1": [0.2, 0.4], "s2": [0.9, 0.7]}.items() for x in xs]
    v = measured_variances(aggregate(runs), "score_mean")
    assert v["sd_between"] == pytest.approx(statistics.stdev([0.3, 0.8]))
    assert v["sd_between_source"].startswith("assumed: the spread")


def test_plan_states_assumptions_and_reports_current_power():
    assumed = plan(0.1)
    m = assumed["metrics"][0]
    assert m["sd_within_source"].startswith("assumed 0.5") and m["current"] is None
    runs = [
        rs(f"s{i}", model, x)
        for i in range(8)
        for model, x in (("a", 0.3 + i / 20), ("b", 0.4 + i / 20))
        for _ in range(3)
    ]
    measured = plan(0.1, aggregate(runs), sd_within=0.2)
    m = measured["metrics"][0]
    assert m["sd_within"] == 0.2 and m["sd_within_source"] == "stated: --sd-within"
    assert m["current"]["scenarios"] == 8 and m["current"]["runs_per_scenario"] == 3
    assert m["current"]["power"] == pytest.approx(power_of(0.1, 0.2, m["sd_between"], 3, 8))
    assert [r["runs_per_scenario"] for r in m["needed"]] == [1, 2, 3, 5, 10]


def test_plan_rejects_bad_arguments():
    for bad in ({"delta": 0}, {"delta": 1.5}, {"delta": 0.1, "power": 1.0}, {"delta": 0.1, "level": 0}):
        with pytest.raises(ValueError):
            plan(**bad)


def test_a_power_just_below_one_is_never_printed_as_certain():
    runs = [
        rs(f"s{i}", model, x + j / 100)
        for i in range(16)
        for model, x in (("a", 0.3 + i / 40), ("b", 0.4 + i / 40))
        for j in range(3)
    ]
    result = plan(0.1, aggregate(runs), sd_within=0.1)
    power = result["metrics"][0]["current"]["power"]
    assert 0.995 <= power < 1.0
    notes = " ".join(plan_tables(result)[0].notes)
    assert "with power > 0.99" in notes and "1.00" not in notes
