"""Two-rater statistics against scikit-learn / scipy, and hand-checked Gwet AC1 values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from evalkit.agreement import stats as S

TOL = 1e-9
SEEDS = [0, 1, 2, 3, 4]


def _noisy_pair(seed: int, n: int = 150, k: int = 4):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, k, n)
    y = np.where(rng.random(n) < 0.6, x, rng.integers(0, k, n))
    return x.tolist(), y.tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_kappa_matches_sklearn_on_random_data(seed):
    x, y = _noisy_pair(seed)
    labels = [0, 1, 2, 3]
    assert S.cohen_kappa(x, y, labels)["value"] == pytest.approx(cohen_kappa_score(x, y, labels=labels), abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_weighted_kappa_matches_sklearn_quadratic_on_random_data(seed):
    x, y = _noisy_pair(seed)
    labels = [0, 1, 2, 3]
    ref = cohen_kappa_score(x, y, labels=labels, weights="quadratic")
    assert S.cohen_kappa(x, y, labels, weighted=True)["value"] == pytest.approx(ref, abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_string_labels_match_sklearn(seed):
    x, y = _noisy_pair(seed, k=3)
    names = ["fail", "partial", "pass"]
    xs, ys = [names[v] for v in x], [names[v] for v in y]
    assert S.cohen_kappa(xs, ys, names)["value"] == pytest.approx(cohen_kappa_score(xs, ys, labels=names), abs=TOL)
    ref_w = cohen_kappa_score(x, y, labels=[0, 1, 2], weights="quadratic")  # ordered scale via positions
    assert S.cohen_kappa(xs, ys, names, weighted=True)["value"] == pytest.approx(ref_w, abs=TOL)


def test_weighted_kappa_uses_full_scale_when_a_class_is_never_used():
    # Ratings use 0, 1, 3, 4; 2 is on the scale but never given. Over the full scale 1 and 3 are
    # two steps apart; over the labels that occur they would be one step apart.
    x, y = _noisy_pair(7)
    remap = {0: 0, 1: 1, 2: 3, 3: 4}
    x, y = [remap[v] for v in x], [remap[v] for v in y]
    full = [0, 1, 2, 3, 4]
    ours = S.cohen_kappa(x, y, full, weighted=True)["value"]
    assert ours == pytest.approx(cohen_kappa_score(x, y, labels=full, weights="quadratic"), abs=TOL)
    only_used = cohen_kappa_score(x, y, labels=[0, 1, 3, 4], weights="quadratic")
    assert abs(ours - only_used) > 1e-3  # the unused class really changes the weights


def test_unweighted_kappa_with_a_class_never_used_matches_sklearn():
    x, y = _noisy_pair(8, k=3)
    full = [0, 1, 2, 3]
    assert S.cohen_kappa(x, y, full)["value"] == pytest.approx(cohen_kappa_score(x, y, labels=full), abs=TOL)


def test_kappa_constant_rater_is_none_with_reason_not_zero():
    x = ["pass"] * 9
    y = ["pass"] * 8 + ["fail"]
    assert cohen_kappa_score(x, y, labels=["fail", "pass"]) == 0.0  # sklearn's answer: uninformative 0
    for weighted in (False, True):
        st = S.cohen_kappa(x, y, ["fail", "pass"], weighted=weighted)
        assert st["value"] is None
        assert "first rater" in st["reason"]
    st = S.cohen_kappa(y, x, ["fail", "pass"])
    assert st["value"] is None and "second rater" in st["reason"]


def test_kappa_both_raters_constant_and_identical_is_none():
    st = S.cohen_kappa(["a"] * 5, ["a"] * 5, ["a", "b"])
    assert st == {"value": None, "reason": st["reason"]} and st["reason"]


def test_one_item():
    assert S.percent_agreement(["a"], ["a"])["value"] == 1.0  # a share needs one item
    # beyond chance needs two: AC1's formula would give (0 - .5) / .5 = -1 from one disagreement
    for st in (
        S.cohen_kappa(["a"], ["b"], ["a", "b"]),
        S.cohen_kappa(["a"], ["b"], ["a", "b"], weighted=True),
        S.spearman([1], [2]),
        S.gwet_ac1(["a"], ["b"], ["a", "b"]),
    ):
        assert st == {"value": None, "reason": S.stat.ONE_ITEM}
    assert "at least two" in S.stat.ONE_ITEM


def test_missing_ratings_drop_the_pair():
    x = ["a", None, "b", "b", float("nan"), "a"]
    y = ["a", "b", None, "b", "a", "b"]
    kept_x, kept_y = ["a", "b", "a"], ["a", "b", "b"]
    assert S.percent_agreement(x, y)["value"] == pytest.approx(2 / 3, abs=TOL)
    assert S.cohen_kappa(x, y, ["a", "b"])["value"] == pytest.approx(
        cohen_kappa_score(kept_x, kept_y, labels=["a", "b"]), abs=TOL
    )
    assert S.confusion_matrix(x, y, ["a", "b"]) == [[1, 1], [0, 1]]


def test_no_pairs_at_all_is_undefined_everywhere():
    for st in (
        S.percent_agreement([None], ["a"]),
        S.cohen_kappa([], [], ["a", "b"]),
        S.gwet_ac1([None], [None], ["a", "b"]),
        S.spearman([], []),
    ):
        assert st["value"] is None and st["reason"]


def test_value_outside_the_scale_raises_a_clear_error():
    with pytest.raises(ValueError, match="'maybe' is not on the scale"):
        S.cohen_kappa(["yes", "maybe"], ["yes", "no"], ["no", "yes"])


@pytest.mark.parametrize("seed", SEEDS)
def test_confusion_matrix_matches_sklearn(seed):
    x, y = _noisy_pair(seed)
    labels = [0, 1, 2, 3, 4]
    assert S.confusion_matrix(x, y, labels) == sk_confusion(x, y, labels=labels).tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_percent_agreement_is_share_of_equal_pairs(seed):
    x, y = _noisy_pair(seed)
    assert S.percent_agreement(x, y)["value"] == pytest.approx(np.mean(np.array(x) == np.array(y)), abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_spearman_matches_scipy(seed):
    x, y = _noisy_pair(seed)
    ref = spearmanr(x, y).statistic
    assert S.spearman(x, y)["value"] == pytest.approx(ref, abs=TOL)
    names = ["none", "low", "mid", "high"]
    assert S.spearman([names[v] for v in x], [names[v] for v in y], labels=names)["value"] == pytest.approx(
        ref, abs=TOL
    )
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=80), rng.normal(size=80)
    assert S.spearman(a, b)["value"] == pytest.approx(spearmanr(a, b).statistic, abs=TOL)


def test_spearman_constant_rater_is_none():
    st = S.spearman([2, 2, 2, 2], [1, 2, 3, 4])
    assert st["value"] is None and "same value" in st["reason"]
    with pytest.warns(Warning):  # scipy agrees it is undefined (NaN + ConstantInputWarning)
        assert np.isnan(spearmanr([2, 2, 2, 2], [1, 2, 3, 4]).statistic)


def test_gwet_ac1_hand_computed_two_labels():
    # 10 items: (yes,yes)=7, (yes,no)=1, (no,yes)=1, (no,no)=1.
    # pa = 8/10; pi_yes = (8 + 8) / 20 = 0.8, pi_no = 0.2
    # pe = (0.8*0.2 + 0.2*0.8) / (K-1 = 1) = 0.32
    # AC1 = (0.8 - 0.32) / (1 - 0.32) = 0.48 / 0.68 = 12/17   (kappa: pe = .64+.04 = .68 -> .375)
    x = ["yes"] * 7 + ["yes", "no", "no"]
    y = ["yes"] * 7 + ["no", "yes", "no"]
    assert S.gwet_ac1(x, y, ["no", "yes"])["value"] == pytest.approx(float(Fraction(12, 17)), abs=TOL)
    assert S.cohen_kappa(x, y, ["no", "yes"])["value"] == pytest.approx(0.375, abs=TOL)


def test_gwet_ac1_counts_a_class_never_used():
    # Same data on the scale (no, yes, maybe): pi_maybe = 0, K = 3
    # pe = (0.16 + 0.16 + 0) / 2 = 0.16 ; AC1 = (0.8 - 0.16) / 0.84 = 16/21
    x = ["yes"] * 7 + ["yes", "no", "no"]
    y = ["yes"] * 7 + ["no", "yes", "no"]
    assert S.gwet_ac1(x, y, ["no", "yes", "maybe"])["value"] == pytest.approx(float(Fraction(16, 21)), abs=TOL)


def test_gwet_ac1_constant_rater_is_defined():
    # x all yes (10), y 9 yes + 1 no: pa = 0.9; pi_yes = 19/20, pi_no = 1/20
    # pe = 2 * 0.95 * 0.05 / 1 = 0.095 ; AC1 = (0.9 - 0.095) / 0.905 = 161/181
    x = ["yes"] * 10
    y = ["yes"] * 9 + ["no"]
    assert S.gwet_ac1(x, y, ["no", "yes"])["value"] == pytest.approx(float(Fraction(161, 181)), abs=TOL)
    assert S.cohen_kappa(x, y, ["no", "yes"])["value"] is None


def test_gwet_ac1_scale_of_one_label_is_undefined():
    st = S.gwet_ac1(["a", "a"], ["a", "a"], ["a"])
    assert st == {"value": None, "reason": S.stat.NO_VARIATION}  # the rule every statistic shares


def test_direction_by_credit_order():
    order = ["fail", "partial", "pass"]  # least to most credit
    assert S.direction("pass", "fail", order) == "lenient"
    assert S.direction("fail", "partial", order) == "strict"
    assert S.direction("pass", "pass", order) is None
    with pytest.raises(ValueError, match="not in the order"):
        S.direction("great", "pass", order)
    counts = S.direction_counts(["pass", "fail", "pass", None], ["fail", "partial", "pass", "pass"], order)
    assert counts == {"n": 3, "agree": 1, "lenient": 1, "strict": 1}
