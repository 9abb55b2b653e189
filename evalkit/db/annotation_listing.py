"""`evalkit annotations list`: the stored judge annotations, read-only, in every ``--format``.

One row per annotation that is not stale (its run's transcript is still the one judged), ok or
not, ordered by judge model, rubric, run, replicate and time: who judged, which run, blind or not,
the scores (every dimension the annotation holds), the outcome confidence and the rationale.
``table`` cuts the rationale to fit a line (:data:`RATIONALE_IN_TABLE`); markdown, csv, json and
jsonl keep it whole. JSON is ``{"schema": "evalkit.annotations/1", "annotations": [...]}``, jsonl
one annotation per line. Text from the database is sanitized in table and markdown cells and
neutralised in CSV cells by the presentation kit.
"""

from __future__ import annotations

import json
from typing import Any

from evalkit.present import Table

FORMATS = ("table", "json", "jsonl", "csv", "markdown")
SCHEMA = "evalkit.annotations/1"
RATIONALE_IN_TABLE = 60
COLUMNS = (
    "judge_model",
    "rubric",
    "run_id",
    "status",
    "blind",
    "replicate",
    "created_at",
    "scores",
    "confidence",
    "rationale",
)


def annotation_listing(
    db: Any, judge: str | None = None, rubric: str | None = None, run: str | None = None
) -> list[dict[str, Any]]:
    """The annotations of an open read-only :class:`evalkit.db.Database`, as plain dicts;
    ``judge`` is resolved as everywhere (an unknown name raises ``JudgeNotStored``)."""
    from evalkit.db.judge import label_value, read_annotation_rows

    heads = [
        a
        for a in read_annotation_rows(db, judge=judge)
        if (rubric is None or a["rubric_id"] == rubric) and (run is None or a["run_id"] == run)
    ]
    wanted = {a["annotation_id"] for a in heads}
    values: dict[str, dict[str, Any]] = {}
    confidence: dict[str, float] = {}
    # sqlite3 rows: this command imports nothing heavy, and sqlite-utils would load numpy and pandas
    for row in db.rows(
        "SELECT annotation_id, dimension, value, confidence FROM annotation_values ORDER BY annotation_id, dimension"
    ):
        if row[0] in wanted:
            values.setdefault(row[0], {})[row[1]] = label_value(row[2])
            if isinstance(row[3], (int, float)) and not isinstance(row[3], bool):
                confidence[row[0]] = row[3]
    out = []
    for a in heads:
        rationale = a["rationale"]
        if not isinstance(rationale, str):
            try:
                doc = json.loads(a["annotation"]) if isinstance(a["annotation"], str) else {}
            except ValueError:
                doc = {}
            rationale = doc.get("rationale") if isinstance(doc, dict) and isinstance(doc.get("rationale"), str) else ""
        out.append(
            {
                "judge_model": a["judge_model"],
                "rubric": a["rubric_id"],
                "rubric_version": a["rubric_version"],
                "run_id": a["run_id"],
                "status": a["status"],
                "blind": bool(a["blind"]),
                "replicate": a["replicate"],
                "created_at": a["created_at"],
                "scores": values.get(a["annotation_id"], {}),
                "confidence": confidence.get(a["annotation_id"]),
                "rationale": rationale,
            }
        )
    out.sort(
        key=lambda a: (
            str(a["judge_model"]),
            str(a["rubric"]),
            str(a["run_id"]),
            a["replicate"] or 0,
            str(a["created_at"] or ""),
        )
    )
    return out


def _scores(scores: dict[str, Any]) -> str:
    return " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in scores.items())


def _rows(items: list[dict[str, Any]], cut: int | None) -> list[list[Any]]:
    rows = []
    for a in items:
        text = " ".join((a["rationale"] or "").split())
        if cut is not None and len(text) > cut:
            text = text[: cut - 3] + "..."
        rows.append(
            [
                a["judge_model"],
                a["rubric"],
                a["run_id"],
                a["status"],
                "yes" if a["blind"] else "no",
                a["replicate"],
                a["created_at"],
                _scores(a["scores"]),
                "" if a["confidence"] is None else a["confidence"],
                text,
            ]
        )
    return rows


def render(items: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"schema": SCHEMA, "annotations": items}, indent=2, ensure_ascii=False) + "\n"
    if fmt == "jsonl":
        return "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in items)
    empty = "no annotation (run evalkit judge first)"
    if fmt == "csv":
        return Table(COLUMNS, _rows(items, None)).to_csv()
    if fmt == "markdown":
        return "\n".join(Table(COLUMNS, _rows(items, None), empty=empty).markdown_lines()) + "\n"
    return "\n".join(Table(COLUMNS, _rows(items, RATIONALE_IN_TABLE), empty=empty).text_lines()) + "\n"
