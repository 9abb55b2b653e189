"""`evalkit audit` output: the audit dict (:func:`evalkit.agreement.audit.build_audit`) as text.

``table`` (fixed-width plain text for a terminal) and ``markdown`` render the audit view model
(:mod:`evalkit.agreement.view`, the same sections the report shows); ``csv`` is one row per
statistic (tidy data for a spreadsheet); JSON is the dict itself (see ``audit_json``).
"""

from __future__ import annotations

import json
from typing import Any

from evalkit.agreement.view import audit_sections
from evalkit.present import Table, md_text, sanitize
from evalkit.present.to_markdown import markdown_lines
from evalkit.present.to_text import text_lines

CSV_COLUMNS = ("section", "name", "slice", "key", "statistic", "value", "reason")
# The tidy CSV lists, per pairing and per dimension, these fields around the registered statistics
# (evalkit.agreement.stats.registry, in its csv order); the tables show them through the view model.
CSV_PAIRING_COUNTS = (("n",), ("lenient", "strict", "brier", "ece", "n_with_confidence"))
CSV_RATER_COUNTS = (("n_items", "n_items_dropped"), ("n_excluded",))


def csv_stats(kind: str) -> list[str]:
    """The keys the csv lists for a pairing (``"pairs"``) or a dimension's raters (``"raters"``)."""
    from evalkit.agreement.stats import registry

    before, after = CSV_PAIRING_COUNTS if kind == "pairs" else CSV_RATER_COUNTS
    return [*before, *registry.csv_names(kind), *after]


# Disagreements a format lists when --top is not given (worst first): the csv lists none (it counts
# them); at 10^5 runs every one is hundreds of thousands of records, so json lists 20 too.
TOP_DEFAULT = 20
TOP_DEFAULTS = {"table": TOP_DEFAULT, "markdown": TOP_DEFAULT, "json": TOP_DEFAULT, "csv": 0}


def top_disagreements(report: dict[str, Any], top: int | None) -> dict[str, Any]:
    """The audit with its ranked disagreements cut to the ``top`` worst (``None``: all of them);
    ``disagreements_left_out`` says how many were cut. Every count and statistic stays the whole
    audit's: only the list is shortened."""
    items = report.get("disagreements") or []
    if top is None or len(items) <= top:
        return report
    left = len(items) - top + int(report.get("disagreements_left_out") or 0)
    return report | {"disagreements": items[:top], "disagreements_left_out": left}


def listed(fmt: str, top: int | None) -> int | None:
    """How many disagreements ``fmt`` lists for ``--top`` ``top`` (``None``: the format's default,
    :data:`TOP_DEFAULTS`; 0: every one, as the result None)."""
    if top is None:
        return TOP_DEFAULTS.get(fmt)
    return top or None


def render(report: dict[str, Any], fmt: str, top: int | None = None) -> str:
    """``evalkit audit``'s output in ``fmt``; ``top`` as ``--top`` (see :func:`listed`)."""
    return RENDERERS[fmt](top_disagreements(report, listed(fmt, top)))


def _header(report: dict[str, Any]) -> list[str]:
    c = report.get("counts", {})
    f = report.get("filters", {})
    filt = ", ".join(k if v is True else f"{k} {v}" for k, v in f.items() if v is not None and v is not False)
    return [
        f"evalkit audit: {c.get('scorecards', 0)} scorecards, {c.get('annotations', 0)} judge annotations "
        f"({c.get('non_blind_annotations', 0)} non-blind left out, {c.get('replicate_annotations', 0)} replicates), "
        f"{c.get('imported_ratings', 0)} imported ratings" + (f"; filters: {filt}" if filt else ""),
    ]


def audit_text(report: dict[str, Any]) -> str:
    out = [sanitize(line) for line in _header(report)] + text_lines(audit_sections(report))
    return "\n".join(out) + "\n"


def audit_markdown(report: dict[str, Any]) -> str:
    out = ["# evalkit audit", "", md_text(_header(report)[0]), ""] + markdown_lines(audit_sections(report), level=2)
    return "\n".join(out).rstrip("\n") + "\n"


def _csv_stats(
    rows: list[list[Any]], section: str, name: str, slice_kind: str, key: str, entry: dict[str, Any], keys: list[str]
) -> None:
    for k in keys:
        if k not in entry:
            continue
        v = entry[k]
        if isinstance(v, dict) and "value" in v:
            rows.append(
                [section, name, slice_kind, key, k, "" if v["value"] is None else v["value"], v.get("reason") or ""]
            )
            if v.get("ci_low") is not None:
                rows.append([section, name, slice_kind, key, k + "_ci_low", v["ci_low"], ""])
                rows.append([section, name, slice_kind, key, k + "_ci_high", v["ci_high"], ""])
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            rows.append([section, name, slice_kind, key, k, v, ""])


