"""Standard errors and intervals of the aggregate, against a hand computation and inspect_ai's own
``stderr`` / ``ci`` metrics (with and without ``cluster``), a test-only dependency."""

import json
import math
import random
import statistics

import numpy as np
import pytest
from inspect_ai.scorer import SampleScore, Score, ci, stderr

from evalkit.aggregate.groups import RunSummary, aggregate
from evalkit.aggregate.uncertainty.bootstrap import bootstrap_curve, percentile
from evalkit.aggregate.uncertainty.standard_errors import clustered_se, mean_se, scenario_weighted_se


def rs(scenario, model, scalar, passed=None, status="scored"):
    passed = scalar >= 0.5 if passed is None and scalar is not None else passed
    return RunSummary(scenario, model, status, scalar, scalar, scalar, scalar, passed, 0)


def inspect_scores(pairs):
    """(cluster, value) pairs as inspect_ai SampleScores with the cluster in the sample metadata."""
    return [
        SampleScore(score=Score(value=v), sample_id=i, sample_metadata={"scenario": c})
        for i, (c, v) in enumerate(pairs)
    ]


# six scenarios, four runs each: a balanced design
BALANCED = {
    "s1": [0.9, 0.8, 1.0, 0.7],
    "s2": [0.2, 0.4, 0.1, 0.3],
    "s3": [0.6, 0.6, 0.5, 0.9],
    "s4": [1.0, 1.0, 0.95, 0.85],
    "s5": [0.0, 0.3, 0.45, 0.2],
    "s6": [0.55, 0.65, 0.7, 0.4],
}


def balanced_runs(model="m", data=BALANCED):
    return [rs(s, model, v) for s, vs in data.items() for v in vs]


def test_group_se_by_hand():
    g = aggregate([rs("a", "m", 1.0), rs("a", "m", 0.5, passed=False), rs("a", "m", 0.9)])["groups"][0]
    # mean 0.8, squared deviations 0.04 + 0.09 + 0.01 = 0.14, s² = 0.07, se = √(0.07/3)
    assert g["score_mean_se"] == pytest.approx(math.sqrt(0.07 / 3))
    half = 4.302652729911275 * math.sqrt(0.07 / 3)  # t(0.975, 2 df)
    assert g["score_mean_ci"] == pytest.approx([0.8 - half, 1.0])  # clipped at 1
    # passes 1, 0, 1: mean 2/3, s² = (1/9 + 4/9 + 1/9) / 2 = 1/3, se = √(1/9)
    assert g["pass_rate_se"] == pytest.approx(1 / 3)


def test_group_se_and_ci_equal_inspect_ai():
    result = aggregate(balanced_runs())
    for g in result["groups"]:
        values = BALANCED[g["scenario_id"]]
        scores = inspect_scores((g["scenario_id"], v) for v in values)
        assert g["score_mean_se"] == pytest.approx(stderr()(scores), rel=1e-12)
        bounds = ci(level=0.95)(scores)
        assert g["score_mean_ci"] == pytest.approx([max(0, bounds["lower"]), min(1, bounds["upper"])], rel=1e-9)


def test_model_se_equals_inspect_ai_clustered_stderr_when_balanced():
    result = aggregate(balanced_runs())
    m = result["models"][0]
    pooled = [(s, v) for s, vs in BALANCED.items() for v in vs]
    scores = inspect_scores(pooled)
    assert m["score_mean"] == pytest.approx(statistics.fmean(v for _, v in pooled))
    assert m["score_mean_se"] == pytest.approx(stderr(cluster="scenario")(scores), rel=1e-12)
    bounds = ci(level=0.95, cluster="scenario")(scores)
    assert m["score_mean_ci"] == pytest.approx([bounds["lower"], bounds["upper"]], rel=1e-9)
    passes = inspect_scores((s, 1.0 if v >= 0.5 else 0.0) for s, v in pooled)
    assert m["pass_rate_se"] == pytest.approx(stderr(cluster="scenario")(passes), rel=1e-12)
    # clustering matters: the unclustered standard error of the pooled runs is smaller here
    assert stderr()(scores) < m["score_mean_se"]


