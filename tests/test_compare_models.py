"""Paired model comparisons against scipy.stats.ttest_rel (t) and the normal approximation (z);
Holm / Benjamini–Hochberg against statsmodels' multipletests (test-only dependencies)."""

import math
import random

import pytest
from import_helpers import among, modules_loaded_by
from scipy import stats
from statsmodels.stats.multitest import multipletests

from evalkit.aggregate.groups import RunSummary, aggregate
from evalkit.aggregate.uncertainty.multitest import adjust, benjamini_hochberg, holm
from evalkit.aggregate.uncertainty.paired import (
    NO_DIFFERENCE,
    NOT_COMPARABLE,
    WORSE,
    best_model,
    compare_models,
    paired_difference,
    significantly_worse,
)


def rs(scenario, model, scalar, passed=None):
    passed = scalar >= 0.5 if passed is None else passed
    return RunSummary(scenario, model, "scored", scalar, scalar, scalar, scalar, passed, 0)


def suite(means: dict[str, list[float]], runs=3):
    """One model per key, one scenario per list position, ``runs`` runs at exactly that value."""
    return aggregate(
        [rs(f"s{i:02d}", model, v) for model, vs in means.items() for i, v in enumerate(vs) for _ in range(runs)]
    )


def test_paired_t_equals_scipy_ttest_rel():
    rng = random.Random(5)
    a = [rng.random() for _ in range(12)]
    b = [min(1.0, x + rng.gauss(0.08, 0.1)) for x in a]
    d = paired_difference(b, a, 0.95, method="t")
    ref = stats.ttest_rel(b, a)
    assert d["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
    assert d["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert d["df"] == 11
    low, high = ref.confidence_interval(0.95)
    assert d["delta_ci"] == pytest.approx([low, high], rel=1e-9)


def test_paired_z_is_the_normal_approximation_and_more_eager():
    rng = random.Random(6)
    a = [rng.random() for _ in range(8)]
    b = [x + rng.gauss(0.1, 0.2) for x in a]
    z = paired_difference(b, a, 0.95, method="z")
    diffs = [y - x for x, y in zip(a, b)]
    se = stats.sem(diffs)
    assert z["statistic"] == pytest.approx(sum(diffs) / len(diffs) / se)
    assert z["p_value"] == pytest.approx(2 * stats.norm.sf(abs(z["statistic"])), rel=1e-9)
    # with 8 scenarios the normal approximation gives a smaller p and a narrower interval than t
    t = paired_difference(b, a, 0.95, method="t")
    assert z["p_value"] < t["p_value"]
    assert z["delta_ci"][1] - z["delta_ci"][0] < t["delta_ci"][1] - t["delta_ci"][0]


def test_compare_models_uses_per_scenario_means():
    result = suite({"base": [0.2, 0.5, 0.7, 0.9, 0.4], "cand": [0.3, 0.55, 0.8, 0.95, 0.35]})
    row = [r for r in compare_models(result, baseline="base")["rows"] if r["metric"] == "score_mean"][0]
    ref = stats.ttest_rel([0.3, 0.55, 0.8, 0.95, 0.35], [0.2, 0.5, 0.7, 0.9, 0.4])
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert row["delta"] == pytest.approx(0.05)
    assert row["scenarios"] == 5


@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(ours, theirs):
    rng = random.Random(9)
    for m in (1, 2, 5, 17):
        p = [rng.random() ** 3 for _ in range(m)] + [0.01, 0.01]  # ties too
        ref = multipletests(p, alpha=0.05, method=theirs)[1]
        assert adjust(p, ours) == pytest.approx(list(ref), rel=1e-12)
    assert holm([]) == [] and benjamini_hochberg([]) == []


def test_undefined_p_values_stay_out_of_the_family():
    assert adjust([0.01, None, 0.04], "holm") == pytest.approx([0.02, None, 0.04])
    with pytest.raises(ValueError):
        adjust([0.1], "bonferroni")


def test_disjoint_scenarios_give_a_reason_not_a_crash():
    result = aggregate([rs("a", "x", 0.9), rs("a", "x", 0.8), rs("b", "y", 0.1), rs("b", "y", 0.2)])
    rows = compare_models(result)["rows"]
    assert [r["verdict"] for r in rows] == [NOT_COMPARABLE] * 4  # score, pass rate, safe pass rate, unsafe rate
    assert all(r["reason"] == "no scenario in common" and r["p_value"] is None for r in rows)


def test_one_shared_scenario_gives_a_reason():
    result = suite({"x": [0.9], "y": [0.1]})
    row = compare_models(result)["rows"][0]
    assert row["verdict"] == NOT_COMPARABLE and "1 scenario in common" in row["reason"]
    assert row["delta"] == pytest.approx(-0.8) and row["delta_se"] is None


def test_model_present_in_only_some_scenarios_is_paired_on_the_shared_ones():
    result = suite({"full": [0.2, 0.4, 0.6, 0.8], "part": [0.3, 0.5]})
    row = compare_models(result, baseline="full")["rows"][0]
    assert row["scenarios"] == 2 and row["baseline_mean"] == pytest.approx(0.3)
    assert row["delta"] == pytest.approx(0.1)


def test_zero_variance_differences():
    same = paired_difference([0.5, 0.7], [0.5, 0.7])
    assert same["p_value"] == 1.0 and same["delta_ci"] == [0.0, 0.0]
    shifted = paired_difference([0.75, 0.5], [0.5, 0.25])
    assert shifted["p_value"] == 0.0 and shifted["statistic"] == math.inf


def test_interval_spanning_zero_says_no_detectable_difference():
    result = suite({"a": [0.2, 0.5, 0.7, 0.9], "b": [0.3, 0.4, 0.75, 0.85]})
    for row in compare_models(result, metrics=("score_mean", "pass_rate"))["rows"]:  # no unsafe run: that rate is 0 - 0
        assert row["delta_ci"][0] < 0 < row["delta_ci"][1]
        assert row["verdict"] == NO_DIFFERENCE and row["significant"] is False


def test_significantly_worse_candidate_and_correction_note():
    base = [0.9, 0.8, 0.85, 0.95, 0.7, 0.75, 0.88, 0.92]
    worse = [b - d for b, d in zip(base, [0.3, 0.25, 0.35, 0.3, 0.2, 0.28, 0.33, 0.31])]
    result = suite({"base": base, "cand": worse})
    comparison = compare_models(result, baseline="base")
    rows = significantly_worse(comparison, "cand")
    assert "score_mean" in [r["metric"] for r in rows]
    assert all(r["verdict"] == WORSE for r in rows)
    assert best_model(result) == "base"


def test_holm_can_overturn_a_marginal_difference():
    rows = [{"p_value": 0.03, "delta": 0.1}, {"p_value": 0.04, "delta": 0.1}]
    adjusted = adjust([r["p_value"] for r in rows], "holm")
    assert adjusted == pytest.approx([0.06, 0.06])
    rng = random.Random(1)
    base = [rng.random() * 0.5 for _ in range(10)]
    # a candidate a little better everywhere, with noise: significant alone, not after Holm over 4 models
    models = {"base": base}
    for name in ("c1", "c2", "c3", "c4"):
        models[name] = [min(1.0, b + 0.06 + rng.gauss(0, 0.07)) for b in base]
    comparison = compare_models(suite(models), baseline="base", correction="holm")
    noted = [r for r in comparison["rows"] if r["reason"] and "holm" in r["reason"]]
    assert noted
    for r in noted:
        assert r["p_value"] < 0.05 <= r["p_adjusted"] and r["verdict"] == NO_DIFFERENCE


def test_unknown_baseline_is_a_value_error():
    with pytest.raises(ValueError, match="unknown baseline"):
        compare_models(suite({"a": [0.1, 0.2]}), baseline="nope")


def test_uncertainty_imports_no_numpy_or_scipy():
    loaded = modules_loaded_by(
        "import evalkit.aggregate.groups, evalkit.aggregate.uncertainty.paired, evalkit.aggregate.uncertainty.power, "
        "evalkit.aggregate.uncertainty.multitest"
    )
    assert among(loaded, ("numpy", "scipy", "litellm")) == []


def test_one_failed_run_in_each_of_two_scenarios_is_not_significant():
    """7 of 8 passes against 8 of 8 in each of two scenarios: the differences agree by chance (sd 0),
    which alone would give an infinite t and p = 0; the runs' own error keeps it honest."""
    runs = []
    for s in ("a", "b"):
        runs += [rs(s, "base", 1.0 if i else 0.0, passed=bool(i)) for i in range(8)]
        runs += [rs(s, "cand", 1.0, passed=True) for _ in range(8)]
    row = next(r for r in compare_models(aggregate(runs), baseline="base")["rows"] if r["metric"] == "pass_rate")
    group_se = math.sqrt(8 / 7 * 0.875 * 0.125) / math.sqrt(8)
    assert row["delta"] == pytest.approx(0.125)
    assert row["delta_se"] == pytest.approx(math.sqrt(2 * group_se**2) / 2)
    # the floor is the larger, so its Welch-Satterthwaite df: (2 se^2)^2 / (2 se^4 / 7) = 14
    assert row["df"] == pytest.approx(14)
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(row["delta"] / row["delta_se"], 14))
    assert row["p_value"] > 0.15 and row["verdict"] == "no detectable difference"


def test_the_runs_floor_leaves_a_larger_paired_error_as_scipy_has_it():
    runs = []
    for s, cand in (("a", 1.0), ("b", 0.0), ("c", 1.0)):  # every run agrees within its group
        runs += [rs(s, "base", 0.5) for _ in range(3)] + [rs(s, "cand", cand) for _ in range(3)]
    row = next(r for r in compare_models(aggregate(runs), baseline="base")["rows"] if r["metric"] == "score_mean")
    assert row["p_value"] == pytest.approx(stats.ttest_rel([1.0, 0.0, 1.0], [0.5, 0.5, 0.5]).pvalue)


def test_a_difference_interval_never_leaves_minus_one_to_one_since_every_compared_metric_is_in_zero_one():
    # two scenarios: t with 1 degree of freedom is 12.7 standard errors wide
    comparison = compare_models(suite({"a": [1.0, 1.0], "b": [0.9, 0.1]}, runs=4))
    for row in comparison["rows"]:
        low, high = row["delta_ci"]
        assert -1.0 <= low <= row["delta"] <= high <= 1.0, row
    (score,) = [r for r in comparison["rows"] if r["metric"] == "score_mean"]
    unclipped = paired_difference([0.9, 0.1], [1.0, 1.0], 0.95)["delta_ci"]
    # t alone goes past the bound (with the runs' floor, which only widens it, further still)
    assert unclipped[0] < -1.0 and unclipped[1] > 1.0 and score["delta_ci"] == [-1.0, 1.0]


def test_a_scenario_of_two_runs_among_many_leaves_the_comparison_n_minus_1_degrees_of_freedom():
    """15 scenarios of 90 runs per model, near 90 % and a few points apart, and one of 2 runs each
    at 1 of 2: that one's runs make the floor the larger and its Welch-Satterthwaite degrees of
    freedom about one. The test keeps n - 1 = 15, and its p is never below scipy's (the floor's
    error is the larger)."""
    runs = []
    for s in range(15):
        for model, passes in (("base", 78 + s % 3), ("cand", 81 + s % 4)):
            runs += [rs(f"s{s:02d}", model, 1.0 if i < passes else 0.0, passed=i < passes) for i in range(90)]
    for model in ("base", "cand"):
        runs += [rs("tiny", model, 1.0, passed=True), rs("tiny", model, 0.0, passed=False)]
    result = aggregate(runs)
    row = next(r for r in compare_models(result, baseline="base")["rows"] if r["metric"] == "pass_rate")
    means = {(g["model"], g["scenario_id"]): g["pass_rate"] for g in result["groups"]}
    scenarios = sorted({s for _, s in means})
    ref = stats.ttest_rel([means["cand", s] for s in scenarios], [means["base", s] for s in scenarios])
    assert row["delta_se"] > stats.sem([means["cand", s] - means["base", s] for s in scenarios])  # the floor
    assert row["df"] == 15
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(row["delta"]) / row["delta_se"], 15))
    assert ref.pvalue <= row["p_value"]
