"""Sample-size planning for a paired comparison of two models (Miller 2024, §5).

To detect a difference δ between two models that both run the same C scenarios R times each, with a
two-sided test at level α and power 1 − β, the normal approximation needs

    C = ⌈ (z(1 − α/2) + z(1 − β))² · (ω² + 2σ²/R) / δ² ⌉      (at least 2)

where σ² is the within-scenario variance of one run's result (run-to-run noise) and ω² the variance
across scenarios of the true difference between the two models. The power of a design (C, R) is
``Φ(δ/SE − z) + Φ(−δ/SE − z)`` with ``SE = √((ω² + 2σ²/R)/C)``. Planning uses z, as Miller does; for
few scenarios the t-test evalkit applies is less powerful than this says (docs/uncertainty.md gives
the figures).

Variances measured from an aggregate (:func:`measured_variances`):

- σ²: pooled over every group with at least two runs, ``Σ (n−1)s² / Σ (n−1)``, with s² recovered as
  ``se² · n_scored`` from the group's ``<metric>_se``.
- ω²: for every model pair with at least two shared scenarios, the sample variance of the
  per-scenario differences minus the part run noise explains, the mean over shared scenarios of
  s²_A/n_A + s²_B/n_B (floored at 0); the mean over pairs. The source says over how many shared
  scenarios, and when every pair's estimate was floored: 0 then means run noise explains the
  spread, which a few scenarios cannot tell from a real spread.
- With one model only, ω² is taken to be that model's variance across scenario means τ² — what two
  models with the same spread whose scenario means correlate 0.5 would show — and the output says so.
- With no data: σ = 0.5 (the largest a 0/1 outcome can have) and ω = 0.3, stated as assumptions.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.aggregate.uncertainty.distributions import normal_cdf, normal_quantile
from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL, check_level

DEFAULT_POWER = 0.8
ASSUMED_SD_WITHIN = 0.5
ASSUMED_SD_BETWEEN = 0.3
RUN_CHOICES = (1, 2, 3, 5, 10)
MIN_SCENARIOS = 2


def scenarios_needed(
    delta: float,
    sd_within: float,
    sd_between: float,
    runs: int,
    level: float = DEFAULT_LEVEL,
    power: float = DEFAULT_POWER,
) -> int:
    """Scenarios needed to detect ``delta`` with ``runs`` runs per scenario per model."""
    z = normal_quantile(1.0 - (1.0 - level) / 2.0) + normal_quantile(power)
    variance = sd_between**2 + 2.0 * sd_within**2 / runs
    return max(MIN_SCENARIOS, math.ceil(z * z * variance / (delta * delta) - 1e-9))


def power_of(
    delta: float, sd_within: float, sd_between: float, runs: int, scenarios: int, level: float = DEFAULT_LEVEL
) -> float:
    """The power of a paired comparison on ``scenarios`` × ``runs`` to detect ``delta``."""
    se = math.sqrt((sd_between**2 + 2.0 * sd_within**2 / runs) / scenarios)
    if se == 0.0:
        return 1.0
    z = normal_quantile(1.0 - (1.0 - level) / 2.0)
    return normal_cdf(delta / se - z) + normal_cdf(-delta / se - z)


def _within(groups: Sequence[Mapping[str, Any]], metric: str) -> float | None:
    num = den = 0.0
    for g in groups:
        se, n = g.get(f"{metric}_se"), g.get("n_scored", 0)
        if se is not None and n >= 2:
            num += (n - 1) * se * se * n
            den += n - 1
    return num / den if den else None


def _between(groups: Sequence[Mapping[str, Any]], metric: str) -> tuple[float | None, str]:
    by_model: dict[str, dict[str, Mapping[str, Any]]] = {}
    for g in groups:
        if g.get(metric) is not None:
            by_model.setdefault(g["model"], {})[g["scenario_id"]] = g
    models = sorted(by_model)
    estimates, floored, most = [], 0, 0
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            shared = sorted(by_model[a].keys() & by_model[b].keys())
            if len(shared) < 2:
                continue
            diffs = [by_model[b][s][metric] - by_model[a][s][metric] for s in shared]
            noise = statistics.fmean(
                sum((g.get(f"{metric}_se") or 0.0) ** 2 for g in (by_model[a][s], by_model[b][s])) for s in shared
            )
            estimates.append(max(0.0, statistics.variance(diffs) - noise))
            floored += statistics.variance(diffs) <= noise
            most = max(most, len(shared))
    if estimates:
        said = f"measured on {len(estimates)} model pair(s), {most} shared scenarios at most"
        if floored == len(estimates):  # 0 says the runs' noise explains the spread, not that there is none
            said += (
                "; floored at 0, as the differences vary no more than run noise explains: too few scenarios "
                "to tell how much the difference varies across scenarios (--sd-between states it)"
            )
        return statistics.fmean(estimates), said
    spreads = [statistics.variance([g[metric] for g in per.values()]) for per in by_model.values() if len(per) >= 2]
    if spreads:
        return statistics.fmean(
            spreads
        ), "assumed: the spread of one model's scenario means (no model pair shares 2 scenarios)"
    return None, ""


def measured_variances(aggregate_result: Mapping[str, Any], metric: str) -> dict[str, Any]:
    """σ and ω for ``metric`` from an aggregate, each with where it came from."""
    groups = aggregate_result.get("groups", [])
    within = _within(groups, metric)
    between, source = _between(groups, metric)
    return {
        "sd_within": math.sqrt(within) if within is not None else ASSUMED_SD_WITHIN,
        "sd_within_source": "measured: pooled within-scenario variance"
        if within is not None
        else f"assumed {ASSUMED_SD_WITHIN}: no group with 2 runs",
        "sd_between": math.sqrt(between) if between is not None else ASSUMED_SD_BETWEEN,
        "sd_between_source": source or f"assumed {ASSUMED_SD_BETWEEN}: no model with 2 scenarios",
    }


def _current_design(aggregate_result: Mapping[str, Any]) -> tuple[int, int] | None:
    groups = [g for g in aggregate_result.get("groups", []) if g.get("n_scored")]
    if not groups:
        return None
    runs = max(1, round(statistics.median(g["n_scored"] for g in groups)))
    return len({g["scenario_id"] for g in groups}), runs


def plan(
    delta: float,
    aggregate_result: Mapping[str, Any] | None = None,
    level: float = DEFAULT_LEVEL,
    power: float = DEFAULT_POWER,
    metrics: Sequence[str] = ("score_mean", "pass_rate"),
    sd_within: float | None = None,
    sd_between: float | None = None,
    run_choices: Sequence[int] = RUN_CHOICES,
) -> dict[str, Any]:
    """Scenarios × runs needed to detect ``delta``, per metric, and the power of the current data.

    ``sd_within`` / ``sd_between`` override what is measured (a stated assumption).
    """
    check_level(level)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be between 0 and 1 (exclusive), got {power}")
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta}")
    design = _current_design(aggregate_result) if aggregate_result else None
    out_metrics = []
    for metric in metrics:
        v = measured_variances(aggregate_result or {}, metric)
        if sd_within is not None:
            v["sd_within"], v["sd_within_source"] = sd_within, "stated: --sd-within"
        if sd_between is not None:
            v["sd_between"], v["sd_between_source"] = sd_between, "stated: --sd-between"
        choices = sorted(set(run_choices) | ({design[1]} if design else set()))
        rows = []
        for runs in choices:
            c = scenarios_needed(delta, v["sd_within"], v["sd_between"], runs, level, power)
            rows.append({"runs_per_scenario": runs, "scenarios": c, "runs_per_model": c * runs})
        current = None
        if design:
            scenarios, runs = design
            current = {
                "scenarios": scenarios,
                "runs_per_scenario": runs,
                "power": power_of(delta, v["sd_within"], v["sd_between"], runs, scenarios, level),
            }
        out_metrics.append({"metric": metric, **v, "needed": rows, "current": current})
    return {
        "delta": delta,
        "level": level,
        "power": power,
        "test": "paired, two-sided, normal approximation",
        "metrics": out_metrics,
    }
