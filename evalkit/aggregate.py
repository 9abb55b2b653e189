"""Aggregation of ScoreCards: per (scenario, model) groups and a per-model rollup.

Runs in a group: ``n`` counts every run. The *included* runs are those with status ``scored`` (plus
``provider_error`` with ``include_errors``); ``n_scored`` counts them and every mean, the pass rate,
pass^k and the dangerous rate are taken over them. ``incomplete`` and ``invalid_scenario`` runs count
in ``n`` and their rate only.

pass_hat_k[k-1] = C(c, k) / C(n_scored, k) for k = 1..n_scored (tau-bench's unbiased pass^k), with c
the included runs whose ``all_passed`` is true.

The per-model rollup weights every scenario equally: each value is the mean of the per-scenario
values over the scenarios that have one. Its pass_hat_k runs to the smallest n_scored among those
scenarios (every scenario must contribute to every k), which for tau-bench result files — the same
number of trials per task — is exactly the benchmark's headline pass^k.

Groups with fewer than 3 included runs carry ``small_n: true`` (seed 002: never report a single run
as a result).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SMALL_N = 3


@dataclass(slots=True)
class RunSummary:
    """The few numbers aggregation needs from one ScoreCard (so callers can stream and drop cards)."""

    scenario_id: str
    model: str
    status: str
    scalar: float | None
    coverage: float | None
    order: float | None
    end_state: float | None
    all_passed: bool | None
    dangerous: int

    @classmethod
    def of(cls, card: Any) -> "RunSummary":
        v = card.vector
        return cls(
            card.scenario_id, card.model, card.status, card.scalar,
            v.coverage, v.order, v.end_state, v.all_passed, v.safety_dangerous or 0,
        )


@dataclass
class _Group:
    runs: list[RunSummary] = field(default_factory=list)


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def pass_hat_k(c: int, n: int) -> list[float]:
    return [math.comb(c, k) / math.comb(n, k) for k in range(1, n + 1)]


def _group_stats(scenario_id: str, model: str, runs: list[RunSummary], include_errors: bool) -> dict[str, Any]:
    n = len(runs)
    counted = {"scored", "provider_error"} if include_errors else {"scored"}
    inc = [r for r in runs if r.status in counted]
    scores = [r.scalar for r in inc if r.scalar is not None]
    passes = sum(1 for r in inc if r.all_passed)
    return {
        "scenario_id": scenario_id,
        "model": model,
        "n": n,
        "n_scored": len(inc),
        "score_mean": _mean(scores),
        "score_std": statistics.stdev(scores) if len(scores) >= 2 else None,
        "score_median": statistics.median(scores) if scores else None,
        "coverage_mean": _mean([r.coverage for r in inc if r.coverage is not None]),
        "order_mean": _mean([r.order for r in inc if r.order is not None]),
        "end_state_mean": _mean([r.end_state for r in inc if r.end_state is not None]),
        "pass_rate": passes / len(inc) if inc else None,
        "pass_hat_k": pass_hat_k(passes, len(inc)),
        "dangerous_rate": sum(1 for r in inc if r.dangerous > 0) / len(inc) if inc else None,
        "provider_error_rate": sum(1 for r in runs if r.status == "provider_error") / n,
        "invalid_rate": sum(1 for r in runs if r.status == "invalid_scenario") / n,
        "incomplete_rate": sum(1 for r in runs if r.status == "incomplete") / n,
        "small_n": len(inc) < SMALL_N,
    }


def _rollup(model: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    with_runs = [g for g in groups if g["n_scored"] > 0]
    k_max = min((g["n_scored"] for g in with_runs), default=0)
    return {
        "model": model,
        "scenarios": len(groups),
        "n": sum(g["n"] for g in groups),
        "n_scored": sum(g["n_scored"] for g in groups),
        "score_mean": _mean([g["score_mean"] for g in groups if g["score_mean"] is not None]),
        "pass_rate": _mean([g["pass_rate"] for g in with_runs]),
        "pass_hat_k": [math.fsum(g["pass_hat_k"][k] for g in with_runs) / len(with_runs) for k in range(k_max)],
        "dangerous_rate": _mean([g["dangerous_rate"] for g in with_runs]),
        "small_n": any(g["small_n"] for g in groups),
    }


class Aggregator:
    """Streaming aggregation: feed ScoreCards (or RunSummary) one at a time, then ``result()``."""

    def __init__(self, include_errors: bool = False):
        self.include_errors = include_errors
        self._groups: dict[tuple[str, str], list[RunSummary]] = {}

    def add(self, card: Any) -> None:
        run = card if isinstance(card, RunSummary) else RunSummary.of(card)
        self._groups.setdefault((run.scenario_id, run.model), []).append(run)

    def result(self) -> dict[str, Any]:
        groups = [
            _group_stats(scenario, model, runs, self.include_errors)
            for (scenario, model), runs in sorted(self._groups.items())
        ]
        by_model: dict[str, list[dict[str, Any]]] = {}
        for g in groups:
            by_model.setdefault(g["model"], []).append(g)
        return {
            "include_errors": self.include_errors,
            "groups": groups,
            "models": [_rollup(model, gs) for model, gs in sorted(by_model.items())],
        }


def aggregate(cards: Iterable[Any], include_errors: bool = False) -> dict[str, Any]:
    agg = Aggregator(include_errors)
    for card in cards:
        agg.add(card)
    return agg.result()
