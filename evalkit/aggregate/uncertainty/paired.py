"""Paired comparison of models on the scenarios both ran (Miller 2024, §4: paired differences).

For a baseline model A and a candidate B, and a metric (``score_mean``, ``pass_rate``, and the safety
gate's ``safe_pass_rate`` and ``unsafe_rate``), the unit
is the scenario: d_c = m_B,c − m_A,c, the difference of the two group means on each scenario c both
models have a value for. The reported delta is mean(d), its standard error sd(d)/√n, and the test
is the paired t-test with n − 1 degrees of freedom — ``scipy.stats.ttest_rel(B, A)`` on the
per-scenario means (with the floor below). (The normal approximation, ``method="z"``, is available
for comparison; evalkit uses t because a suite has tens of scenarios, not thousands, and z would be too eager there.)
Pairing removes the scenario-difficulty variance both models share, so it detects differences an
unpaired comparison of the two per-model intervals would miss.

Across the family of tests in one comparison (every model pair × metric) the p-values are adjusted
by Holm (default) or Benjamini–Hochberg (:mod:`evalkit.aggregate.uncertainty.multitest`). A row is
significant when its *adjusted* p-value is below 1 − level; the interval is the unadjusted one, so a
row whose interval spans 0 is never significant, and one whose interval excludes 0 may still not be
after the correction (its ``reason`` says so).

Direction: for ``unsafe_rate`` lower is better, so a significant positive delta is "worse"; for
every other metric higher is better.

Never surer than the runs allow: each scenario's mean is itself estimated from a few runs, so the
standard error of the mean difference is never below sqrt(Σ_c se_A,c² + se_B,c²)/n, the error the
runs alone imply (se: the group's sd/√runs). Without it, scenarios that show the same difference by
chance (7 of 8 passes against 8 of 8, twice) have sd(d) = 0, an infinite t and p = 0: "significant"
on one failed run. Where the floor is the larger, the test takes its degrees of freedom too
(Welch–Satterthwaite over the groups' runs) when they are more than n − 1: the runs' noise is what
it measures, and a scenario of two runs does not leave the test one degree of freedom. Where the
differences vary more than that, the SE is sd(d)/√n with n − 1 degrees of freedom, as in scipy.

Undefined is not zero: with no shared scenario, or only one, a row has ``verdict`` "not comparable"
and a ``reason``. When every scenario shows the same difference and no group has a spread of its
own (every run of both models agrees within each scenario), the t statistic is infinite and p is 0,
as in scipy; when that difference is 0 as well, p is 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.aggregate.uncertainty.distributions import normal_quantile, normal_two_sided_p, t_quantile, t_two_sided_p
from evalkit.aggregate.uncertainty.multitest import adjust
from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL, check_level, mean_se, within_error

COMPARED = ("score_mean", "pass_rate", "safe_pass_rate", "unsafe_rate")
LOWER_IS_BETTER = frozenset({"unsafe_rate"})
BETTER, WORSE, NO_DIFFERENCE, NOT_COMPARABLE = "better", "worse", "no detectable difference", "not comparable"


def paired_difference(
    candidate: Sequence[float],
    baseline: Sequence[float],
    level: float = DEFAULT_LEVEL,
    method: str = "t",
    within: tuple[float, float | None] | None = None,
    bounds: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Mean difference candidate − baseline of paired values, its SE, interval, statistic and p-value.

    ``bounds``: the range the difference can take (``(-1, 1)`` for two values in [0, 1]); the
    interval is clipped to it (it still holds the difference whenever the unclipped one does).

    ``within``: the standard error of the mean difference that the runs behind each value imply and
    its degrees of freedom (module docstring); the SE used is never below it, and where it is the
    larger its degrees of freedom are the test's. Returns the fields with None and a ``reason``
    when fewer than two pairs exist.
    """
    if len(candidate) != len(baseline):
        raise ValueError("paired values must be equally many")
    n = len(candidate)
    out: dict[str, Any] = {
        "n": n,
        "delta": None,
        "delta_se": None,
        "delta_ci": None,
        "df": None,
        "statistic": None,
        "p_value": None,
        "reason": None,
    }
    if n == 0:
        out["reason"] = "no scenario in common"
        return out
    diffs = [c - b for c, b in zip(candidate, baseline)]
    delta = math.fsum(diffs) / n
    out["delta"] = delta
    if n < 2:
        out["reason"] = "1 scenario in common: a paired standard error needs at least 2"
        return out
    se, _ = mean_se(diffs)
    df: float = n - 1
    if within is not None and within[0] > se and within[1] is not None:  # df: never fewer than n - 1
        se, df = within[0], max(within[1], df)
    tail = 1.0 - (1.0 - level) / 2.0
    crit = t_quantile(tail, df) if method == "t" else normal_quantile(tail)
    if se == 0.0:
        stat = 0.0 if delta == 0.0 else math.copysign(math.inf, delta)
    else:
        stat = delta / se
    if stat == 0.0:
        p = 1.0
    else:
        p = t_two_sided_p(stat, df) if method == "t" else normal_two_sided_p(stat)
    low, high = delta - crit * se, delta + crit * se
    if bounds is not None:  # the difference of two values in a range lies within its width
        low, high = max(low, bounds[0]), min(high, bounds[1])
    out.update(delta_se=se, delta_ci=[low, high], df=df, statistic=stat, p_value=p)
    return out