def audit_csv(report: dict[str, Any]) -> str:
    rows: list[list[Any]] = []
    pkeys = csv_stats("pairs")
    for e in report.get("pairings", []):
        _csv_stats(rows, "pairings", e["pairing"], "", "", e, pkeys)
        esc = e.get("escalation")
        if isinstance(esc, dict) and "escalated" in esc:
            for k in ("escalated", "misses", "misses_caught"):
                rows.append(["pairings", e["pairing"], "", "", f"escalation_{k}", esc[k], ""])
        for kind, entries in (e.get("slices") or {}).items():
            for s in entries:
                _csv_stats(rows, "pairings", e["pairing"], kind, s["key"], s, pkeys)
    for e in report.get("raters", []):
        _csv_stats(rows, "raters", e["dimension"], "", "", e, csv_stats("raters"))
        for t in e.get("alt_test") or []:
            for k in ("winning_rate", "advantage_prob"):
                rows.append(
                    [
                        "raters",
                        e["dimension"],
                        "alt_test",
                        t["judge"],
                        k,
                        "" if t[k] is None else t[k],
                        t.get("reason") or "",
                    ]
                )
        for c in e.get("judge_vs_mechanical") or []:
            pair = f"{c['judge']} vs {c['mechanical']}"
            _csv_stats(
                rows,
                "raters",
                e["dimension"],
                "judge_vs_mechanical",
                pair,
                c,
                ["n", "agree", "cohen_kappa", "lenient", "strict"],
            )
    # the ranked list itself is in the other formats; here, how many there are
    total = (report.get("counts") or {}).get("disagreements")
    if isinstance(total, int):
        rows.append(["disagreements", "", "", "", "n", total, ""])
    adjudications = report.get("adjudications") or []
    if any(e.get("verdicts") or e.get("not_disagreeing") for e in adjudications):  # as its section: only with verdicts
        for e in adjudications:
            for k in (
                "disagreements",
                "adjudicated",
                "verdicts",
                "not_disagreeing",
                "judge_errors",
                "scorer_errors",
                "ground_truth_errors",
                "both_wrong",
                "unclear",
            ):
                rows.append(["adjudications", e["pairing"], "", "", k, e[k], ""])
            _csv_stats(rows, "adjudications", e["pairing"], "", "", e, ["judge_error_rate", "mechanical_error_rate"])
    for j in report.get("drift", []):
        name = f"{j['judge_model']}@{j['rubric']}"
        rows.append(["drift", name, "", "", "n_replicates", j["n_replicates"], ""])
        rows.append(["drift", name, "", "", "n_flagged", j["n_flagged"], ""])
        for d in j["dimensions"]:
            _csv_stats(
                rows,
                "drift",
                name,
                "dimension",
                d["dimension"],
                d,
                ["n", "percent_agreement", "cohen_kappa", "weighted_kappa", "n_moved"],
            )
    for c in report.get("judge_costs", []):
        for k in (
            "n_calls",
            "cost_median_usd",
            "cost_mean_excluding_first_usd",
            "cost_total_usd",
            "latency_median_ms",
            "latency_mean_excluding_first_ms",
        ):
            rows.append(["judge_costs", c["judge_model"], "", "", k, "" if c[k] is None else c[k], ""])
    for e in report.get("probes", []):
        _csv_stats(
            rows,
            "probes",
            e["probe"],
            e["judge_model"],
            f"{e['rubric']}.{e['dimension']}",
            e,
            ["n", "unchanged_rate", "lenient_flip_rate", "strict_flip_rate", "fooled_rate"],
        )
    from evalkit.agreement.pairwise_view import csv_rows as pairwise_csv_rows

    rows += pairwise_csv_rows(report)
    from evalkit.agreement.length_bias import csv_rows as length_csv_rows

    rows += length_csv_rows(report)
    # Numbers stay numbers (csv writes a float as its repr); text cells are sanitized and
    # neutralised against formula injection by the kit.
    return Table(CSV_COLUMNS, rows).to_csv()


def audit_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def pairs_csv(rows: list[dict[str, Any]]) -> str:
    """--pairs-out: ``pairing, item_id, judge_model, judge_value, mechanical_value`` (labels on the
    pairing's scale; enough to recompute every pairing statistic)."""
    cols = ("pairing", "item_id", "judge_model", "judge_value", "mechanical_value")
    return Table(cols, [[r[c] for c in cols] for r in rows]).to_csv()


RENDERERS = {"table": audit_text, "markdown": audit_markdown, "csv": audit_csv, "json": audit_json}
