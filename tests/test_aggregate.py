"""Aggregation: groups, rollup, pass^k, sample std, statuses."""

import math
import statistics

import pytest

from evalkit.aggregate.groups import RunSummary, aggregate, pass_hat_k


def rs(scenario, model, scalar, passed, status="scored", dangerous=0, order=1.0):
    return RunSummary(
        scenario, model, status, scalar, 1.0 if scalar is not None else None, order, scalar, passed, dangerous
    )


def test_pass_hat_k_by_hand():
    # 2 passes out of 4: pass^1 = 2/4, pass^2 = C(2,2)/C(4,2) = 1/6, pass^3 = 0, pass^4 = 0
    assert pass_hat_k(2, 4) == [0.5, 1 / 6, 0.0, 0.0]
    assert pass_hat_k(3, 3) == [1.0, 1.0, 1.0]


def test_group_statistics():
    runs = [rs("s", "m", 1.0, True), rs("s", "m", 0.5, False), rs("s", "m", 0.9, True, dangerous=1, order=None)]
    g = aggregate(runs)["groups"][0]
    assert g["n"] == 3 and g["n_scored"] == 3
    assert g["score_mean"] == pytest.approx(0.8)
    assert g["score_std"] == pytest.approx(statistics.stdev([1.0, 0.5, 0.9]))
    assert g["score_median"] == 0.9
    assert g["order_mean"] == 1.0  # over runs where order is not null
    assert g["pass_rate"] == pytest.approx(2 / 3) and g["dangerous_rate"] == pytest.approx(1 / 3)
    assert g["pass_hat_k"] == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert g["small_n"] is False


def test_std_is_null_below_two_and_small_n_flag():
    g = aggregate([rs("s", "m", 1.0, True)])["groups"][0]
    assert g["score_std"] is None and g["small_n"] is True


def test_incomplete_and_invalid_count_in_n_and_rate_only():
    runs = [
        rs("s", "m", 1.0, True),
        rs("s", "m", None, None, status="incomplete"),
        rs("s", "m", None, None, status="invalid_scenario"),
    ]
    g = aggregate(runs)["groups"][0]
    assert g["n"] == 3 and g["n_scored"] == 1 and g["score_mean"] == 1.0
    assert g["incomplete_rate"] == pytest.approx(1 / 3) and g["invalid_rate"] == pytest.approx(1 / 3)


def test_model_rollup_weights_scenarios_equally():
    runs = [rs("a", "m", 1.0, True)] * 4 + [rs("b", "m", 0.0, False)] * 2 + [rs("b", "m", 1.0, True)]
    out = aggregate(runs)
    m = out["models"][0]
    assert m["score_mean"] == pytest.approx((1.0 + 1 / 3) / 2)
    assert m["pass_rate"] == pytest.approx((1.0 + 1 / 3) / 2)
    # k runs to the smallest n_scored (3): mean of scenario a (1,1,1) and b (1/3, 0, 0)
    assert m["pass_hat_k"] == pytest.approx([(1 + 1 / 3) / 2, 0.5, 0.5])
    assert [g["scenario_id"] for g in out["groups"]] == ["a", "b"]


def test_rollup_equals_tau_bench_pass_hat_k_formula():
    # tau-bench: mean over tasks of C(c,k)/C(n,k)
    c_per_task, n = [3, 0, 2, 4], 4
    runs = [rs(f"t{i}", "m", 1.0 if j < c else 0.0, j < c) for i, c in enumerate(c_per_task) for j in range(n)]
    m = aggregate(runs)["models"][0]
    for k in range(1, n + 1):
        expected = sum(math.comb(c, k) / math.comb(n, k) for c in c_per_task) / len(c_per_task)
        assert m["pass_hat_k"][k - 1] == pytest.approx(expected, abs=1e-12)