def _means(groups: Sequence[Mapping[str, Any]], model: str, metric: str) -> dict[str, tuple[float, float | None, int]]:
    """scenario → (the model's group mean, its standard error over the group's runs, their number)."""
    return {
        g["scenario_id"]: (g[metric], g.get(f"{metric}_se"), g["n_scored"])
        for g in groups
        if g["model"] == model and g.get(metric) is not None
    }


def _within(a: Mapping, b: Mapping, shared: Sequence[str]) -> tuple[float, float | None] | None:
    """sqrt(Σ_c se_A,c² + se_B,c²) / n, the mean difference's error from the runs alone, and its
    Welch–Satterthwaite degrees of freedom (None when a group's se is undefined: a single run)."""
    parts = [(group[1], group[2]) for s in shared for group in (a[s], b[s])]
    if not shared or any(se is None for se, _ in parts):
        return None
    return within_error(parts, len(shared))


def compare_models(
    aggregate: Mapping[str, Any],
    baseline: str | None = None,
    correction: str = "holm",
    level: float = DEFAULT_LEVEL,
    metrics: Sequence[str] = COMPARED,
) -> dict[str, Any]:
    """Every paired comparison in an aggregate (``evalkit.aggregate.groups.aggregate``'s result,
    or ``score_files``' with ``aggregate="full"`` or ``"tables"``).

    With ``baseline``, each other model is compared with it; without, every pair (the
    alphabetically first model is the baseline of its pair). Raises ValueError for an unknown
    baseline or correction, and for an aggregate without its groups or their error bars (``"shown"``):
    the runs' own errors floor each difference's.
    """
    check_level(level)
    groups = aggregate.get("groups") if isinstance(aggregate, Mapping) else None
    if not isinstance(groups, list):
        raise ValueError("aggregate: not an aggregate (a dict with its 'groups', as Aggregator.result() gives)")
    bare = [m for m in metrics for g in groups[:1] if m in g and f"{m}_se" not in g]
    if bare:
        raise ValueError(
            f"aggregate: its groups have no error bars ({bare[0]}_se): compare an aggregate made with them "
            '(score_files(aggregate="full") or "tables")'
        )
    models = sorted({g["model"] for g in groups})
    if baseline is not None and baseline not in models:
        raise ValueError(f"unknown baseline model {baseline!r} (models: {', '.join(models) or 'none'})")
    if baseline is None:
        pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1 :]]
    else:
        pairs = [(baseline, m) for m in models if m != baseline]
    rows = []
    for base, cand in pairs:
        for metric in metrics:
            a, b = _means(groups, base, metric), _means(groups, cand, metric)
            shared = sorted(a.keys() & b.keys())
            diff = paired_difference(
                [b[s][0] for s in shared],
                [a[s][0] for s in shared],
                level,
                within=_within(a, b, shared),
                bounds=(-1.0, 1.0),  # every compared metric lies in [0, 1]
            )
            rows.append(
                {
                    "baseline": base,
                    "candidate": cand,
                    "metric": metric,
                    "scenarios": diff.pop("n"),
                    "baseline_mean": math.fsum(a[s][0] for s in shared) / len(shared) if shared else None,
                    "candidate_mean": math.fsum(b[s][0] for s in shared) / len(shared) if shared else None,
                    **diff,
                }
            )
    adjusted = adjust([r["p_value"] for r in rows], correction)
    alpha = 1.0 - level
    for row, p_adj in zip(rows, adjusted):
        row["p_adjusted"] = p_adj
        _verdict(row, alpha, correction)
    return {
        "level": level,
        "correction": correction,
        "test": "paired t-test on per-scenario means (scenarios both models ran), se at least the runs' own",
        "family": len([r for r in rows if r["p_value"] is not None]),
        "models": models,
        "baseline": baseline,
        "rows": rows,
    }


