"""The report's tables, built once for both renderers: headers and rows of the per-model,
per-group, score-vector, safety, run and judge tables.

The HTML page and the markdown summary show the same cells; they differ only in how a cell is
escaped or marked up, which each renderer states once as a :class:`CellStyle`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalkit.report import fmt

Rows = list[list[str]]


@dataclass(frozen=True)
class CellStyle:
    """How one renderer writes the cells that differ between formats."""

    text: Callable[[Any], str]  # text from the database, or a formatter's text (escaped in both)
    shown: Callable[[str], str]  # a formatter's interval, money or latency
    small_n: Callable[[bool], str]  # the fewer-than-3 mark after a count
    unsafe_model: str  # the mark after a model with unsafe runs
    unsafe_run: Callable[[dict], str]  # a run in the safety table's "unsafe runs" cell
    run: Callable[[dict], str]  # the run cell of the run table
    rank: Callable[[dict], str]  # the rank cell of the run table
    passed: Callable[[str], str]  # the "passed" cell of the run table
    commands: Callable[[dict], str]  # the commands cell of the run table
    rubric: Callable[[dict], str]  # a judge model's rubric id and versions


def model_headers(level: str) -> list[str]:
    return [
        "model",
        "scenarios",
        "n scored",
        "score (mean)",
        f"score {level} CI",
        "pass rate",
        f"pass rate {level} CI",
        "safe pass rate",
        f"safe pass rate {level} CI",
        "unsafe rate",
        "pass^k",
        "vs best (paired)",
    ]


def model_rows(models: list[dict], s: CellStyle) -> Rows:
    return [
        [
            s.text(m.get("model")) + (s.unsafe_model if fmt.unsafe_model(m) else ""),
            fmt.num(m.get("scenarios")),
            f"{fmt.num(m.get('n_scored'))}{s.small_n(fmt.small_n(m))}",
            fmt.num(m.get("score_mean")),
            s.shown(fmt.interval(m.get("score_mean_ci"))),
            fmt.pct(m.get("pass_rate")),
            s.shown(fmt.interval(m.get("pass_rate_ci"), percent=True)),
            fmt.pct(m.get("safe_pass_rate")),
            s.shown(fmt.interval(m.get("safe_pass_rate_ci"), percent=True)),
            fmt.pct(m.get("unsafe_rate")),
            s.text(fmt.pass_hat_k(m.get("pass_hat_k"))),
            s.text(fmt.versus_best(m)),
        ]
        for m in models
    ]


def group_headers(level: str) -> list[str]:
    return [
        "scenario",
        "model",
        "n",
        "n scored",
        "pass rate",
        f"pass rate {level} CI",
        "safe pass rate",
        "unsafe rate",
        "pass^k",
    ]


def group_rows(groups: list[dict], s: CellStyle) -> Rows:
    return [
        [
            s.text(g.get("scenario_id")),
            s.text(g.get("model")),
            str(g.get("n")),
            f"{g.get('n_scored')}{s.small_n(fmt.small_n(g))}",
            fmt.pct(g.get("pass_rate")),
            s.shown(fmt.interval(g.get("pass_rate_ci"), percent=True)),
            fmt.pct(g.get("safe_pass_rate")),
            fmt.pct(g.get("unsafe_rate")),
            s.text(fmt.pass_hat_k(g.get("pass_hat_k"))),
        ]
        for g in groups
    ]


VECTOR_HEADERS = [
    "scenario",
    "model",
    "n scored",
    "coverage",
    "order",
    "end state",
    "score",
    "median",
    "provider error",
    "invalid",
    "incomplete",
]


def vector_rows(groups: list[dict], s: CellStyle) -> Rows:
    return [
        [
            s.text(g.get("scenario_id")),
            s.text(g.get("model")),
            f"{g.get('n_scored')}{s.small_n(fmt.small_n(g))}",
            fmt.num(g.get("coverage_mean")),
            fmt.num(g.get("order_mean")),
            fmt.num(g.get("end_state_mean")),
            s.text(fmt.mean_std(g.get("score_mean"), g.get("score_std"))),
            fmt.num(g.get("score_median")),
            fmt.pct(g.get("provider_error_rate")),
            fmt.pct(g.get("invalid_rate")),
            fmt.pct(g.get("incomplete_rate")),
        ]
        for g in groups
    ]


SAFETY_HEADERS = ["scenario", "model", "dangerous rate", "anti-procedure rate", "unsafe rate", "unsafe runs"]


def safety_rows(report: dict, s: CellStyle) -> Rows:
    unsafe: dict[tuple, list[dict]] = {}
    for run in report["runs"]:
        if run["unsafe"]:
            unsafe.setdefault((run["scenario_id"], run["model"]), []).append(run)
    return [
        [
            s.text(g.get("scenario_id")),
            s.text(g.get("model")),
            fmt.pct(g.get("dangerous_rate")),
            fmt.pct(g.get("anti_procedure_rate")),
            fmt.pct(g.get("unsafe_rate")),
            ", ".join(s.unsafe_run(r) for r in unsafe.get((g.get("scenario_id"), g.get("model")), [])) or "none",
        ]
        for g in report["groups"]
    ]


RUN_HEADERS = [
    "run",
    "scenario",
    "model",
    "rank",
    "score",
    "coverage",
    "order",
    "end state",
    "passed",
    "dangerous / anti-proc.",
    "extraneous",
    "commands",
]


def run_rows(runs: list[dict], s: CellStyle) -> Rows:
    return [
        [
            s.run(r),
            s.text(r["scenario_id"]),
            s.text(r["model"]),
            s.rank(r),
            fmt.num(r["scalar"]),
            fmt.num(r["coverage"]),
            fmt.num(r["order"]),
            fmt.num(r["end_state"]),
            s.passed(fmt.num(r["all_passed"])),
            f"{r['safety_dangerous']} / {r['safety_anti_procedure']}",
            str(r["extraneous"]),
            s.commands(r),
        ]
        for r in runs
    ]


JUDGE_HEADERS = [
    "judge model",
    "rubric",
    "runs",
    "annotations",
    "judge errors",
    "replicates",
    "non-blind",
    "cost",
    "latency median",
    "latency mean (excl. first)",
    "tokens in / out",
]


def judge_rows(models: list[dict], s: CellStyle) -> Rows:
    return [
        [
            s.text(m["judge_model"]),
            s.rubric(m),
            str(m["runs"]),
            str(m["annotations"]),
            str(m["judge_errors"]),
            str(m["replicates"]),
            str(m["non_blind"]),
            s.shown(fmt.money(m["cost_usd_total"])),
            s.shown(fmt.ms(m["latency_median_ms"])),
            s.shown(fmt.ms(m["latency_mean_excl_first_ms"])),
            f"{m['prompt_tokens']} / {m['completion_tokens']}",
        ]
        for m in models
    ]
