"""Tables of the uncertainty results: `evalkit compare` (paired comparisons) and `evalkit plan`,
built once for the CLI (text, markdown, csv) and the report (markdown, html)."""

from __future__ import annotations

from typing import Any

from evalkit.present.table import Table, scalar_text

METRIC_LABELS = {
    "score_mean": "score",
    "pass_rate": "pass rate",
    "safe_pass_rate": "safe pass rate",
    "unsafe_rate": "unsafe rate",
}


def p_value(value: float | None) -> str | float | None:
    if value is None:
        return None
    return "<0.001" if value < 0.001 else value


CORRECTION_NAMES = {
    "holm": "Holm (family-wise error)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
    "none": "no correction",
}


def family_text(comparison: dict[str, Any]) -> str:
    """The comparison's family and correction in one phrase, as the report names it: ``one family of
    12 tests (every pair of the 3 models × score, pass rate, safe pass rate, unsafe rate), adjusted
    together by Holm (family-wise error)``."""
    metrics = list(dict.fromkeys(METRIC_LABELS.get(r["metric"], r["metric"]) for r in comparison["rows"]))
    pairs = "every pair of the" if comparison.get("baseline") is None else f"{comparison['baseline']} against the"
    return (
        f"one family of {comparison['family']} tests ({pairs} {len(comparison['models'])} models \u00d7 "
        f"{', '.join(metrics)}), adjusted together by {CORRECTION_NAMES[comparison['correction']]}"
    )


def comparison_table(comparison: dict[str, Any]) -> Table:
    level = f"{comparison['level']:.0%}"
    correction = comparison["correction"]
    adjusted = "p adjusted" if correction == "none" else f"p ({correction})"
    headers = [
        "baseline",
        "candidate",
        "metric",
        "scenarios",
        "baseline mean",
        "candidate mean",
        "delta",
        f"{level} CI low",
        f"{level} CI high",
        "p",
        adjusted,
        "verdict",
    ]
    rows = []
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for r in comparison["rows"]:
        ci = r["delta_ci"] or [None, None]
        metric = METRIC_LABELS.get(r["metric"], r["metric"])
        rows.append(
            [
                r["baseline"],
                r["candidate"],
                metric,
                r["scenarios"],
                r["baseline_mean"],
                r["candidate_mean"],
                r["delta"],
                ci[0],
                ci[1],
                p_value(r["p_value"]),
                p_value(r["p_adjusted"]),
                r["verdict"],
            ]
        )
        if r["reason"]:
            reasons.setdefault((r["candidate"], r["baseline"], r["reason"]), []).append(metric)
    family = comparison["family"]
    method = CORRECTION_NAMES[correction]
    tested = (
        f"p-values of {family} test(s) adjusted by {method}; significant when the adjusted p < "
        f"{1 - comparison['level']:.2g}"
        if family
        else "no pair of models shares 2 scenarios: nothing could be tested"
    )
    notes = [f"{comparison['test']}; delta = candidate - baseline; {level} t intervals; {tested}."]
    if any(r["metric"] == "unsafe_rate" for r in comparison["rows"]):
        notes.append(
            "unsafe rate: runs with a forbidden command of any severity; lower is better, so a "
            "significant positive delta is worse."
        )
    notes += [f"{cand} vs {base} ({', '.join(metrics)}): {reason}" for (cand, base, reason), metrics in reasons.items()]
    if len(comparison["models"]) < 2:
        notes = []  # nothing was compared: the empty text says why
    empty = "fewer than two models: nothing to compare" if len(comparison["models"]) < 2 else "no comparison"
    return Table(
        headers,
        rows,
        notes=notes,
        title="Paired comparison",
        empty=empty,
        numeric=set(range(3, 11)),
        display=scalar_text,
    )


def power_text(power: float) -> str:
    """A power to two decimals, never rounded onto certainty: 0.998 is "> 0.99", not "1.00"."""
    if 0.995 <= power < 1.0:
        return "> 0.99"
    if 0.0 < power < 0.005:
        return "< 0.01"
    return f"{power:.2f}"


def plan_tables(plan: dict[str, Any]) -> list[Table]:
    tables = []
    for m in plan["metrics"]:
        label = METRIC_LABELS.get(m["metric"], m["metric"])
        rows = [[r["runs_per_scenario"], r["scenarios"], r["runs_per_model"]] for r in m["needed"]]
        notes = [
            f"run-to-run sd within a scenario: {m['sd_within']:.3f} ({m['sd_within_source']})",
            "sd across scenarios of the difference between two models: "
            f"{m['sd_between']:.3f} ({m['sd_between_source']})",
        ]
        current = m["current"]
        if current:
            notes.append(
                f"the current data ({current['scenarios']} scenarios x {current['runs_per_scenario']} runs) "
                f"detect a difference of {plan['delta']:g} with power {power_text(current['power'])}"
            )
        tables.append(
            Table(
                ["runs per scenario", "scenarios needed", "runs per model"],
                rows,
                notes=notes,
                title=f"{label}: to detect a difference of {plan['delta']:g}",
                numeric={0, 1, 2},
                display=scalar_text,
            )
        )
    return tables
