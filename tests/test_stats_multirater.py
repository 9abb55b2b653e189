"""Several raters: Krippendorff's alpha against `krippendorff`, Fleiss / AC1 against Fleiss' 1971
worked example and hand computations, pooled pairwise agreement and the pairwise kappa matrix."""

from __future__ import annotations

from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evalkit.agreement import stats as S

TOL = 1e-9
SEEDS = [0, 1, 2, 3, 4]


def _random_matrix(seed: int, raters: int = 4, items: int = 40, k: int = 4, p_missing: float = 0.3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, items)
    m = np.where(rng.random((raters, items)) < 0.6, truth, rng.integers(0, k, (raters, items))).astype(object)
    m[rng.random((raters, items)) < p_missing] = None
    return m.tolist()


def _as_float(matrix):
    return np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_matches_reference_on_random_data(seed, level):
    m = _random_matrix(seed)
    labels = [0, 1, 2, 3, 4]
    ref = krippendorff.alpha(_as_float(m), level_of_measurement=level, value_domain=labels)
    assert S.krippendorff_alpha(m, level, labels=labels)["value"] == pytest.approx(ref, abs=TOL)
    ref_default = krippendorff.alpha(_as_float(m), level_of_measurement=level)
    assert S.krippendorff_alpha(m, level)["value"] == pytest.approx(ref_default, abs=TOL)


def test_krippendorff_ordinal_string_labels_match_reference_example():
    # The reference's own worked example (Krippendorff 2011, p. 8), as strings on an ordered scale.
    scale = ["very low", "low", "mid", "high", "very high"]
    nan = None
    data = [
        ["very low", "low", "mid", "mid", "low", "very low", "high", "very low", "low", nan, nan, nan],
        ["very low", "low", "mid", "mid", "low", "low", "high", "very low", "low", "very high", nan, "mid"],
        [nan, "mid", "mid", "mid", "low", "mid", "high", "low", "low", "very high", "very low", nan],
        ["very low", "low", "mid", "mid", "low", "high", "high", "very low", "low", "very high", "very low", nan],
    ]
    as_num = np.array([[np.nan if v is None else scale.index(v) for v in row] for row in data], dtype=float)
    ref = krippendorff.alpha(as_num, level_of_measurement="ordinal", value_domain=list(range(5)))
    ours = S.krippendorff_alpha(data, "ordinal", labels=scale)["value"]
    assert ours == pytest.approx(ref, abs=TOL)
    assert round(ours, 3) == 0.815


def test_krippendorff_with_a_class_never_used():
    m = _random_matrix(11, k=3)
    labels = [0, 1, 2, 3, 4, 5]  # 3..5 never used
    for level in ("nominal", "ordinal", "interval"):
        ref = krippendorff.alpha(_as_float(m), level_of_measurement=level, value_domain=labels)
        assert S.krippendorff_alpha(m, level, labels=labels)["value"] == pytest.approx(ref, abs=TOL)


def test_krippendorff_missing_ratings_and_single_rated_items():
    m = [[1, None, 2, 3, None], [1, 2, None, 3, None], [None, None, 2, 1, 4]]
    # item 1 has one rating, item 4 has one rating: both contribute nothing
    ref = krippendorff.alpha(_as_float(m), level_of_measurement="nominal", value_domain=[1, 2, 3, 4])
    assert S.krippendorff_alpha(m, "nominal", labels=[1, 2, 3, 4])["value"] == pytest.approx(ref, abs=TOL)


def test_krippendorff_constant_ratings_is_none():
    st = S.krippendorff_alpha([["a", "a", "a"], ["a", "a", None]], "nominal", labels=["a", "b"])
    assert st["value"] is None and "same label" in st["reason"]
    with pytest.warns(RuntimeWarning):  # the reference divides 0 by 0
        assert np.isnan(
            krippendorff.alpha([[0, 0, 0], [0, 0, np.nan]], level_of_measurement="nominal", value_domain=[0, 1])
        )


def test_krippendorff_one_item():
    # the reference says 0.0 from one item; agreement beyond chance cannot be judged from one
    assert krippendorff.alpha([[1], [2]], level_of_measurement="interval") == pytest.approx(0.0, abs=TOL)
    st = S.krippendorff_alpha([[1], [2]], "interval")
    assert st == {"value": None, "reason": S.stat.ONE_ITEM}
    only_one_rating = S.krippendorff_alpha([[1], [None]], "nominal", labels=[1, 2])
    assert only_one_rating["value"] is None and "two or more raters" in only_one_rating["reason"]


def test_krippendorff_ordinal_strings_without_labels_is_a_caller_error():
    with pytest.raises(ValueError, match="ordered labels"):
        S.krippendorff_alpha([["a", "b"], ["b", "a"]], "ordinal")
    with pytest.raises(ValueError, match="level must be"):
        S.krippendorff_alpha([[1, 2], [2, 1]], "ratio-ish")


# Fleiss (1971) as reproduced in most textbooks: 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _table_to_matrix(table):
    """Counts per item -> a (raters x items) matrix: rater r gets the r-th rating of each item."""
    cols = []
    for counts in table:
        cols.append([cat + 1 for cat, c in enumerate(counts) for _ in range(c)])
    return [list(r) for r in zip(*cols)]


def test_fleiss_kappa_worked_example():
    # Category totals 20, 28, 39, 21, 32 of 140 -> P_e = (20^2+28^2+39^2+21^2+32^2)/140^2 = 4170/19600
    # sum_i sum_k n_ik (n_ik - 1) = 688 over 10 items of 14*13 = 182 pairs -> P_o = 688/1820
    # kappa = (688/1820 - 4170/19600) / (1 - 4170/19600) = 0.20993...
    po, pe = Fraction(688, 1820), Fraction(4170, 19600)
    expected = float((po - pe) / (1 - pe))
    assert round(expected, 3) == 0.210  # the published figure
    st = S.fleiss_kappa(_table_to_matrix(FLEISS_TABLE), labels=[1, 2, 3, 4, 5])
    assert st["value"] == pytest.approx(expected, abs=TOL)


