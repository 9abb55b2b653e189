"""Calibration: multi-class Brier (against scikit-learn), reliability bands, ECE, escalation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from evalkit.agreement import stats as S

TOL = 1e-9


def test_brier_anchor_values():
    assert S.brier_multiclass([[1, 0, 0]], [0])["value"] == 0.0
    assert S.brier_multiclass([[1 / 3] * 3], [2])["value"] == pytest.approx(2 / 3, abs=TOL)  # 0.667 uniform
    assert S.brier_multiclass([[0, 1, 0]], [0])["value"] == pytest.approx(2.0, abs=TOL)  # confident and wrong


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_brier_binary_is_twice_sklearn(seed):
    rng = np.random.default_rng(seed)
    p = rng.random(200)
    y = (rng.random(200) < p).astype(int)
    ours = S.brier_multiclass(np.c_[1 - p, p], y)["value"]
    assert ours == pytest.approx(2 * brier_score_loss(y, p), abs=TOL)


@pytest.mark.parametrize("seed", [0, 1])
def test_brier_multiclass_matches_sklearn_multiclass_definition(seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([1, 1, 1, 1], size=100)
    truth = rng.integers(0, 4, 100)
    ours = S.brier_multiclass(probs, truth)["value"]
    # scikit-learn >= 1.7 scores multiclass probabilities the same way (sum over classes, mean over rows)
    ref = brier_score_loss(truth, probs, labels=[0, 1, 2, 3])
    assert ours == pytest.approx(ref, abs=TOL)


def test_brier_skips_rows_without_a_forecast():
    st = S.brier_multiclass([[1, 0, 0], [np.nan, np.nan, np.nan]], [0, 1])
    assert st["value"] == 0.0
    st = S.brier_multiclass(np.zeros((0, 3)), [])
    assert st["value"] is None and "usable" in st["reason"]


def test_reliability_bands_edges_and_empty_bands():
    top = [0.55, 0.59, 0.6, 0.95, 1.0, 0.3]
    ok = [True, False, True, True, False, False]
    bands = S.reliability_bands(top, ok, edges=(0.0, 0.5, 0.6, 0.9, 1.0))
    assert [b["band"] for b in bands] == ["0.00-0.50", "0.50-0.60", "0.60-0.90", "0.90-1.00"]
    assert [b["n"] for b in bands] == [1, 2, 1, 2]
    assert bands[1]["mean_confidence"] == pytest.approx(0.57, abs=TOL)
    assert bands[1]["accuracy"] == 0.5
    assert bands[3]["accuracy"] == 0.5  # 1.0 falls in the last, closed band
    empty = S.reliability_bands([], [])
    assert all(b["n"] == 0 and b["accuracy"] is None and b["mean_confidence"] is None for b in empty)


def test_expected_calibration_error_hand_computed():
    # bins of 0.1: {0.95, 0.95} acc 1/2 conf .95 -> gap .45 weight 2/4 ; {0.35} acc 1 conf .35 -> .65 w 1/4
    # {0.75} acc 0 -> .75 w 1/4 ; ECE = .225 + .1625 + .1875 = .575
    st = S.expected_calibration_error([0.95, 0.95, 0.35, 0.75], [True, False, True, False])
    assert st["value"] == pytest.approx(0.575, abs=TOL)
    assert S.expected_calibration_error([1.0, 1.0], [True, True])["value"] == 0.0
    assert S.expected_calibration_error([], [])["value"] is None


def test_escalation_counts_misses_caught():
    top = [0.95, 0.6, 0.7, 0.85, 0.5]
    ok = [True, False, True, False, False]
    esc = S.escalation(top, ok, 0.8)
    assert esc == {"threshold": 0.8, "n": 5, "escalated": 3, "misses": 3, "misses_caught": 2}


def test_probabilities_outside_unit_interval_are_rejected():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        S.escalation([1.2], [True], 0.5)