def test_model_se_with_unequal_runs_is_the_scenario_weighted_sandwich():
    data = {"a": [1.0, 0.9], "b": [0.2, 0.3, 0.1, 0.0, 0.4], "c": [0.6, 0.5, 0.7]}
    m = aggregate(balanced_runs(data=data))["models"][0]
    # the per-model mean weights scenarios equally: run weight w = 1/(C·n_c)
    C = len(data)
    mean = sum(sum(vs) / len(vs) for vs in data.values()) / C
    sandwich = C / (C - 1) * sum((sum((v - mean) / (C * len(vs)) for v in vs)) ** 2 for vs in data.values())
    assert m["score_mean"] == pytest.approx(mean)
    assert m["score_mean_se"] == pytest.approx(math.sqrt(sandwich), rel=1e-12)
    # ... which is inspect_ai's clustered stderr of the scenario means, one value per cluster
    means = inspect_scores((s, sum(vs) / len(vs)) for s, vs in data.items())
    assert m["score_mean_se"] == pytest.approx(stderr(cluster="scenario")(means), rel=1e-12)
    # and not the pooled-mean clustered stderr, which weights the 5-run scenario more
    pooled = inspect_scores((s, v) for s, vs in data.items() for v in vs)
    assert m["score_mean_se"] != pytest.approx(stderr(cluster="scenario")(pooled), rel=1e-3)


def test_clustered_se_function_equals_inspect_ai():
    rng = random.Random(7)
    clusters = [[rng.random() for _ in range(rng.randint(1, 6))] for _ in range(9)]
    scores = inspect_scores((i, v) for i, cl in enumerate(clusters) for v in cl)
    assert clustered_se(clusters)[0] == pytest.approx(stderr(cluster="scenario")(scores), rel=1e-12)
    assert mean_se([v for cl in clusters for v in cl])[0] == pytest.approx(stderr()(scores), rel=1e-12)


def test_one_run_gives_null_with_a_reason():
    g = aggregate([rs("a", "m", 0.7)])["groups"][0]
    for metric in ("score_mean", "pass_rate", "coverage_mean", "order_mean", "end_state_mean"):
        assert g[f"{metric}_se"] is None and g[f"{metric}_ci"] is None
        assert "needs at least 2" in g["se_reasons"][metric]
    # inspect_ai says 0 here; evalkit never reports an undefined standard error as 0
    assert stderr()(inspect_scores([("a", 0.7)])) == 0


def test_one_scenario_gives_null_model_se_with_a_reason():
    result = aggregate([rs("a", "m", v) for v in (0.2, 0.9, 0.4)])
    g, m = result["groups"][0], result["models"][0]
    assert g["score_mean_se"] is not None
    assert m["score_mean_se"] is None and m["score_mean_ci"] is None
    assert m["se_reasons"]["score_mean"] == "1 scenario: a standard error needs at least 2"
    assert m["pass_hat_k_se"] is None and m["pass_hat_k_ci"] is None
    assert "at least 2" in m["se_reasons"]["pass_hat_k"]


def test_all_runs_identical_gives_zero_variance():
    runs = [rs(s, "m", 0.5) for s in ("a", "b") for _ in range(3)]
    result = aggregate(runs)
    for g in result["groups"]:
        assert g["score_mean_se"] == 0.0 and g["score_mean_ci"] == [0.5, 0.5]
    m = result["models"][0]
    assert m["score_mean_se"] == 0.0 and m["score_mean_ci"] == [0.5, 0.5]
    assert m["pass_hat_k_ci"] == [[1.0, 1.0]] * 3
    assert stderr(cluster="scenario")(inspect_scores((r.scenario_id, 0.5) for r in runs)) == 0.0


def test_model_present_in_only_some_scenarios():
    runs = balanced_runs("full") + [rs(s, "part", v) for s in ("s1", "s2") for v in BALANCED[s]]
    models = {m["model"]: m for m in aggregate(runs)["models"]}
    part = models["part"]
    assert part["scenarios"] == 2
    means = [statistics.fmean(BALANCED[s]) for s in ("s1", "s2")]
    assert part["score_mean"] == pytest.approx(statistics.fmean(means))
    assert part["score_mean_se"] == pytest.approx(statistics.stdev(means) / math.sqrt(2))
    assert models["full"]["score_mean_se"] == pytest.approx(
        stderr(cluster="scenario")(inspect_scores((s, v) for s, vs in BALANCED.items() for v in vs))
    )


def test_scenario_without_scored_runs_does_not_count_as_a_cluster():
    runs = balanced_runs() + [rs("s7", "m", None, status="incomplete")]
    m = aggregate(runs)["models"][0]
    assert m["score_mean_se"] == pytest.approx(aggregate(balanced_runs())["models"][0]["score_mean_se"])


def test_fields_sit_beside_each_metric():
    keys = list(aggregate(balanced_runs())["models"][0])
    for metric in ("score_mean", "coverage_mean", "order_mean", "end_state_mean", "pass_rate", "pass_hat_k"):
        i = keys.index(metric)
        assert keys[i + 1 : i + 3] == [f"{metric}_se", f"{metric}_ci"]


