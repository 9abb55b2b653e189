"""Turn the audit's dict (:func:`evalkit.agreement.audit.build_audit`, docs/audit.md) into
render-neutral blocks.

Both renderers walk the same list of blocks, so the HTML and the markdown agreement sections hold
the same tables. A block is a dict with ``kind``:

- ``heading`` / ``text`` / ``absent``: ``text``;
- ``table``: ``headers``, ``rows`` (plain strings; the renderer escapes them), optional
  ``numeric`` (column indexes), ``run_column`` + ``linkable`` (cells that are run ids of this
  report, linked to the run table), ``quote_column`` (the judge's rationale), ``cls``, ``notes``
  (footnotes: why a statistic is undefined, referenced from cells as ``n/a (1)``),
  ``markdown_limit`` (rows shown in markdown, which must stay short enough for a PR comment);
- ``charts``: ``charts``, each ``{"type": "confusion", rows, cols, matrix, title, caption,
  row_axis, col_axis}`` or ``{"type": "reliability", bands, title, caption}``.

Only this module knows the audit's shape. It reads it defensively (a missing or empty section
gives an ``absent`` block, never an exception), so a report still renders from a partial audit.

Choices: confusion matrices and reliability diagrams are drawn per judge model (the audit's
``slices.judge``) because pooling two judges would hide which one disagrees; with a single judge
that is the overall figure. Statistics print to three decimals with their bootstrap interval in
brackets; an undefined statistic prints ``n/a`` with the audit's reason.
"""
from __future__ import annotations

import json
from typing import Any

from evalkit.report import fmt
from evalkit.self_judging import pairing_note

MARKDOWN_DISAGREEMENTS = 50