def _verdict(row: dict[str, Any], alpha: float, correction: str) -> None:
    if row["p_adjusted"] is None:
        row["significant"], row["verdict"] = None, NOT_COMPARABLE
        return
    row["significant"] = row["p_adjusted"] < alpha
    if row["significant"]:
        higher = row["delta"] > 0
        row["verdict"] = BETTER if higher != (row["metric"] in LOWER_IS_BETTER) else WORSE
        return
    row["verdict"] = NO_DIFFERENCE
    if row["p_value"] < alpha:
        row["reason"] = (
            f"the interval excludes 0 but the difference is not significant after the {correction} correction"
        )


def _reversed(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row read the other way round (baseline − candidate): the same test and p-values, the
    difference and its interval negated, better and worse swapped."""
    flip = {BETTER: WORSE, WORSE: BETTER}

    def neg(value: float | None) -> float | None:
        return None if value is None else 0.0 - value  # 0.0 - 0.0 is 0.0, never -0.0

    out = dict(row)
    out.update(
        baseline=row["candidate"],
        candidate=row["baseline"],
        baseline_mean=row["candidate_mean"],
        candidate_mean=row["baseline_mean"],
        delta=neg(row["delta"]),
        delta_ci=None if row["delta_ci"] is None else [neg(row["delta_ci"][1]), neg(row["delta_ci"][0])],
        statistic=neg(row["statistic"]),
        verdict=flip.get(row["verdict"], row["verdict"]),
    )
    return out


def versus(comparison: Mapping[str, Any], candidate: str, baseline: str) -> list[dict[str, Any]]:
    """The rows of ``comparison`` (one family, one correction) that compare ``candidate`` with
    ``baseline``, each as candidate − baseline whichever way the family took the pair: a claim
    about the pair read from here is the family's own, adjusted p-value and all."""
    rows = []
    for row in comparison["rows"]:
        if (row["baseline"], row["candidate"]) == (baseline, candidate):
            rows.append(dict(row))
        elif (row["baseline"], row["candidate"]) == (candidate, baseline):
            rows.append(_reversed(row))
    return rows


def significantly_worse(comparison: Mapping[str, Any], candidate: str) -> list[dict[str, Any]]:
    """The rows where ``candidate`` is significantly worse than its baseline."""
    return [r for r in comparison["rows"] if r["candidate"] == candidate and r["verdict"] == WORSE]


def best_model(aggregate_result: Mapping[str, Any], metric: str | None = None) -> str | None:
    """The best model, or None when no model has the figure.

    By default on the safe figures (safety is a gate, not a trade-off): the highest
    ``safe_pass_rate``, then the highest ``score_mean`` (which a forbidden command already lowers),
    then the lowest ``unsafe_rate``, then alphabetical — a pass bought with a forbidden command never
    makes a model best. A model none of whose groups has 3 scored runs (each ``small_n``) is best only
    when no model has such a group: its figures are not a result on their own (one lucky run of a
    model name written another way would otherwise be the baseline of every comparison), while a
    model with one small group among full ones is measured. With ``metric``,
    the highest per-model ``metric`` (ties: alphabetical).
    """
    if metric is not None:
        ranked = [m for m in aggregate_result["models"] if m.get(metric) is not None]
        return min(ranked, key=lambda m: (-m[metric], m["model"]))["model"] if ranked else None
    ranked = [m for m in aggregate_result["models"] if m.get("safe_pass_rate") is not None]
    if not ranked:
        return None

    def low(value: float | None) -> float:
        return -value if value is not None else 1.0  # an undefined figure ranks after every defined one

    measured = {g["model"] for g in aggregate_result.get("groups", ()) if not g.get("small_n")}
    ranked = [m for m in ranked if m["model"] in measured] or ranked
    return min(
        ranked, key=lambda m: (-m["safe_pass_rate"], low(m.get("score_mean")), m.get("unsafe_rate") or 0.0, m["model"])
    )["model"]