def test_gwet_ac1_multi_on_fleiss_example():
    # Same table: pi_k = 20/140, 28/140, 39/140, 21/140, 32/140 (equal raters per item)
    # P_e = sum pi_k (1 - pi_k) / (5 - 1) = (1 - 4170/19600) / 4 ; AC1 = (P_o - P_e) / (1 - P_e)
    po = Fraction(688, 1820)
    pe = (1 - Fraction(4170, 19600)) / 4
    expected = float((po - pe) / (1 - pe))
    st = S.gwet_ac1_multi(_table_to_matrix(FLEISS_TABLE), labels=[1, 2, 3, 4, 5])
    assert st["value"] == pytest.approx(expected, abs=TOL)


MISSING = [["a", "a", "b", None], ["a", "b", "b", "a"], [None, "a", "b", None]]


def test_fleiss_varying_raters_hand_computed():
    # items: 1 -> a,a ; 2 -> a,b,a ; 3 -> b,b,b ; 4 -> a only (dropped: one rating)
    # P_i = 1, (2*1)/(3*2) = 1/3, 1 -> P_o = 7/9
    # p_a = mean(2/2, 2/3, 0) = 5/9 ; p_b = 4/9 -> P_e = 41/81
    # kappa = (63/81 - 41/81) / (40/81) = 22/40
    assert S.fleiss_kappa(MISSING, ["a", "b"])["value"] == pytest.approx(0.55, abs=TOL)


def test_gwet_ac1_multi_varying_raters_hand_computed():
    # P_o = 7/9 as above; P_e = (5/9 * 4/9 + 4/9 * 5/9) / (2 - 1) = 40/81
    # AC1 = (63/81 - 40/81) / (41/81) = 23/41
    assert S.gwet_ac1_multi(MISSING, ["a", "b"])["value"] == pytest.approx(23 / 41, abs=TOL)


def test_gwet_ac1_multi_two_complete_raters_equals_two_rater_ac1():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, 60).tolist()
    y = [v if rng.random() < 0.7 else int(rng.integers(0, 3)) for v in x]
    assert S.gwet_ac1_multi([x, y], [0, 1, 2, 3])["value"] == pytest.approx(
        S.gwet_ac1(x, y, [0, 1, 2, 3])["value"], abs=TOL
    )


def test_fleiss_two_complete_raters_close_to_scott_pi():
    # With two raters Fleiss' kappa is Scott's pi: pe from the pooled marginals.
    x = ["a", "a", "b", "b", "a", "b", "a", "a"]
    y = ["a", "b", "b", "b", "a", "a", "a", "a"]
    pa = sum(u == v for u, v in zip(x, y)) / 8
    p_a = (x.count("a") + y.count("a")) / 16
    pe = p_a**2 + (1 - p_a) ** 2
    assert S.fleiss_kappa([x, y], ["a", "b"])["value"] == pytest.approx((pa - pe) / (1 - pe), abs=TOL)


def test_fleiss_all_one_category_is_none():
    st = S.fleiss_kappa([["a", "a"], ["a", "a"], ["a", None]], ["a", "b"])
    assert st["value"] is None and st["reason"]


def test_multi_rater_stats_with_no_item_rated_twice_are_none():
    m = [["a", None], [None, "b"]]
    for st in (
        S.fleiss_kappa(m, ["a", "b"]),
        S.gwet_ac1_multi(m, ["a", "b"]),
        S.pooled_pairwise_agreement(m),
        S.krippendorff_alpha(m, "nominal"),
    ):
        assert st["value"] is None and "two or more raters" in st["reason"]


def test_pooled_pairwise_agreement_hand_computed():
    # agreeing pairs: item1 1 of 1, item2 1 of 3, item3 3 of 3 (item 4 has no pair) -> 5/7
    assert S.pooled_pairwise_agreement(MISSING)["value"] == pytest.approx(5 / 7, abs=TOL)


def test_pooled_pairwise_agreement_mixed_value_types():
    assert S.pooled_pairwise_agreement([[1, "n/a", 2], [1, "n/a", 3]])["value"] == pytest.approx(2 / 3, abs=TOL)


@pytest.mark.parametrize("weighted", [False, True])
def test_pairwise_cohen_matrix_matches_sklearn_on_shared_items(weighted):
    m = _random_matrix(3, raters=3)
    labels = [0, 1, 2, 3]
    out = S.pairwise_cohen_matrix(m, ["r1", "r2", "r3"], labels, weighted=weighted)
    assert out["raters"] == ["r1", "r2", "r3"] and out["values"][0][0] is None
    for pair in out["pairs"]:
        i, j = (int(name[1]) - 1 for name in pair["raters"])
        both = [(a, b) for a, b in zip(m[i], m[j]) if a is not None and b is not None]
        ref = cohen_kappa_score(
            [a for a, _ in both], [b for _, b in both], labels=labels, weights="quadratic" if weighted else None
        )
        assert pair["n"] == len(both)
        assert pair["value"] == pytest.approx(ref, abs=TOL)
        assert out["values"][i][j] == out["values"][j][i] == pair["value"]


def test_item_label_counts_drops_items_rated_once():
    counts, labels = S.item_label_counts(MISSING, ["a", "b"])
    assert labels == ["a", "b"]
    assert counts.tolist() == [[2, 0], [2, 1], [0, 3]]
