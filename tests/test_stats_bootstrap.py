"""Bootstrap intervals: the multinomial shortcut agrees with resampling items, is seeded, and
counts undefined resamples."""

from __future__ import annotations

import numpy as np
import pytest

from evalkit.agreement import stats as S

LABELS = [0, 1, 2, 3]


def _pairs(seed: int, n: int):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    y = np.where(rng.random(n) < 0.6, x, rng.integers(0, 4, n))
    return x, y


@pytest.mark.parametrize("stat", sorted(S.CONFUSION_STATS))
def test_bootstrap_confusion_estimate_is_the_reported_statistic(stat):
    x, y = _pairs(0, 300)
    point = {
        "percent_agreement": S.percent_agreement(x, y),
        "cohen_kappa": S.cohen_kappa(x, y, LABELS),
        "weighted_kappa": S.cohen_kappa(x, y, LABELS, weighted=True),
        "gwet_ac1": S.gwet_ac1(x, y, LABELS),
        "spearman": S.spearman(x, y),
    }[stat]
    out = S.bootstrap_confusion(x, y, LABELS, stat=stat, n_resamples=200, seed=1)
    assert out["estimate"] == pytest.approx(point["value"], abs=1e-12)
    assert out["low"] < out["estimate"] < out["high"]
    assert out["n_resamples"] == 200 and out["n_undefined"] == 0 and out["reason"] is None


@pytest.mark.parametrize("stat", sorted(S.CONFUSION_STATS))
def test_batch_statistics_equal_pointwise_statistics_on_resampled_matrices(stat):
    # Every multinomial draw is a confusion matrix; its statistic must equal the pointwise function
    # on the pairs that matrix describes.
    rng = np.random.default_rng(3)
    draws = rng.multinomial(40, np.full(16, 1 / 16), size=25).reshape(25, 4, 4)
    batch = S.CONFUSION_STATS[stat](draws)
    for cm, b in zip(draws, batch):
        xs = np.repeat(np.repeat(np.arange(4), 4), cm.ravel())
        ys = np.repeat(np.tile(np.arange(4), 4), cm.ravel())
        point = {
            "percent_agreement": lambda: S.percent_agreement(xs, ys),
            "cohen_kappa": lambda: S.cohen_kappa(xs, ys, LABELS),
            "weighted_kappa": lambda: S.cohen_kappa(xs, ys, LABELS, weighted=True),
            "gwet_ac1": lambda: S.gwet_ac1(xs, ys, LABELS),
            "spearman": lambda: S.spearman(xs, ys),
        }[stat]()["value"]
        assert (point is None and np.isnan(b)) or b == pytest.approx(point, abs=1e-12)


def test_multinomial_interval_agrees_with_item_resampling():
    x, y = _pairs(2, 400)
    fast = S.bootstrap_confusion(x, y, LABELS, stat="cohen_kappa", n_resamples=1000, seed=0)
    slow = S.bootstrap_ci(lambda a, b: S.cohen_kappa(a, b, LABELS), x, y, n_resamples=300, seed=0)
    assert slow["estimate"] == pytest.approx(fast["estimate"], abs=1e-12)
    # Same sampling distribution; different random streams -> Monte Carlo noise only.
    assert fast["low"] == pytest.approx(slow["low"], abs=0.025)
    assert fast["high"] == pytest.approx(slow["high"], abs=0.025)


def test_bootstrap_is_seeded_and_deterministic():
    x, y = _pairs(4, 200)
    a = S.bootstrap_confusion(x, y, LABELS, n_resamples=300, seed=7)
    b = S.bootstrap_confusion(x, y, LABELS, n_resamples=300, seed=7)
    c = S.bootstrap_confusion(x, y, LABELS, n_resamples=300, seed=8)
    assert a == b and a != c
    g1 = S.bootstrap_ci(lambda u, v: S.percent_agreement(u, v), x, y, n_resamples=50, seed=3)
    g2 = S.bootstrap_ci(lambda u, v: S.percent_agreement(u, v), x, y, n_resamples=50, seed=3)
    assert g1 == g2


def test_bootstrap_counts_undefined_resamples():
    # 19 of 20 first ratings are "a": a resample that misses the single "b" has a constant rater.
    x = ["a"] * 19 + ["b"]
    y = ["a"] * 18 + ["b", "b"]
    out = S.bootstrap_confusion(x, y, ["a", "b"], stat="cohen_kappa", n_resamples=2000, seed=0)
    # P(the one "b" row never drawn in 20 draws) = (19/20)^20 = 0.358
    assert 0.30 < out["n_undefined"] / 2000 < 0.42
    assert out["low"] is not None and out["estimate"] is not None
    generic = S.bootstrap_ci(lambda u, v: S.cohen_kappa(u, v, ["a", "b"]), x, y, n_resamples=400, seed=0)
    assert 0.27 < generic["n_undefined"] / 400 < 0.45


def test_bootstrap_all_undefined_reports_reason():
    out = S.bootstrap_confusion(["a"] * 5, ["a"] * 5, ["a", "b"], stat="cohen_kappa", n_resamples=50)
    assert out["estimate"] is None and out["low"] is None and out["high"] is None
    assert out["n_undefined"] == 50 and out["reason"]


def test_bootstrap_ci_resamples_items_of_a_rater_matrix():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 60)
    m = np.where(rng.random((3, 60)) < 0.7, truth, rng.integers(0, 3, (3, 60))).astype(object)
    out = S.bootstrap_ci(lambda mm: S.krippendorff_alpha(mm, "nominal", labels=[0, 1, 2]), m, n_resamples=100, seed=0)
    assert out["low"] < out["estimate"] < out["high"]
    assert out["estimate"] == pytest.approx(S.krippendorff_alpha(m, "nominal", labels=[0, 1, 2])["value"])


def test_bootstrap_rejects_bad_parameters():
    with pytest.raises(ValueError, match="stat must be"):
        S.bootstrap_confusion([0], [0], LABELS, stat="median")
    with pytest.raises(ValueError, match="ci"):
        S.bootstrap_confusion([0], [0], LABELS, ci=1.5)


@pytest.mark.parametrize("seed", range(12))
def test_a_bootstrap_of_counts_gives_the_interval_of_the_bootstrap_of_the_ratings(seed):
    # resampling items of a (raters x items) matrix is resampling rows of its (items x labels) counts
    from evalkit.agreement.stats.bootstrap import bootstrap_counts
    from evalkit.agreement.stats.multirater import (
        ac1_of_counts,
        alpha_of_counts,
        gwet_ac1_multi,
        item_label_counts,
        krippendorff_alpha,
        pooled_of_counts,
        pooled_pairwise_agreement,
    )

    rng = np.random.default_rng(seed)
    labels = [1, 2, 3, 4]
    matrix = rng.choice(labels, size=(3, int(rng.integers(2, 25)))).astype(object)
    matrix[0, rng.random(matrix.shape[1]) < 0.3] = None  # one rater left some items out
    cases = [
        (pooled_pairwise_agreement, (), lambda c: pooled_of_counts(c), None),
        (krippendorff_alpha, ("ordinal", labels), lambda c: alpha_of_counts(c, labels, "ordinal"), labels),
        (gwet_ac1_multi, (labels,), lambda c: ac1_of_counts(c, labels), labels),
    ]
    for stat, args, of_counts, scale in cases:
        want = S.bootstrap_ci(lambda m: stat(m, *args), matrix, n_resamples=300, seed=seed)
        counts = item_label_counts(matrix, scale)[0]
        assert bootstrap_counts(stat(matrix, *args), counts, of_counts, n_resamples=300, seed=seed) == want
