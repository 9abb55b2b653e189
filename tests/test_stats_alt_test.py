"""The Alternative Annotator Test against a plain-Python statement of the procedure that uses
scipy's t-test and Benjamini-Yekutieli correction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import false_discovery_control, ttest_1samp, ttest_rel

from evalkit.agreement.alt_test import alt_test, benjamini_yekutieli

TOL = 1e-9


def _reference(judge, humans, epsilon, metric, q, min_items):
    """Item by item, as the paper describes it, with scipy doing the statistics."""

    def score(pred, others):
        if metric == "accuracy":
            return sum(pred == o for o in others) / len(others)
        if metric == "neg_abs_error":
            return -sum(abs(pred - o) for o in others) / len(others)
        return -math.sqrt(sum((pred - o) ** 2 for o in others) / len(others))

    raters_of = {}
    for h, anns in humans.items():
        for i in anns:
            raters_of.setdefault(i, []).append(h)
    pvals, adv, names = [], [], []
    for h in sorted(humans):
        w_j, w_h = [], []
        for i in humans[h]:
            if i not in judge or len(raters_of[i]) < 2:
                continue
            others = [humans[o][i] for o in raters_of[i] if o != h]
            js, hs = score(judge[i], others), score(humans[h][i], others)
            w_j.append(1 if js >= hs else 0)
            w_h.append(1 if hs >= js else 0)
        if len(w_j) < min_items:
            continue
        d = np.array(w_h) - np.array(w_j)
        pvals.append(ttest_1samp(d, epsilon, alternative="less").pvalue)
        adv.append(np.mean(w_j))
        names.append(h)
    adjusted = false_discovery_control(pvals, method="by")
    rejected = adjusted <= q
    return {
        "winning_rate": rejected.mean(),
        "advantage_prob": float(np.mean(adv)),
        "p": dict(zip(names, pvals)),
        "rejected": dict(zip(names, rejected)),
    }


def _dataset(seed, n_items=60, n_humans=4, judge_acc=0.85, human_acc=0.7, numeric=False):
    rng = np.random.default_rng(seed)
    k = 5 if numeric else 3
    truth = rng.integers(0, k, n_items)

    def rate(acc):
        return int(truth[i] if rng.random() < acc else rng.integers(0, k))

    humans = {}
    for j in range(n_humans):
        humans[f"h{j}"] = {}
        for i in range(n_items):
            if rng.random() < 0.9:
                humans[f"h{j}"][f"item{i:03d}"] = rate(human_acc)
    judge = {}
    for i in range(n_items):
        judge[f"item{i:03d}"] = rate(judge_acc)
    return judge, humans


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("metric", ["accuracy", "neg_abs_error", "neg_rmse"])
@pytest.mark.parametrize("epsilon", [0.1, 0.2])
def test_alt_test_matches_reference_procedure(seed, metric, epsilon):
    judge, humans = _dataset(seed, numeric=metric != "accuracy", judge_acc=0.6 + 0.1 * seed)
    ours = alt_test(judge, humans, epsilon=epsilon, metric=metric, q=0.05, min_items=30)
    ref = _reference(judge, humans, epsilon, metric, 0.05, 30)
    assert ours["winning_rate"] == pytest.approx(ref["winning_rate"], abs=TOL)
    assert ours["advantage_prob"] == pytest.approx(ref["advantage_prob"], abs=TOL)
    assert ours["passed"] == (ref["winning_rate"] >= 0.5)
    for e in ours["per_human"]:
        assert e["p_value"] == pytest.approx(ref["p"][e["human"]], abs=TOL)
        assert e["rejected"] == bool(ref["rejected"][e["human"]])


def test_alt_test_judge_that_copies_the_majority_passes_and_a_random_one_fails():
    good_judge, humans = _dataset(10, n_items=80, judge_acc=1.0, human_acc=0.7)
    assert alt_test(good_judge, humans, epsilon=0.2)["passed"] is True
    bad_judge, humans = _dataset(10, n_items=80, judge_acc=0.0, human_acc=0.9)
    res = alt_test(bad_judge, humans, epsilon=0.1)
    assert res["passed"] is False and res["winning_rate"] == 0.0


def test_paired_t_test_equivalence_with_scipy():
    # The per-human test is the paired t-test of W_human against W_judge + epsilon.
    rng = np.random.default_rng(0)
    w_h, w_j = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    one = ttest_1samp(w_h - w_j, 0.2, alternative="less").pvalue
    paired = ttest_rel(w_h, w_j + 0.2, alternative="less").pvalue
    assert one == pytest.approx(paired, abs=TOL)
    from evalkit.agreement.alt_test import _one_sided_t_less

    assert _one_sided_t_less((w_h - w_j).astype(float), 0.2) == pytest.approx(one, abs=TOL)


def _by_by_hand(p):
    """Benjamini & Yekutieli (2001), step-up: p_(i) * m * c(m) / i, monotone from the top, capped at 1."""
    m = len(p)
    c_m = sum(1.0 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: p[i])
    adjusted, running = [0.0] * m, 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m * c_m / rank)
        adjusted[i] = min(running, 1.0)
    return adjusted


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_benjamini_yekutieli_matches_the_formula(seed):
    p = np.random.default_rng(seed).random(9) ** 3
    assert benjamini_yekutieli(p) == pytest.approx(_by_by_hand(p.tolist()), abs=TOL)
    assert benjamini_yekutieli(p) == pytest.approx(false_discovery_control(p, method="by"), abs=TOL)
    assert benjamini_yekutieli([]).size == 0


def test_one_sided_t_matches_the_formula():
    from scipy.stats import t as student_t

    from evalkit.agreement.alt_test import _one_sided_t_less

    d = np.random.default_rng(4).integers(-1, 2, 40).astype(float)
    t_stat = (d.mean() - 0.2) / (d.std(ddof=1) / math.sqrt(d.size))
    assert _one_sided_t_less(d, 0.2) == pytest.approx(student_t.cdf(t_stat, df=d.size - 1), abs=TOL)
    assert _one_sided_t_less(np.full(5, 0.0), 0.2) == 0.0 and _one_sided_t_less(np.full(5, 1.0), 0.2) == 1.0
    assert _one_sided_t_less(np.full(5, 0.2), 0.2) is None and _one_sided_t_less(np.array([0.0]), 0.2) is None


def test_alt_test_needs_three_humans():
    judge, humans = _dataset(0, n_humans=2)
    res = alt_test(judge, humans)
    assert res["winning_rate"] is None and res["passed"] is None
    assert "at least three human" in res["reason"]


def test_alt_test_human_with_too_few_items_is_not_tested():
    judge, humans = _dataset(1, n_items=60)
    humans["late"] = {k: v for k, v in list(humans["h0"].items())[:10]}
    res = alt_test(judge, humans, min_items=30)
    late = next(e for e in res["per_human"] if e["human"] == "late")
    assert late["p_value"] is None and "only 10 items" in late["reason"]
    assert res["n_tested"] == 4 and res["n_humans"] == 5


def test_alt_test_no_human_with_enough_items_is_undefined():
    judge, humans = _dataset(2, n_items=12)
    res = alt_test(judge, humans)  # default min_items = 30
    assert res["winning_rate"] is None and res["advantage_prob"] is None and res["reason"]
    assert alt_test(judge, humans, min_items=5)["winning_rate"] is not None


def test_alt_test_zero_variance_uses_the_limit():
    # Judge always agrees with the other humans, every human always disagrees: d = -1 everywhere,
    # t = -inf -> p = 0 (scipy gives the same limit).
    items = [f"i{n}" for n in range(40)]
    humans = {"a": {i: "x" for i in items}, "b": {i: "x" for i in items}, "c": {i: "x" for i in items}}
    judge = {i: "x" for i in items}
    res = alt_test(judge, humans)
    # all scores tie: W_judge = W_human = 1, d = 0 < epsilon with no variance -> rejected
    assert all(e["p_value"] == 0.0 and e["rejected"] for e in res["per_human"])
    assert ttest_1samp(np.zeros(40), 0.2, alternative="less").pvalue == 0.0
    assert res["advantage_prob"] == 1.0


def test_alt_test_rejects_unknown_metric_and_non_numeric_error_metric():
    judge, humans = _dataset(0)
    with pytest.raises(ValueError, match="metric"):
        alt_test(judge, humans, metric="f1")
    with pytest.raises(ValueError, match="numeric"):
        alt_test({"a": "x"}, {"h1": {"a": "x"}, "h2": {"a": "y"}, "h3": {"a": "x"}}, metric="neg_abs_error")


# --- the metric is explicit: hand computations and the audit's choice -----------------------------


def _one_human_scores(metric):
    """Judge 3, left-out human h1 = 2, remaining humans 0 and 4 on one item."""
    judge = {f"i{k}": 3 for k in range(2)}
    humans = {
        "h1": {f"i{k}": 2 for k in range(2)},
        "h2": {f"i{k}": 0 for k in range(2)},
        "h3": {f"i{k}": 4 for k in range(2)},
    }
    res = alt_test(judge, humans, metric=metric, min_items=2)
    return next(e for e in res["per_human"] if e["human"] == "h1")


def test_alt_test_neg_rmse_by_hand():
    # judge: -sqrt(((3-0)^2 + (3-4)^2) / 2) = -sqrt(5); h1: -sqrt(((2-0)^2 + (2-4)^2) / 2) = -2
    e = _one_human_scores("neg_rmse")
    assert e["judge_score"] == pytest.approx(-math.sqrt(5)) and e["human_score"] == pytest.approx(-2.0)
    assert e["judge_advantage"] == 0.0  # -2.236 < -2: the human aligns better under RMSE


def test_alt_test_neg_abs_error_by_hand():
    # judge: -(3 + 1) / 2 = -2; h1: -(2 + 2) / 2 = -2: a tie, which counts for the judge too
    e = _one_human_scores("neg_abs_error")
    assert e["judge_score"] == pytest.approx(-2.0) and e["human_score"] == pytest.approx(-2.0)
    assert e["judge_advantage"] == 1.0


def test_alt_test_accuracy_by_hand():
    # judge 3 agrees with neither 0 nor 4; h1 = 2 neither: both 0, a tie
    e = _one_human_scores("accuracy")
    assert e["judge_score"] == 0.0 and e["human_score"] == 0.0 and e["judge_advantage"] == 1.0


def test_audit_alt_metric_auto_is_accuracy_for_labels_and_neg_rmse_for_numbers():
    from evalkit.agreement.raters import alt_metric

    assert alt_metric("auto", "nominal") == "accuracy"
    assert alt_metric("auto", "ordinal") == "neg_rmse"
    assert alt_metric("auto", "interval") == "neg_rmse"
    assert alt_metric("neg_abs_error", "ordinal") == "neg_abs_error"


def _numeric_config(tmp_path, metric=None):
    from evalkit.agreement.pairings_config import load_audit_config

    body = "[alt_test]\nmin_items = 2\n" + (f'metric = "{metric}"\n' if metric else "")
    (tmp_path / "p.toml").write_text(body)
    return load_audit_config(tmp_path / "p.toml")


def _numeric_matrix():
    # raters: judge, h1, h2, h3 over two items (the hand example above)
    return (
        ["judge", "h1", "h2", "h3"],
        {"judge": "judge", "h1": "human", "h2": "human", "h3": "human"},
        [[3, 3], [2, 2], [0, 0], [4, 4]],
    )


@pytest.mark.parametrize(
    "metric, expected", [(None, "neg_rmse"), ("neg_abs_error", "neg_abs_error"), ("accuracy", "accuracy")]
)
def test_audit_alt_test_reports_the_configured_metric(tmp_path, metric, expected):
    from evalkit.agreement.raters import alt_tests

    raters, kinds, matrix = _numeric_matrix()
    [res] = alt_tests(raters, kinds, matrix, "ordinal", _numeric_config(tmp_path, metric))
    assert res["metric"] == expected
    h1 = next(e for e in res["per_human"] if e["human"] == "h1")
    assert h1["judge_advantage"] == {"neg_rmse": 0.0, "neg_abs_error": 1.0, "accuracy": 1.0}[expected]


def test_audit_alt_test_error_metric_on_labels_is_a_reason_not_a_crash(tmp_path):
    from evalkit.agreement.raters import alt_tests

    raters, kinds, _ = _numeric_matrix()
    matrix = [["pass", "fail"], ["pass", "pass"], ["fail", "fail"], ["pass", "fail"]]
    [res] = alt_tests(raters, kinds, matrix, "nominal", _numeric_config(tmp_path, "neg_rmse"))
    assert res["passed"] is None and "numeric" in res["reason"]


def test_audit_alt_test_unknown_metric_is_a_config_error(tmp_path):
    from evalkit.errors import InputError

    with pytest.raises(InputError, match="alt_test.metric"):
        _numeric_config(tmp_path, "rmse")
