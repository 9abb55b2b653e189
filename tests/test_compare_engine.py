"""The comparison engine (evalkit.agreement.label_comparison): predictions against references on a scale.
Checked against scikit-learn and against both of its users (audit pairings, verdict files)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, cohen_kappa_score, confusion_matrix

from evalkit.agreement.label_comparison import compare

LABELS = ["deny", "confirm", "allow"]  # least credit first


def test_counts_and_confusion_orientation():
    pred = [0, 1, 2, 2, 1, 0]
    ref = [0, 1, 1, 0, 2, 0]
    c = compare(pred, ref, LABELS)
    assert (c.n, c.n_valid, c.agree, c.invalid) == (6, 6, 3, 0)
    assert c.confusion == confusion_matrix(pred, ref, labels=[0, 1, 2]).tolist()  # prediction rows
    assert c.more_credit == 2 and c.less_credit == 1
    assert c.cohen_kappa["value"] == pytest.approx(cohen_kappa_score(pred, ref))
    assert c.weighted_kappa is None and c.spearman is None  # nominal: no order


def test_more_credit_lower_flips_the_direction_only():
    pred, ref = [0, 2, 2, 1], [1, 1, 0, 1]
    up = compare(pred, ref, LABELS)
    down = compare(pred, ref, LABELS, more_credit="lower")
    assert (up.more_credit, up.less_credit) == (down.less_credit, down.more_credit) == (2, 1)
    assert up.cohen_kappa == down.cohen_kappa and up.confusion == down.confusion


def test_prediction_off_the_scale_is_a_disagreement_without_direction():
    c = compare([0, -1, 2, -1], [0, 2, 2, 0], LABELS)
    assert (c.n, c.n_valid, c.invalid, c.agree) == (4, 2, 2, 2)
    assert c.more_credit == c.less_credit == 0
    assert sum(map(sum, c.confusion)) == 2  # off-scale rows are not in the matrix
    assert c.percent_agreement["value"] == 1.0  # over the valid rows
    assert not c.more_credit_rows.any() and c.correct.tolist() == [True, False, True, False]


def test_ordinal_level_adds_weighted_kappa_and_spearman():
    rng = np.random.default_rng(1)
    pred, ref = rng.integers(0, 4, 60), rng.integers(0, 4, 60)
    c = compare(pred, ref, [0, 1, 2, 3], level="ordinal")
    assert c.weighted_kappa["value"] == pytest.approx(cohen_kappa_score(pred, ref, weights="quadratic"))
    assert c.spearman["value"] is not None


def test_calibration_matches_scikit_learn_and_counts_confident_misses():
    # two labels, forecasts as [p(fail), p(pass)]
    ref = [1, 0, 1, 1, 0]
    pred = [1, 1, 0, 1, 0]
    p_pass = [0.9, 0.95, 0.4, 0.7, 0.2]
    probs = [[1 - p, p] for p in p_pass]
    c = compare(pred, ref, ["fail", "pass"], probabilities=probs + [], threshold=0.8)
    cal = c.calibration
    assert cal.brier["value"] == pytest.approx(2 * brier_score_loss(ref, p_pass))
    assert cal.top.tolist() == pytest.approx([0.9, 0.95, 0.6, 0.7, 0.8])
    assert cal.escalation == {"threshold": 0.8, "n": 5, "escalated": 2, "misses": 2, "misses_caught": 1}
    # row 1 is wrong, granted more credit (pass for fail) and was not escalated (0.95 >= 0.8)
    assert cal.uncaught_more_credit == 1


def test_rows_without_a_forecast_are_left_out_of_calibration_only():
    c = compare(
        [1, 0, 1],
        [1, 1, 1],
        ["fail", "pass"],
        probabilities=[[0.1, 0.9], None, [0.3, 0.7]],
        confidences=[0.9, None, 0.55],
    )
    assert c.calibration.rows == [0, 2] and c.calibration.top.tolist() == [0.9, 0.55]
    assert c.n == 3 and c.agree == 2


def test_slices_are_the_same_comparison_on_each_key():
    rng = np.random.default_rng(2)
    pred, ref = rng.integers(-1, 3, 40), rng.integers(0, 3, 40)
    keys = [f"s{i % 3}" for i in range(40)]
    c = compare(pred, ref, LABELS, slices=keys)
    assert list(c.slices) == ["s0", "s1", "s2"]
    for key, sub in c.slices.items():
        idx = [i for i, k in enumerate(keys) if k == key]
        alone = compare(pred[idx], ref[idx], LABELS)
        assert (sub.n, sub.agree, sub.more_credit, sub.less_credit, sub.confusion) == (
            alone.n,
            alone.agree,
            alone.more_credit,
            alone.less_credit,
            alone.confusion,
        )
        assert sub.cohen_kappa == alone.cohen_kappa


def test_bootstrap_intervals_follow_the_level():
    pred, ref = [0, 1, 1, 0, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1, 1, 1]
    nominal = compare(pred, ref, [0, 1], bootstrap={"n_resamples": 50, "seed": 1, "ci": 0.9})
    assert list(nominal.intervals) == ["percent_agreement", "cohen_kappa", "gwet_ac1"]
    ordinal = compare(pred, ref, [0, 1], level="ordinal", bootstrap={"n_resamples": 50, "seed": 1, "ci": 0.9})
    assert "weighted_kappa" in ordinal.intervals
    assert nominal.intervals["cohen_kappa"]["estimate"] == nominal.cohen_kappa["value"]


@pytest.mark.parametrize(
    "pred, ref, why",
    [
        ([0, 1], [0], "differ in length"),
        ([3], [0], "positions must lie"),
        ([0], [-1], "positions must lie"),
    ],
)
def test_bad_positions_are_caller_errors(pred, ref, why):
    with pytest.raises(ValueError, match=why):
        compare(pred, ref, LABELS)


def test_verdict_files_and_audit_pairings_share_the_engine():
    """A verdict file's numbers are the engine's numbers on the same rows."""
    from evalkit.verdicts.analysis import score_payload

    rows = [
        {"truth": t, "pred": p, "slice": "a", "probs": None, "ms": 1}
        for t, p in [("allow", "allow"), ("deny", "allow"), ("confirm", "deny"), ("deny", "deny"), ("allow", "oops")]
    ]
    s = score_payload({"model": "m", "condition": "c", "results": rows})
    order = ["allow", "confirm", "deny"]
    pos = {lab: i for i, lab in enumerate(order)}
    c = compare([pos.get(r["pred"], -1) for r in rows], [pos[r["truth"]] for r in rows], order, more_credit="lower")
    counts = {k: v for k, v in s["direction"].items() if k != "invalid_preds"}
    assert counts == {"grants_more": c.more_credit, "grants_less": c.less_credit, "invalid_pred": c.invalid}
    assert counts == {"grants_more": 1, "grants_less": 1, "invalid_pred": 1}
    assert s["direction"]["invalid_preds"] == [{"value": "oops", "n": 1}]
    assert s["cohen_kappa"] == c.cohen_kappa
    assert s["confusion"]["matrix"] == np.array(c.confusion).T.tolist()  # truth rows there
