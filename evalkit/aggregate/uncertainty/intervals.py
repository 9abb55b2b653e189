"""Uncertainty fields for the aggregate: ``<metric>_se`` and ``<metric>_ci`` beside each metric.

Per (scenario, model) group, over the group's included runs: ``mean_se`` and a t interval with
n − 1 degrees of freedom; a rate's interval is Wilson's (it keeps its width at 0 of n and n of n).
Per model, over the group means of the scenarios that have one: the scenario-clustered standard
error of the scenario-weighted mean (see :mod:`evalkit.aggregate.uncertainty.standard_errors`), but
never below the within-scenario standard error sqrt(Σ se_s²)/C that the runs of each scenario imply
(scenario means that happen to agree leave each one's own sampling error: two scenarios at 7 of 8
passes are not a certain 87.5 %), and a t interval with C − 1 degrees of freedom; where the floor
is the larger, its own (Welch–Satterthwaite over the groups' runs) when they are more, so that
scenarios agreeing by chance give the interval their runs allow, neither a zero-width one nor one as
wide as two scenarios' t with 1 degree of freedom makes it; and a scenario of two or three runs
among many, whose noisy error would give the floor one or two degrees of freedom, leaves the
clustered error's C − 1. In that floor a rate's group whose runs all agree (k of k, or 0 of k) counts
the error of the rate (k + 1)/(n + 2) over its n runs, not 0: n runs do not show a rate of exactly 0
or 1, and a scenario of two runs that both passed would otherwise add nothing to an error it may
dominate. A rate that is 0 or 1 in every scenario (no spread at all):
the Wilson interval of its runs. pass^k gets a percentile
bootstrap over scenarios (:mod:`evalkit.aggregate.uncertainty.bootstrap`).

An undefined standard error is null, and ``se_reasons`` says why, per metric.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from typing import Any

from evalkit.aggregate.uncertainty.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_curves
from evalkit.aggregate.uncertainty.standard_errors import (
    DEFAULT_LEVEL,
    interval,
    scenario_weighted_se,
    se_of_mean,
    wilson,
    within_error,
)

# the metrics that carry an interval, in the order they appear in a group and a model row
METRICS = ("score_mean", "coverage_mean", "order_mean", "end_state_mean", "pass_rate")
# the safety gate's rates: the same intervals as pass_rate (each is a share of 0/1 outcomes over the
# same included runs); their reasons follow the earlier ones in ``se_reasons``
SAFETY_METRICS = ("safe_pass_rate", "dangerous_rate", "anti_procedure_rate", "unsafe_rate")
RATES = ("pass_rate", *SAFETY_METRICS)  # shares of 0/1 outcomes: a group's interval is Wilson's

MODEL_SE_METHOD = (
    "clustered by scenario (equal scenario weights, C/(C-1)), at least the within-scenario "
    "sqrt(sum of group se^2)/C (a rate's group at 0 or n of n: the se of (k+1)/(n+2)); t interval, C-1 df "
    "(the floor: Welch-Satterthwaite df over the groups' runs when more); "
    "a rate at 0 or 1 in every scenario: Wilson over its runs"
)
GROUP_SE_METHOD = "sample std / sqrt(n); t interval, n-1 df; rates: Wilson score interval"


def group_fields(
    row: Mapping[str, Any],
    spread: Mapping[str, tuple[float | None, int]],
    level: float = DEFAULT_LEVEL,
    metrics: Collection[str] | None = None,
) -> dict[str, Any]:
    """``{metric}_se``, ``{metric}_ci`` and ``se_reasons`` for one group, from each metric's mean (in
    ``row``) and its sample standard deviation and number of runs (``spread``). ``metrics``: those
    metrics' fields only (None: every metric's)."""
    out: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for metric, se_key, ci_key, rate in _GROUP_KEYS:
        if metrics is not None and metric not in metrics:
            continue
        sd, n = spread.get(metric, (None, 0))
        se, reason = se_of_mean(sd, n)
        out[se_key] = se
        mean = row.get(metric)
        if rate:  # a share of n runs: k of n passed
            out[ci_key] = wilson(round(mean * n), n, level) if se is not None and mean is not None else None
        else:
            out[ci_key] = interval(mean, se, n - 1, level)
        if reason:
            reasons[metric] = reason
    out["se_reasons"] = reasons
    return out


# per metric of a group: its name, its two fields, whether it is a rate
_GROUP_KEYS = tuple((m, f"{m}_se", f"{m}_ci", m in RATES) for m in METRICS + SAFETY_METRICS)


def model_fields(
    model: Mapping[str, Any],
    groups: Sequence[Mapping[str, Any]],
    level: float = DEFAULT_LEVEL,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    bootstrap: bool = True,
    metrics: Collection[str] | None = None,
) -> dict[str, Any]:
    """The per-model fields, from the model row (its means) and its group rows (their means).
    ``bootstrap=False``: the pass^k curves' ``_se`` and ``_ci`` are null, their reason "not computed"
    (nothing that shows them asked for them). ``metrics``: the ``_se`` and ``_ci`` of those of
    :data:`METRICS` and :data:`SAFETY_METRICS` only, without the pass^k curves' (None: every field)."""
    out: dict[str, Any] = {"se_method": MODEL_SE_METHOD}
    reasons: dict[str, str] = {}

    def clustered(among: tuple[str, ...]) -> None:
        for metric in among:
            if metrics is not None and metric not in metrics:
                continue
            means = [g[metric] for g in groups if g.get(metric) is not None]
            se, reason = scenario_weighted_se(means)
            df: float | None = len(means) - 1
            rate = metric in RATES
            parts = [_group_error(g, metric, rate) for g in groups if g.get(metric) is not None]
            spread = se
            if se is not None and all(e is not None for e, _ in parts):  # never surer than the runs allow
                floor, within_df = within_error(parts, len(means))
                if floor > se:  # never fewer degrees of freedom than the clustered error's own
                    se, df = floor, max(within_df, df)
            out[f"{metric}_se"] = se
            value = model.get(metric)
            if rate and spread == 0.0 and value in (0.0, 1.0) and model.get("n_scored"):
                runs = model["n_scored"]  # every scenario at 0 or 1: the runs say how sure that is
                out[f"{metric}_ci"] = wilson(round(value * runs), runs, level)
            else:
                out[f"{metric}_ci"] = interval(value, se, df, level) if df else None
            if reason:
                reasons[metric] = reason

    if metrics is not None:
        clustered(METRICS + SAFETY_METRICS)
        out["se_reasons"] = reasons
        return out
    # pass^k and safe pass^k from one draw: the same seed, the same resampled scenarios
    curves = [c for c in ("pass_hat_k", "safe_pass_hat_k") if c in model]
    if bootstrap:
        families = []
        for curve in curves:
            k_max = len(model.get(curve) or ())
            families.append([g[curve][:k_max] for g in groups if g.get("n_scored")])
        booted = bootstrap_curves(families, level, n_resamples, seed)
    else:
        booted = [(None, None, "not computed (only --format json or jsonl with --aggregate shows it)")] * len(curves)
    results = dict(zip(curves, booted))

    def bootstrapped(curve: str) -> None:
        if curve not in results:
            return
        se, ci, reason = results[curve]
        out[f"{curve}_se"], out[f"{curve}_ci"] = se, ci
        if reason:
            reasons[curve] = reason

    clustered(METRICS)
    bootstrapped("pass_hat_k")
    clustered(SAFETY_METRICS)
    bootstrapped("safe_pass_hat_k")
    out["se_reasons"] = reasons
    return out


