"""Turn the audit's dict (:func:`evalkit.agreement.audit.build_audit`) into render-neutral blocks.

Both renderers walk the same list of blocks, so the HTML and the markdown agreement sections hold
the same tables. A block is a dict with ``kind``:

- ``heading`` / ``text`` / ``absent``: ``text``;
- ``table``: ``headers``, ``rows`` (plain strings; the renderer escapes them), optional
  ``numeric`` (column indexes), ``run_column`` + ``linkable`` (cells that are run ids of this
  report, linked to the run table), ``quote_column`` (rationale text), ``cls``;
- ``charts``: ``charts``, each ``{"type": "confusion", rows, cols, matrix, title, caption,
  row_axis, col_axis}`` or ``{"type": "reliability", bands, title, caption}``.

Only this module knows the audit's shape; it reads it defensively (a missing section gives an
``absent`` block, never an exception) so a report still renders from an older or partial audit.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from evalkit.report import fmt

PAIRING_STATS = (
    ("n", "n"),
    ("percent_agreement", "agreement"),
    ("cohen_kappa", "Cohen \u03ba"),
    ("weighted_kappa", "weighted \u03ba"),
    ("krippendorff_alpha", "Krippendorff \u03b1"),
    ("gwet_ac1", "Gwet AC1"),
    ("spearman", "Spearman"),
    ("lenient", "lenient"),
    ("strict", "strict"),
    ("brier", "Brier"),
    ("ece", "ECE"),
)
RATER_STATS = (
    ("n", "items"),
    ("percent_agreement", "pairwise agreement"),
    ("fleiss_kappa", "Fleiss \u03ba"),
    ("krippendorff_alpha", "Krippendorff \u03b1"),
    ("gwet_ac1", "Gwet AC1"),
)


def stat_text(value: Any) -> str:
    """A statistic as text: numbers to 3 places, ``{value, ci_low, ci_high}`` with its interval,
    ``null`` with a reason as ``n/a (reason)``."""
    if isinstance(value, dict):
        inner = value.get("value", value.get("estimate"))
        if inner is None:
            reason = value.get("reason") or value.get("undefined_reason")
            return f"n/a ({reason})" if reason else "n/a"
        text = stat_text(inner)
        lo = value.get("ci_low", value.get("lo"))
        hi = value.get("ci_high", value.get("hi"))
        ci = value.get("ci")
        if isinstance(ci, (list, tuple)) and len(ci) == 2:
            lo, hi = ci
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


def _entries(section: Any, name_keys: tuple[str, ...]) -> list[tuple[str, dict]]:
    """A section may be a list of dicts or a mapping name -> dict; return (name, entry) sorted."""
    out: list[tuple[str, dict]] = []
    if isinstance(section, dict):
        for key, value in section.items():
            if isinstance(value, dict):
                out.append((str(key), value))
    elif isinstance(section, list):
        for value in section:
            if isinstance(value, dict):
                name = next((str(value[k]) for k in name_keys if value.get(k) is not None), "")
                out.append((name, value))
    return out


def _confusion(entry: dict) -> tuple[list, list, list] | None:
    conf = entry.get("confusion") or entry.get("confusion_matrix")
    if not conf:
        return None
    if isinstance(conf, dict):
        matrix = conf.get("matrix") or conf.get("counts")
        labels = conf.get("labels")
        rows = conf.get("rows") or conf.get("row_labels") or labels
        cols = conf.get("cols") or conf.get("columns") or conf.get("col_labels") or labels
        if matrix is None and rows is None:
            # {row_label: {col_label: count}}
            rows = sorted(conf)
            cols = sorted({c for r in conf.values() if isinstance(r, dict) for c in r})
            matrix = [[conf[r].get(c, 0) for c in cols] for r in rows]
        if matrix is not None and rows is not None and cols is not None:
            return list(rows), list(cols), matrix
    return None


def _bands(entry: dict) -> list[dict] | None:
    bands = entry.get("reliability") or entry.get("bands") or entry.get("reliability_bands")
    if isinstance(bands, dict):
        bands = bands.get("bands")
    if not isinstance(bands, list) or not bands:
        return None
    norm = []
    for b in bands:
        if not isinstance(b, dict):
            continue
        norm.append(
            {
                "lo": b.get("lo", b.get("low", b.get("lower"))),
                "hi": b.get("hi", b.get("high", b.get("upper"))),
                "n": b.get("n", b.get("count", 0)),
                "confidence": b.get("confidence", b.get("mean_confidence", b.get("avg_confidence"))),
                "accuracy": b.get("accuracy", b.get("agreement")),
            }
        )
    return norm or None


def _stats_row(entry: dict, stats: Iterable[tuple[str, str]]) -> list[str]:
    overall = entry.get("overall") if isinstance(entry.get("overall"), dict) else entry
    return [stat_text(overall.get(key)) for key, _ in stats]


def _pairings(audit: dict) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Judge against mechanical scores"}]
    entries = _entries(audit.get("pairings"), ("pairing", "name", "dimension"))
    if not entries:
        return blocks + [{"kind": "absent", "text": "No judge annotation could be paired with a mechanical signal."}]
    blocks.append(
        {
            "kind": "text",
            "text": "Lenient: the judge grants more credit than the mechanical score (says pass when the run "
            "failed, safe when a forbidden command ran); strict: less.",
        }
    )
    headers = ["pairing", "judge model"] + [label for _, label in PAIRING_STATS]
    rows = []
    charts = []
    for name, entry in entries:
        overall = entry.get("overall") if isinstance(entry.get("overall"), dict) else entry
        judge = entry.get("judge_model") or overall.get("judge_model") or ""
        rows.append([name, str(judge)] + _stats_row(entry, PAIRING_STATS))
        label = f"{name} ({judge})" if judge else name
        conf = _confusion(overall) or _confusion(entry)
        if conf:
            r, c, m = conf
            charts.append(
                {
                    "type": "confusion", "rows": r, "cols": c, "matrix": m,
                    "title": f"Confusion matrix: {label}", "caption": f"{label}: rows judge, columns mechanical",
                    "row_axis": "judge", "col_axis": "mechanical",
                }
            )
        bands = _bands(overall) or _bands(entry)
        if bands:
            charts.append(
                {
                    "type": "reliability", "bands": bands, "title": f"Reliability: {label}",
                    "caption": f"{label}: judge outcome confidence against agreement with the mechanical score",
                }
            )
    blocks.append({"kind": "table", "headers": headers, "rows": rows, "cls": "pairings",
                   "numeric": list(range(2, len(headers)))})
    if charts:
        blocks.append({"kind": "charts", "charts": charts})
    return blocks


def _raters(audit: dict) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Raters: judge against judge and human"}]
    entries = _entries(audit.get("raters"), ("dimension",))
    if not entries:
        return blocks + [{"kind": "absent", "text": "No dimension has two or more raters yet."}]
    headers = ["dimension", "raters"] + [label for _, label in RATER_STATS]
    rows = []
    for name, entry in entries:
        raters = entry.get("raters") or []
        rows.append([str(entry.get("dimension", name)), ", ".join(map(str, raters))] + _stats_row(entry, RATER_STATS))
    blocks.append({"kind": "table", "headers": headers, "rows": rows, "cls": "raters",
                   "numeric": list(range(2, len(headers)))})
    return blocks


DISAGREEMENT_COLUMNS = (
    ("run_id", "run"),
    ("scenario_id", "scenario"),
    ("model", "agent model"),
    ("judge_model", "judge model"),
    ("pairing", "pairing"),
    ("judge_value", "judge"),
    ("mechanical_value", "mechanical"),
    ("direction", "direction"),
    ("rationale", "judge's rationale"),
)


def _disagreements(audit: dict, run_ids: set[str]) -> list[dict]:
    blocks: list[dict] = [{"kind": "heading", "text": "Disagreements, ranked"}]
    items = audit.get("disagreements")
    if not isinstance(items, list) or not items:
        return blocks + [{"kind": "absent", "text": "No disagreement between the judge and the mechanical scores."}]
    blocks.append(
        {
            "kind": "text",
            "text": "Lenient safety disagreements first, then lenient outcome, then by size of the gap. "
            "The rationale is the judge's own text, quoted as data.",
        }
    )
    rows = []
    for item in items:
        row = []
        for key, _ in DISAGREEMENT_COLUMNS:
            value = item.get(key)
            if value is None and key == "run_id":
                value = item.get("item_id")
            if value is None and key == "rationale":
                value = item.get("rationale_excerpt")
            row.append("" if value is None else value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        rows.append(row)
    blocks.append(
        {
            "kind": "table", "headers": [label for _, label in DISAGREEMENT_COLUMNS], "rows": rows,
            "cls": "disagreements", "run_column": 0, "linkable": sorted(run_ids), "quote_column": 8,
        }
    )
    return blocks


def _generic(title: str, section: Any, empty: str) -> list[dict]:
    """A flat table for sections whose fields the report does not interpret (drift, costs)."""
    blocks: list[dict] = [{"kind": "heading", "text": title}]
    entries = section if isinstance(section, list) else [section] if isinstance(section, dict) and section else []
    entries = [e for e in entries if isinstance(e, dict)]
    if not entries:
        return blocks + [{"kind": "absent", "text": empty}]
    headers = sorted({k for e in entries for k, v in e.items() if not isinstance(v, (dict, list))})
    rows = [[stat_text(e.get(h)) for h in headers] for e in entries]
    return blocks + [{"kind": "table", "headers": headers, "rows": rows, "cls": "audit-extra"}]


def agreement_blocks(audit: dict, run_ids: set[str]) -> list[dict]:
    """The agreement section as blocks, in reading order."""
    return (
        _pairings(audit)
        + _raters(audit)
        + _disagreements(audit, run_ids)
        + _generic("Judge drift (test\u2013retest)", audit.get("drift"), "No replicates yet (`evalkit judge --resample`).")
        + _generic("Judge cost and latency (audit)", audit.get("judge_costs"), "No judge calls recorded.")
    )
