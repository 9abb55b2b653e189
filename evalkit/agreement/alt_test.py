"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025).

Can the judge replace a human annotator? Leave each human out in turn; on every item that human
rated, score the judge and the left-out human against the remaining humans; count who aligns at
least as well; then test, per human, whether the human's advantage exceeds ``epsilon`` (a cost-
benefit allowance in the judge's favour: 0.2 experts, 0.15 skilled annotators, 0.1 crowd).

The procedure follows the authors' reference implementation (github.com/nitaytech/AltTest):

- items are kept when the judge rated them and at least two humans did (so a left-out human
  always has someone to be compared with);
- per item, ``W_judge = [judge score >= human score]`` and ``W_human = [human score >= judge score]``
  (ties count for both);
- per human, a one-sided one-sample t-test on ``d = W_human - W_judge`` of
  ``H0: mean(d) >= epsilon`` against ``H1: mean(d) < epsilon`` (this is the paired t-test of
  ``W_human`` against ``W_judge + epsilon``); rejecting H0 means the judge "wins" against that human;
- Benjamini-Yekutieli over the humans tested, at level ``q``;
- winning rate ``omega`` = share of tested humans whose H0 is rejected; the judge passes when
  ``omega >= 0.5``; advantage probability ``rho`` = mean over tested humans of mean ``W_judge``.