def _group_error(group: Mapping[str, Any], metric: str, rate: bool) -> tuple[float | None, int]:
    """A group's standard error and runs for the floor: its own, except a rate's group whose runs all
    agree, which counts the error of the rate (k + 1)/(n + 2) over its n runs (module docstring)."""
    se, n = group.get(f"{metric}_se"), group["n_scored"]
    if rate and se == 0.0 and n >= 2:
        p = (round(group[metric] * n) + 1) / (n + 2)
        se = math.sqrt(p * (1.0 - p) / n)
    return se, n


def beside(row: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with each ``<metric>_se`` / ``<metric>_ci`` placed right after ``<metric>``; the rest
    of ``fields`` (the reasons, the method) at the end."""
    return {key: (fields if field else row)[key] for key, field in _layout(tuple(row), tuple(fields))}


@lru_cache(maxsize=64)
def _layout(row: tuple[str, ...], fields: tuple[str, ...]) -> tuple[tuple[str, bool], ...]:
    """:func:`beside`'s keys in order, each with whether its value comes from ``fields``: worked
    out once per shape (every group's row has the same keys)."""
    out: dict[str, bool] = {}
    placed = set()
    for key in row:
        out[key] = False
        for name in (key + "_se", key + "_ci"):
            if name in fields:
                out[name] = True
                placed.add(name)
    for key in fields:
        if key not in placed:
            out[key] = True
    return tuple(out.items())
