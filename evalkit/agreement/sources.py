"""Read-only access to the tables the audit reads: scorecards, annotations, judge calls, ratings.

The database is opened with SQLite's ``mode=ro`` URI flag, so the audit cannot write even by
mistake. A table that does not exist yet reads as empty (a database with scores but no judge run
is a valid input).
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from evalkit.agreement.ratings import Rating
from evalkit.errors import InputError

# Runs whose status says the agent never really ran are not compared with a judge: their
# mechanical signals describe infrastructure, not behaviour.
EXCLUDED_STATUSES = ("provider_error", "invalid_scenario")


def open_readonly(db_path: str | Path) -> sqlite3.Connection:
    path = Path(db_path)
    if not path.is_file():
        raise InputError(str(db_path), None, "no such database file")
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise InputError(str(db_path), None, f"not a readable SQLite database: {exc}") from None
    conn.row_factory = sqlite3.Row
    return conn


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
    return row is not None


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info([{table}])")}


def decode_value(raw: Any) -> Any:
    """annotation_values.value / ratings.value hold JSON; a non-JSON string is taken literally."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def label_value(raw: Any) -> Any:
    """A stored rating as a label: decoded, integral floats as integers (3.0 == 3, as the importer
    normalises), and a structured value (object/array) as its canonical JSON text so that it is
    still a hashable label rather than a crash."""
    v = decode_value(raw)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return v


@dataclass(frozen=True)
class Card:
    run_id: str
    scenario_id: str
    model: str
    path: str
    status: str
    card: dict[str, Any]


def iter_cards(conn: sqlite3.Connection) -> Iterator[Card]:
    if not has_table(conn, "scorecards"):
        return
    for row in conn.execute("SELECT run_id, scenario_id, model, status, card FROM scorecards ORDER BY run_id"):
        try:
            card = json.loads(row["card"]) if row["card"] else {}
        except json.JSONDecodeError:
            card = {}
        yield Card(
            run_id=row["run_id"],
            scenario_id=row["scenario_id"] or card.get("scenario_id") or "",
            model=row["model"] or card.get("model") or "",
            path=card.get("path") or "",
            status=row["status"] or card.get("status") or "",
            card=card,
        )


@dataclass(frozen=True)
class JudgeValue:
    """One dimension of one ok annotation."""

    annotation_id: str
    run_id: str
    judge_model: str
    rubric_id: str
    dimension: str
    value: Any
    confidence: float | None
    blind: bool
    replicate: int
    rationale: str
    created_at: str


def iter_judge_values(conn: sqlite3.Connection, judge: str | None = None, rubric: str | None = None) -> Iterator[JudgeValue]:
    """Values of ``ok`` annotations, ordered so that later answers come last (created_at, id)."""
    if not (has_table(conn, "annotation_values") and has_table(conn, "annotations")):
        return
    acols = columns(conn, "annotations")
    created = "a.created_at" if "created_at" in acols else "''"
    rationale = "a.rationale" if "rationale" in acols else "NULL"
    annotation = "a.annotation" if "annotation" in acols else "NULL"
    where, args = ["(a.status IS NULL OR a.status = 'ok')"], []
    if judge is not None:
        where.append("a.judge_model = ?")
        args.append(judge)
    if rubric is not None:
        where.append("a.rubric_id = ?")
        args.append(rubric)
    # One row per annotation first (rationale, JSON), then its values: the annotation JSON is
    # decoded at most once per annotation, and only when a column it backs up is empty.
    heads = {}
    for row in conn.execute(
        f"SELECT a.annotation_id, {rationale} AS rationale, {annotation} AS annotation, {created} AS created_at, "
        f"a.blind, a.replicate FROM annotations a WHERE {' AND '.join(where)}",
        args,
    ):
        heads[row[0]] = row
    docs: dict[Any, Any] = {}

    def doc_of(aid: Any) -> Any:
        if aid not in docs:
            docs[aid] = decode_value(heads[aid]["annotation"])
        return docs[aid]

    decoded: dict[Any, Any] = {}
    rows = conn.execute(
        "SELECT annotation_id, run_id, judge_model, rubric_id, dimension, value, confidence, blind, replicate "
        "FROM annotation_values"
    ).fetchall()
    keyed = []
    for row in rows:
        head = heads.get(row[0])
        if head is not None:
            keyed.append((str(head["created_at"] or ""), str(row[0]), row[4], row, head))
    keyed.sort(key=lambda k: k[:3])
    for created_at, aid, dimension, row, head in keyed:
        text = head["rationale"]
        if text is None:
            doc = doc_of(row[0])
            text = doc.get("rationale") if isinstance(doc, dict) and isinstance(doc.get("rationale"), str) else ""
        confidence = row[6]
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or confidence != confidence:
            confidence = None  # not a number (or NaN): no forecast
        if confidence is None and dimension == "outcome":
            # the rubric's single `confidence` belongs to `outcome` (procedure_v1)
            doc = doc_of(row[0])
            c = doc.get("confidence") if isinstance(doc, dict) else None
            if isinstance(c, (int, float)) and not isinstance(c, bool) and c == c:
                confidence = float(c)
        raw = row[5]
        if raw not in decoded:
            decoded[raw] = label_value(raw)
        blind = row[7] if row[7] is not None else head["blind"]
        replicate = row[8] if row[8] is not None else head["replicate"]
        yield JudgeValue(
            annotation_id=aid,
            run_id=str(row[1]),
            judge_model=row[2],
            rubric_id=row[3],
            dimension=dimension,
            value=decoded[raw],
            confidence=confidence,
            blind=bool(blind),
            replicate=int(replicate or 0),
            rationale=text or "",
            created_at=created_at,
        )


@dataclass(frozen=True)
class CallCost:
    judge_model: str
    cost_usd: float | None
    latency_ms: float | None
    order_key: tuple[str, str]


def iter_call_costs(conn: sqlite3.Connection, judge: str | None = None, rubric: str | None = None) -> tuple[str, list[CallCost]]:
    """Per-call cost/latency: from the judge cache (every call, failed ones too) when present,
    else from the annotations. Returns (source table, calls in call order)."""
    for table, ts, key in (("judge_calls", "started_at", "cache_key"), ("annotations", "created_at", "annotation_id")):
        if not has_table(conn, table):
            continue
        cols = columns(conn, table)
        if not {"judge_model", "cost_usd", "latency_ms"} <= cols:
            continue
        where, args = [], []
        if judge is not None:
            where.append("judge_model = ?")
            args.append(judge)
        if rubric is not None and "rubric_id" in cols:
            where.append("rubric_id = ?")
            args.append(rubric)
        tcol = ts if ts in cols else "''"
        sql = f"SELECT judge_model, cost_usd, latency_ms, {tcol} AS ts, {key} AS k FROM {table}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = [
            CallCost(r["judge_model"], r["cost_usd"], r["latency_ms"], (str(r["ts"] or ""), str(r["k"])))
            for r in conn.execute(sql, args)
        ]
        if not rows:
            continue  # an empty cache (e.g. after `evalkit cache clear`): fall back to annotations
        rows.sort(key=lambda c: (c.judge_model, c.order_key))
        return table, rows
    return "", []


def iter_stored_ratings(conn: sqlite3.Connection) -> Iterator[Rating]:
    if not has_table(conn, "ratings"):
        return
    for r in conn.execute(
        "SELECT item_id, rater, rater_kind, dimension, value, confidence FROM ratings ORDER BY item_id, rater, dimension"
    ):
        yield Rating(str(r["item_id"]), r["rater"], r["rater_kind"], r["dimension"], label_value(r["value"]), r["confidence"], "ratings")