class Notes:
    """Footnotes of one table: each distinct reason for an undefined statistic gets a number, so
    a cell says ``n/a (1)`` and the reason is printed once under the table."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def ref(self, reason: str) -> str:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"n/a ({self.reasons.index(reason) + 1})"

    def lines(self) -> list[str]:
        return [f"({i + 1}) {r}" for i, r in enumerate(self.reasons)]


def stat_text(value: Any, notes: Notes | None = None) -> str:
    """A statistic as text: numbers to 3 places, ``{value, ci_low, ci_high}`` with its interval,
    ``{value: null, reason}`` as ``n/a`` with the reason as a footnote (or inline without notes)."""
    if isinstance(value, dict):
        if "value" not in value and "estimate" not in value:
            return json.dumps(value, sort_keys=True)
        inner = value.get("value", value.get("estimate"))
        if inner is None:
            reason = value.get("reason")
            if not reason:
                return "n/a"
            return notes.ref(str(reason)) if notes is not None else f"n/a ({reason})"
        text = stat_text(inner)
        lo, hi = value.get("ci_low"), value.get("ci_high")
        if lo is not None and hi is not None:
            text += f" [{stat_text(lo)}, {stat_text(hi)}]"
        return text
    if isinstance(value, bool) or value is None:
        return fmt.num(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return fmt.num(value, 3)
    if isinstance(value, (list, tuple)):
        return ", ".join(stat_text(v) for v in value)
    return str(value)


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _dicts(section: Any) -> list[dict]:
    return [e for e in section if isinstance(e, dict)] if isinstance(section, list) else []


def _confusion(entry: dict) -> tuple[list, list, list] | None:
    conf = entry.get("confusion_matrix")
    if not isinstance(conf, dict) or conf.get("matrix") is None or conf.get("labels") is None:
        return None
    labels = [_label(x) for x in conf["labels"]]
    return labels, labels, conf["matrix"]


def _bands(entry: dict) -> list[dict] | None:
    bands = entry.get("reliability_bands")
    if not isinstance(bands, list):
        return None
    norm = [
        {"lo": b.get("low"), "hi": b.get("high"), "n": b.get("n") or 0,
         "confidence": b.get("mean_confidence"), "accuracy": b.get("accuracy")}
        for b in _dicts(bands)
    ]
    return norm if any(b["n"] for b in norm) else None


PAIRING_COLUMNS = (
    ("n", "n"),
    ("percent_agreement", "agreement"),
    ("cohen_kappa", "Cohen \u03ba"),
    ("weighted_kappa", "weighted \u03ba"),
    ("krippendorff_alpha", "Krippendorff \u03b1"),
    ("gwet_ac1", "Gwet AC1"),
    ("spearman", "Spearman"),
    ("lenient", "lenient"),
    ("strict", "strict"),
)


def _pairings(audit: dict) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Judge against mechanical scores"}]
    entries = _dicts(audit.get("pairings"))
    if not any(e.get("n") for e in entries):
        return blocks + [{"kind": "absent", "text": "No blind judge annotation could be paired with a mechanical signal."}]
    blocks.append(
        {
            "kind": "text",
            "text": "Each pairing compares a judge dimension with a mechanical signal put on the judge's scale "
            "(configs/pairings.toml). Lenient: the judge grants more credit than the mechanical score "
            "(says pass when the run failed, safe when a forbidden command ran); strict: less. "
            "Intervals are bootstrap intervals over runs.",
        }
    )
    headers = ["pairing", "level"] + [label for _, label in PAIRING_COLUMNS]
    notes = Notes()
    rows = [[str(e.get("pairing")), str(e.get("level", ""))] + [stat_text(e.get(k), notes) for k, _ in PAIRING_COLUMNS]
            for e in entries]
    self_judged = [line for e in entries if (line := pairing_note(e))]
    blocks.append({"kind": "table", "headers": headers, "rows": rows, "cls": "pairings",
                   "numeric": list(range(2, len(headers))), "notes": notes.lines() + self_judged})

    per_judge = [(e, s) for e in entries for s in _dicts((e.get("slices") or {}).get("judge"))]
    if per_judge:
        blocks.append({"kind": "heading", "text": "Per judge model"})
        headers = ["pairing", "judge model"] + [label for _, label in PAIRING_COLUMNS]
        notes = Notes()
        rows = [[str(e.get("pairing")), str(s.get("key"))] + [stat_text(s.get(k), notes) for k, _ in PAIRING_COLUMNS]
                for e, s in per_judge]
        blocks.append({"kind": "table", "headers": headers, "rows": rows, "cls": "pairings-by-judge",
                       "numeric": list(range(2, len(headers))), "notes": notes.lines()})

    calibrated = [(e, s) for e, s in per_judge if s.get("n_with_confidence")] or [
        (e, {"key": "all judges", **e}) for e in entries if e.get("n_with_confidence")
    ]
    if calibrated:
        blocks.append({"kind": "heading", "text": "Calibration of the judge's confidence"})
        blocks.append(
            {
                "kind": "text",
                "text": "Brier: multi-class Brier score of the judge's confidence against the mechanical label "
                "(0 perfect). ECE: expected calibration error. Escalation: runs whose confidence is under the "
                "threshold would go to a human; 'caught' counts the disagreements among them.",
            }
        )
        rows = []
        notes = Notes()
        for e, s in calibrated:
            esc = s.get("escalation") if isinstance(s.get("escalation"), dict) else {}
            rows.append([
                str(e.get("pairing")), str(s.get("key")), stat_text(s.get("n_with_confidence")),
                stat_text(s.get("brier"), notes), stat_text(s.get("ece"), notes), stat_text(esc.get("threshold")),
                stat_text(esc.get("escalated")), stat_text(esc.get("misses")), stat_text(esc.get("misses_caught")),
            ])
        blocks.append({"kind": "table", "cls": "calibration", "rows": rows, "numeric": list(range(2, 9)),
                       "notes": notes.lines(),
                       "headers": ["pairing", "judge model", "n with confidence", "Brier", "ECE",
                                   "escalation threshold", "escalated", "disagreements", "caught"]})

    charts = []
    for e in entries:
        slices = _dicts((e.get("slices") or {}).get("judge")) or [{"key": "all judges", **e}]
        for s in slices:
            label = f"{e.get('pairing')} \u00b7 {s.get('key')}"
            conf = _confusion(s)
            if conf and s.get("n"):
                r, c, m = conf
                charts.append({"type": "confusion", "rows": r, "cols": c, "matrix": m,
                               "title": f"Confusion matrix {label}",
                               "caption": f"{label}: rows judge, columns mechanical (n={s.get('n')})",
                               "row_axis": "judge", "col_axis": "mechanical"})
    for e in entries:
        slices = _dicts((e.get("slices") or {}).get("judge")) or [{"key": "all judges", **e}]
        for s in slices:
            bands = _bands(s)
            if bands:
                label = f"{e.get('pairing')} \u00b7 {s.get('key')}"
                charts.append({"type": "reliability", "bands": bands, "title": f"Reliability diagram {label}",
                               "caption": f"{label}: stated confidence against agreement with the mechanical label"})
    if charts:
        blocks.append({"kind": "heading", "text": "Confusion matrices and reliability"})
        blocks.append({"kind": "charts", "charts": charts})
    return blocks


RATER_COLUMNS = (
    ("n_items", "items"),
    ("percent_agreement", "pairwise agreement"),
    ("cohen_kappa", "Cohen \u03ba"),
    ("weighted_kappa", "weighted \u03ba"),
    ("fleiss_kappa", "Fleiss \u03ba"),
    ("krippendorff_alpha", "Krippendorff \u03b1"),
    ("gwet_ac1", "Gwet AC1"),
)


def _raters(audit: dict) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Raters: judge against judge and human"}]
    entries = _dicts(audit.get("raters"))
    if not entries:
        blocks.append({"kind": "absent", "text": "No dimension has two or more raters on the same items yet."})
    else:
        headers = ["dimension", "raters", "level"] + [label for _, label in RATER_COLUMNS]
        notes = Notes()
        rows = [[str(e.get("dimension")), ", ".join(map(str, e.get("raters") or [])), str(e.get("level", ""))]
                + [stat_text(e.get(k), notes) for k, _ in RATER_COLUMNS] for e in entries]
        blocks.append({"kind": "table", "headers": headers, "rows": rows, "cls": "raters",
                       "numeric": list(range(3, len(headers))), "notes": notes.lines()})
        pairs = []
        for e in entries:
            matrix = e.get("pairwise_cohen_kappa")
            if isinstance(matrix, dict) and len(matrix.get("raters") or []) > 2:
                for p in _dicts(matrix.get("pairs")):
                    pairs.append([str(e.get("dimension")), " / ".join(map(str, p.get("raters") or [])),
                                  stat_text(p.get("n")), stat_text(p)])
        if pairs:
            blocks.append({"kind": "heading", "text": "Pairwise Cohen \u03ba"})
            blocks.append({"kind": "table", "headers": ["dimension", "raters", "items", "Cohen \u03ba"],
                           "rows": pairs, "cls": "pairwise", "numeric": [2, 3]})
        alt = [(e, t) for e in entries for t in _dicts(e.get("alt_test"))]
        if alt:
            blocks.append({"kind": "heading", "text": "Alternative Annotator Test"})
            blocks.append({
                "kind": "table", "cls": "alt-test", "numeric": [3, 4, 5],
                "headers": ["dimension", "judge", "humans", "winning rate \u03c9", "advantage \u03c1", "\u03b5",
                            "passed", "note"],
                "rows": [[str(e.get("dimension")), str(t.get("judge")), ", ".join(map(str, t.get("humans") or [])),
                          stat_text(t.get("winning_rate")), stat_text(t.get("advantage_prob")),
                          stat_text(t.get("epsilon")), stat_text(t.get("passed")), str(t.get("reason") or "")]
                         for e, t in alt],
            })
    skipped = _dicts(audit.get("raters_skipped"))
    if skipped:
        blocks.append({"kind": "text", "text": "Not compared: " + "; ".join(
            f"{s.get('dimension')} ({s.get('reason')})" for s in skipped)})
    return blocks


DISAGREEMENT_COLUMNS = (
    ("run_id", "run"),
    ("pairing", "pairing"),
    ("scenario_id", "scenario"),
    ("model", "agent model"),
    ("judge_model", "judge model"),
    ("judge_value", "judge"),
    ("mechanical_value", "mechanical"),
    ("direction", "direction"),
    ("gap", "gap"),
    ("rationale", "judge's rationale"),
    ("path", "trajectory"),
)


def _disagreements(audit: dict, run_ids: set[str]) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Disagreements, ranked"}]
    items = _dicts(audit.get("disagreements"))
    if not items:
        return blocks + [{"kind": "absent", "text": "No disagreement between the judge and the mechanical scores."}]
    blocks.append(
        {
            "kind": "text",
            "text": f"{len(items)} disagreements: lenient on safety first, then lenient on outcome, then by the "
            "size of the gap. The rationale is the judge's own text, quoted as data.",
        }
    )
    rows = []
    for item in items:
        row = []
        for key, _ in DISAGREEMENT_COLUMNS:
            value = item.get(key)
            if key == "judge_value" and item.get("judge_raw") not in (None, value):
                value = f"{_label(item['judge_raw'])} \u2192 {_label(value)}"
            row.append("" if value is None else _label(value))
        rows.append(row)
    blocks.append(
        {
            "kind": "table", "headers": [label for _, label in DISAGREEMENT_COLUMNS], "rows": rows,
            "cls": "disagreements", "run_column": 0, "linkable": sorted(run_ids), "quote_column": 9,
            "numeric": [8], "markdown_limit": MARKDOWN_DISAGREEMENTS,
        }
    )
    return blocks


def _drift(audit: dict) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Judge drift (test\u2013retest)"}]
    judges = _dicts(audit.get("drift"))
    if not judges:
        return blocks + [{"kind": "absent", "text": "No replicates yet (`evalkit judge --resample 0.1 --seed S`)."}]
    rows = [[str(j.get("judge_model")), str(j.get("rubric")), stat_text(j.get("n_replicates")),
             stat_text(j.get("n_flagged")), fmt.pct(j.get("flagged_share"))] for j in judges]
    blocks.append({"kind": "text", "text": "A replicate is flagged when more than one dimension moved by 2 or "
                   "more from the first answer (seed 002)."})
    blocks.append({"kind": "table", "headers": ["judge model", "rubric", "replicates", "flagged", "flagged share"],
                   "rows": rows, "cls": "drift", "numeric": [2, 3, 4]})
    notes = Notes()
    dims = [[str(j.get("judge_model")), str(d.get("dimension")), stat_text(d.get("n")),
             stat_text(d.get("percent_agreement"), notes), stat_text(d.get("cohen_kappa"), notes),
             stat_text(d.get("weighted_kappa"), notes), stat_text(d.get("n_moved"))]
            for j in judges for d in _dicts(j.get("dimensions"))]
    if dims:
        blocks.append({"kind": "table", "cls": "drift-dimensions", "rows": dims, "numeric": [2, 3, 4, 5, 6],
                       "notes": notes.lines(),
                       "headers": ["judge model", "dimension", "n", "agreement", "Cohen \u03ba", "weighted \u03ba",
                                   "moved \u2265 2"]})
    return blocks


def judge_cost_blocks(audit: dict) -> list[dict]:
    """The audit's per-call cost and latency (from judge_calls when the judge layer keeps it)."""
    costs = _dicts(audit.get("judge_costs"))
    if not costs:
        return []
    rows = [[str(c.get("judge_model")), str(c.get("source")), stat_text(c.get("n_calls")),
             fmt.money(c.get("cost_total_usd")), fmt.money(c.get("cost_median_usd")),
             fmt.money(c.get("cost_mean_excluding_first_usd")), fmt.ms(c.get("latency_median_ms")),
             fmt.ms(c.get("latency_mean_excluding_first_ms"))] for c in costs]
    return [
        {"kind": "heading", "text": "Per call (every call the judge made)"},
        {"kind": "table", "cls": "judge-calls", "rows": rows, "numeric": list(range(2, 8)),
         "headers": ["judge model", "source", "calls", "cost total", "cost median", "cost mean (excl. first)",
                     "latency median", "latency mean (excl. first)"]},
    ]


def agreement_blocks(audit: dict, run_ids: set[str]) -> list[dict]:
    """The agreement section as blocks, in reading order."""
    return _pairings(audit) + _raters(audit) + _disagreements(audit, run_ids) + _drift(audit)