A human with fewer than ``min_items`` comparable items is not tested (the authors require 30 for
the t-test's normal approximation); they are listed with a reason and excluded from ``omega``.
When every ``d`` is identical the t statistic is infinite: p = 0 if ``mean(d) < epsilon`` else 1
(scipy's limit as well).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

METRICS = ("accuracy", "neg_abs_error", "neg_rmse")


def benjamini_yekutieli(p_values: Any) -> np.ndarray:
    """BY-adjusted p-values: ``scipy.stats.false_discovery_control(p, method="by")``."""
    from scipy.stats import false_discovery_control

    p = np.asarray(p_values, dtype=float)
    return p if p.size == 0 else false_discovery_control(p, method="by")


def _one_sided_t_less(d: np.ndarray, mu: float) -> float | None:
    """p-value of ``H1: mean(d) < mu``: ``scipy.stats.ttest_1samp(d, mu, alternative="less")``.

    Undefined (None) with fewer than two values, or when every value equals ``mu``; when every
    value is equal but not ``mu`` the t statistic is infinite and p is 0 or 1 (scipy's limit, taken
    here without its divide-by-zero warning)."""
    from scipy.stats import ttest_1samp

    n = d.size
    if n < 2:
        return None
    mean = float(d.mean())
    if float(d.std(ddof=1)) == 0.0:
        if mean == mu:
            return None
        return 0.0 if mean < mu else 1.0
    return float(ttest_1samp(d, mu, alternative="less").pvalue)


def _encode(judge: Mapping[Any, Any], humans: Mapping[str, Mapping[Any, Any]], metric: str):
    """Items x (judge, humans) arrays: codes for accuracy, floats for the error metrics; missing
    entries are masked."""
    items = sorted({i for h in humans.values() for i in h} & set(judge), key=repr)
    names = sorted(humans, key=str)
    n_h, n_i = len(names), len(items)
    present = np.zeros((n_h, n_i), dtype=bool)
    if metric == "accuracy":
        codes: dict[Any, int] = {}
        H = np.full((n_h, n_i), -1, dtype=np.int64)
        J = np.array([codes.setdefault(judge[i], len(codes)) for i in items], dtype=np.int64)
        for r, name in enumerate(names):
            ratings = humans[name]
            for c, item in enumerate(items):
                v = ratings.get(item)
                if v is not None:
                    H[r, c] = codes.setdefault(v, len(codes))
                    present[r, c] = True
    else:
        try:
            J = np.array([float(judge[i]) for i in items])
            H = np.full((n_h, n_i), np.nan)
            for r, name in enumerate(names):
                ratings = humans[name]
                for c, item in enumerate(items):
                    v = ratings.get(item)
                    if v is not None:
                        H[r, c] = float(v)
                        present[r, c] = True
        except (TypeError, ValueError):
            raise ValueError(f"metric {metric!r} needs numeric ratings") from None
    return names, items, J, H, present


def _closeness(a: np.ndarray, others: np.ndarray, mask: np.ndarray, metric: str) -> np.ndarray:
    """Per item, the SUM over the remaining humans of the alignment score of ``a`` (items,)
    against ``others`` (humans, items); dividing by the per-item count gives the mean. Sums are
    compared so that ties between judge and human are exact."""
    if metric == "accuracy":
        return ((others == a[None, :]) & mask).sum(axis=0).astype(float)
    diff = np.where(mask, others - a[None, :], 0.0)
    if metric == "neg_abs_error":
        return -np.abs(diff).sum(axis=0)
    return -(diff**2).sum(axis=0)  # neg_rmse: -sqrt(mean sq) is monotone in -sum sq for a fixed count


def alt_test(
    judge: Mapping[Any, Any],
    humans: Mapping[str, Mapping[Any, Any]],
    epsilon: float = 0.2,
    metric: str = "accuracy",
    q: float = 0.05,
    min_items: int = 30,
) -> dict[str, Any]:
    """Run the alt-test. ``judge`` maps item -> value; ``humans`` maps human -> (item -> value).

    ``metric``: ``accuracy`` (labels; share of remaining humans agreeing), ``neg_abs_error``
    (numbers; minus the mean absolute difference to the remaining humans) or ``neg_rmse``
    (the authors' choice for numbers). Returns ``{winning_rate, advantage_prob, passed, per_human,
    epsilon, q, metric, min_items, n_humans, n_tested, reason}``; ``per_human`` entries are
    ``{human, n, p_value, p_adjusted, rejected, judge_score, human_score, judge_advantage, reason}``
    with mean alignment scores. Undefined results (fewer than three humans, no human with enough
    items) have ``winning_rate``/``advantage_prob``/``passed`` None and a reason."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not 0.0 < q < 1.0:
        raise ValueError("q must lie strictly between 0 and 1")
    judge = {i: v for i, v in judge.items() if v is not None}
    result: dict[str, Any] = {
        "winning_rate": None,
        "advantage_prob": None,
        "passed": None,
        "per_human": [],
        "epsilon": float(epsilon),
        "q": float(q),
        "metric": metric,
        "min_items": int(min_items),
        "n_humans": len(humans),
        "n_tested": 0,
        "reason": None,
    }
    if len(humans) < 3:
        result["reason"] = f"the alt-test needs at least three human raters (got {len(humans)})"
        return result
    names, items, J, H, present = _encode(judge, humans, metric)
    n_per_item = present.sum(axis=0)
    per_human = []
    for r, name in enumerate(names):
        others = present.copy()
        others[r] = False
        remaining = n_per_item - present[r]
        use = present[r] & (remaining >= 1)
        n = int(use.sum())
        entry: dict[str, Any] = {
            "human": name,
            "n": n,
            "p_value": None,
            "p_adjusted": None,
            "rejected": False,
            "judge_score": None,
            "human_score": None,
            "judge_advantage": None,
            "reason": None,
        }
        per_human.append(entry)
        if n < max(min_items, 2):
            entry["reason"] = f"only {n} items shared with the judge and another human (needs {max(min_items, 2)})"
            continue
        own = np.where(present[r], H[r], 0)
        judge_sum = _closeness(J, H, others, metric)
        human_sum = _closeness(own, H, others, metric)
        js, hs, cnt = judge_sum[use], human_sum[use], remaining[use].astype(float)
        w_judge = (js >= hs).astype(float)
        w_human = (hs >= js).astype(float)
        if metric == "neg_rmse":
            js_mean, hs_mean = -np.sqrt(-js / cnt), -np.sqrt(-hs / cnt)
        else:
            js_mean, hs_mean = js / cnt, hs / cnt
        entry.update(
            judge_score=float(js_mean.mean()), human_score=float(hs_mean.mean()), judge_advantage=float(w_judge.mean())
        )
        entry["p_value"] = _one_sided_t_less(w_human - w_judge, float(epsilon))
        if entry["p_value"] is None:
            entry["reason"] = "the t-test is undefined (no variation and mean equal to epsilon)"
    tested = [e for e in per_human if e["judge_advantage"] is not None]
    result["per_human"] = per_human
    result["n_tested"] = len(tested)
    if not tested:
        result["reason"] = f"no human has {max(min_items, 2)} or more items shared with the judge and another human"
        return result
    pvals = np.array([1.0 if e["p_value"] is None else e["p_value"] for e in tested])
    adjusted = benjamini_yekutieli(pvals)
    for e, adj in zip(tested, adjusted):
        e["p_adjusted"] = float(adj)
        e["rejected"] = bool(adj <= q and e["p_value"] is not None)
    omega = sum(e["rejected"] for e in tested) / len(tested)
    result.update(
        winning_rate=float(omega),
        advantage_prob=float(np.mean([e["judge_advantage"] for e in tested])),
        passed=bool(omega >= 0.5),
    )
    return result