def test_level_is_configurable():
    wide = aggregate(balanced_runs(), level=0.99)["models"][0]["score_mean_ci"]
    narrow = aggregate(balanced_runs(), level=0.8)["models"][0]["score_mean_ci"]
    assert wide[0] < narrow[0] and wide[1] > narrow[1]
    scores = inspect_scores((s, v) for s, vs in BALANCED.items() for v in vs)
    bounds = ci(level=0.8, cluster="scenario")(scores)
    assert narrow == pytest.approx([bounds["lower"], bounds["upper"]], rel=1e-9)
    with pytest.raises(ValueError):
        aggregate(balanced_runs(), level=95)


def test_pass_hat_k_bootstrap_is_deterministic_with_the_seed():
    runs = balanced_runs()
    first = json.dumps(aggregate(runs, seed=3), sort_keys=True)
    assert first == json.dumps(aggregate(runs, seed=3), sort_keys=True)
    assert first != json.dumps(aggregate(runs, seed=4), sort_keys=True)
    # one model's interval does not depend on which other models are present
    alone = aggregate(runs)["models"][0]
    together = [m for m in aggregate(runs + balanced_runs("other"))["models"] if m["model"] == "m"][0]
    assert alone["pass_hat_k_ci"] == together["pass_hat_k_ci"]


def test_bootstrap_se_of_a_mean_matches_its_analytic_value():
    rng = random.Random(1)
    values = [rng.random() for _ in range(20)]
    se, interval, reason = bootstrap_curve([[v] for v in values], 0.95, n_resamples=20000, seed=0)
    assert reason is None
    # the bootstrap SE of a mean is the plug-in sd/√C = √((C−1)/C) · the sample se
    plug_in = statistics.pstdev(values) / math.sqrt(len(values))
    assert se[0] == pytest.approx(plug_in, rel=0.03)
    assert interval[0][0] < statistics.fmean(values) < interval[0][1]


def test_percentile_equals_numpy_quantile():
    values = sorted(random.Random(2).random() for _ in range(37))
    for q in (0.0, 0.025, 0.5, 0.975, 1.0):
        assert percentile(values, q) == pytest.approx(float(np.quantile(values, q)))


def test_scenario_weighted_se_reason_names_scenarios():
    assert scenario_weighted_se([0.5]) == (None, "1 scenario: a standard error needs at least 2")


def test_bootstrap_can_be_turned_off_but_not_set_to_one_resample():
    m = aggregate(balanced_runs(), n_resamples=0)["models"][0]
    assert m["pass_hat_k_ci"] is None and m["se_reasons"]["pass_hat_k"] == "bootstrap turned off (0 resamples)"
    with pytest.raises(ValueError, match="resamples"):
        aggregate(balanced_runs(), n_resamples=1)


def test_a_wilson_interval_or_pass_hat_k_curve_given_out_is_the_callers_own():
    # both are worked out once per (successes, runs): changing one given out changes no later one
    from evalkit.aggregate.groups import pass_hat_k
    from evalkit.aggregate.uncertainty.standard_errors import wilson

    first = wilson(3, 4)
    first[0] = -1.0
    assert wilson(3, 4)[0] > 0.0
    curve = pass_hat_k(2, 3)
    curve.append(9.0)
    assert pass_hat_k(2, 3) == [2 / 3, 1 / 3, 0.0]


def test_beside_puts_each_metrics_interval_after_it_and_the_rest_of_the_fields_at_the_end():
    from evalkit.aggregate.uncertainty.intervals import beside

    row = {"model": "m", "pass_rate": 0.5, "n": 4}
    fields = {"se_reasons": {}, "pass_rate_ci": [0.1, 0.9], "pass_rate_se": 0.25}
    out = beside(row, fields)
    assert list(out) == ["model", "pass_rate", "pass_rate_se", "pass_rate_ci", "n", "se_reasons"]
    assert out["pass_rate_ci"] == [0.1, 0.9] and out["n"] == 4
    # the same shape again (its layout kept) with other values, and shapes where a key is in both
    assert beside({**row, "n": 5}, fields)["n"] == 5
    assert beside({"a": 1, "a_se": "row"}, {"a_se": "fields"}) == {"a": 1, "a_se": "row"}
    assert beside({"a": 1}, {"a": 2, "b": 3}) == {"a": 2, "b": 3}
    assert beside({}, {"x": 1}) == {"x": 1} and beside({}, {}) == {}
