"""The judge's SQLite tables: the call cache, annotations and their per-dimension values.

Same database file as the scores (docs/architecture.md lists the columns). Every finished call is
written in one short `BEGIN IMMEDIATE` transaction (call row + annotation + values), so a killed
process leaves either all of a call or none of it, and two processes can share the file (WAL,
busy timeout). Writes are upserts on deterministic keys: re-running never duplicates rows.

Rules kept here:
- a failure never overwrites a stored success (neither the cached call nor the annotation);
- only `status = 'ok'` calls are cache hits (`get_ok`); failures are retried on the next run;
- scorecard tables are never touched.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import sqlite_utils

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_calls (
    cache_key TEXT PRIMARY KEY, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT,
    rubric_version INTEGER, rubric_hash TEXT, params TEXT, request TEXT, raw_response TEXT,
    status TEXT NOT NULL, error TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost_usd REAL, latency_ms REAL, attempts INTEGER, started_at TEXT, finished_at TEXT
);
CREATE TABLE IF NOT EXISTS annotations (
    annotation_id TEXT PRIMARY KEY, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT,
    rubric_version INTEGER, rubric_hash TEXT, blind INTEGER, replicate INTEGER, status TEXT NOT NULL,
    annotation TEXT, rationale TEXT, cost_usd REAL, latency_ms REAL, prompt_tokens INTEGER,
    completion_tokens INTEGER, cache_key TEXT, created_at TEXT
);
CREATE TABLE IF NOT EXISTS annotation_values (
    annotation_id TEXT, run_id TEXT, judge_model TEXT, rubric_id TEXT, dimension TEXT, value TEXT,
    confidence REAL, blind INTEGER, replicate INTEGER, PRIMARY KEY (annotation_id, dimension)
);
CREATE INDEX IF NOT EXISTS idx_annotations_run ON annotations (run_id, judge_model, rubric_id);
CREATE INDEX IF NOT EXISTS idx_judge_calls_model ON judge_calls (judge_model, rubric_id);
"""

_CALL_COLS = ("cache_key", "run_id", "bundle_hash", "judge_model", "rubric_id", "rubric_version",
              "rubric_hash", "params", "request", "raw_response", "status", "error", "prompt_tokens",
              "completion_tokens", "cost_usd", "latency_ms", "attempts", "started_at", "finished_at")
_ANN_COLS = ("annotation_id", "run_id", "bundle_hash", "judge_model", "rubric_id", "rubric_version",
             "rubric_hash", "blind", "replicate", "status", "annotation", "rationale", "cost_usd",
             "latency_ms", "prompt_tokens", "completion_tokens", "cache_key", "created_at")


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(*, bundle_hash: str, rubric: dict, model: str, params: dict, schema: str,
              blind: bool, extra: dict | None = None) -> str:
    """sha256 over everything that can change the answer (see docs/judge.md)."""
    material = {"bundle_hash": bundle_hash, "rubric": rubric, "model": model, "params": params,
                "schema": schema, "blind": bool(blind)}
    if extra:
        material["extra"] = extra
    return _sha(json.dumps(material, sort_keys=True, separators=(",", ":")))


def annotation_id(*, run_id: str, model: str, rubric_id: str, rubric_version: int, blind: bool,
                  replicate_tag: str) -> str:
    """One annotation per (run, judge model, rubric id+version, blind, replicate tag): the latest
    answer replaces an earlier one (e.g. after a rubric edit); the cache keeps every call."""
    return _sha(json.dumps([run_id, model, rubric_id, rubric_version, int(bool(blind)), replicate_tag]))


class JudgeStore:
    def __init__(self, path: str | Path):
        self.path = str(path)
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 60000")
        self.db = sqlite_utils.Database(conn)
        self.db.enable_wal()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(_SCHEMA)

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def close(self) -> None:
        self.conn.close()

    # -- reads ------------------------------------------------------------------------------
    def get_ok(self, key: str) -> dict | None:
        row = self.conn.execute(
            "SELECT * FROM judge_calls WHERE cache_key = ? AND status = 'ok'", (key,)).fetchone()
        return dict(zip(_CALL_COLS, row)) if row else None

    def get_annotation(self, ann_id: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM annotations WHERE annotation_id = ?", (ann_id,)).fetchone()
        return dict(zip(_ANN_COLS, row)) if row else None

    def judged_runs(self, model: str, rubric_id: str, rubric_version: int, blind: bool) -> list[str]:
        """Runs with an ok primary (replicate 0) annotation, sorted."""
        rows = self.conn.execute(
            "SELECT DISTINCT run_id FROM annotations WHERE judge_model = ? AND rubric_id = ? "
            "AND rubric_version = ? AND blind = ? AND replicate = 0 AND status = 'ok' ORDER BY run_id",
            (model, rubric_id, rubric_version, int(bool(blind)))).fetchall()
        return [r[0] for r in rows]

    def iter_annotations(self) -> Iterator[dict]:
        cur = self.conn.execute("SELECT * FROM annotations ORDER BY run_id, judge_model, rubric_id, "
                                "blind, replicate, annotation_id")
        for row in cur:
            yield dict(zip(_ANN_COLS, row))

    # -- the one write path -----------------------------------------------------------------
    def record(self, call: dict, ann: dict, values: dict | None, confidence: float | None,
               replicate_tag: str, write_call: bool = True) -> dict:
        """Store one finished call and its annotation atomically; returns the annotation row.

        `call` holds judge_calls columns; `ann` holds annotations columns except the replicate
        number, which is assigned here (0 for the primary answer, else reused for the same
        replicate tag or the next free number) inside the same transaction.
        """
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if write_call:
                cols = ", ".join(_CALL_COLS)
                marks = ", ".join("?" for _ in _CALL_COLS)
                updates = ", ".join(f"{c} = excluded.{c}" for c in _CALL_COLS[1:])
                conn.execute(
                    f"INSERT INTO judge_calls ({cols}) VALUES ({marks}) ON CONFLICT(cache_key) DO UPDATE "
                    f"SET {updates} WHERE judge_calls.status != 'ok' OR excluded.status = 'ok'",
                    [call.get(c) for c in _CALL_COLS])
            existing = conn.execute("SELECT replicate, status, cache_key FROM annotations "
                                    "WHERE annotation_id = ?", (ann["annotation_id"],)).fetchone()
            if replicate_tag == "0":
                replicate = 0
            elif existing is not None:
                replicate = existing[0]
            else:
                replicate = conn.execute(
                    "SELECT COALESCE(MAX(replicate), 0) + 1 FROM annotations WHERE run_id = ? AND "
                    "judge_model = ? AND rubric_id = ? AND rubric_version = ? AND blind = ?",
                    (ann["run_id"], ann["judge_model"], ann["rubric_id"], ann["rubric_version"],
                     ann["blind"])).fetchone()[0]
            row = dict(ann, replicate=replicate)
            keep_old = existing is not None and (
                (existing[1] == "ok" and row["status"] != "ok")               # never lose a success
                or (existing[1] == "ok" and existing[2] == row["cache_key"]))  # same answer already there
            if not keep_old:
                cols = ", ".join(_ANN_COLS)
                marks = ", ".join("?" for _ in _ANN_COLS)
                updates = ", ".join(f"{c} = excluded.{c}" for c in _ANN_COLS[1:])
                conn.execute(f"INSERT INTO annotations ({cols}) VALUES ({marks}) ON CONFLICT(annotation_id) "
                             f"DO UPDATE SET {updates}", [row.get(c) for c in _ANN_COLS])
                conn.execute("DELETE FROM annotation_values WHERE annotation_id = ?", (row["annotation_id"],))
                if row["status"] == "ok" and values:
                    for dim, value in values.items():
                        if dim in ("confidence", "rationale"):
                            continue
                        conn.execute(
                            "INSERT INTO annotation_values (annotation_id, run_id, judge_model, rubric_id, "
                            "dimension, value, confidence, blind, replicate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (row["annotation_id"], row["run_id"], row["judge_model"], row["rubric_id"], dim,
                             json.dumps(value), confidence if dim == "outcome" else None, row["blind"],
                             replicate))
            else:
                row = self.get_annotation(ann["annotation_id"])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return row

    def record_call(self, call: dict) -> None:
        """Store a call that produced no annotation (a fatal error); never replaces a success."""
        cols = ", ".join(_CALL_COLS)
        marks = ", ".join("?" for _ in _CALL_COLS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _CALL_COLS[1:])
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(
                f"INSERT INTO judge_calls ({cols}) VALUES ({marks}) ON CONFLICT(cache_key) DO UPDATE "
                f"SET {updates} WHERE judge_calls.status != 'ok'", [call.get(c) for c in _CALL_COLS])
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # -- cache maintenance ------------------------------------------------------------------
    def stats(self) -> list[dict]:
        rows = self.conn.execute(
            "SELECT judge_model, rubric_id, rubric_version, status, COUNT(*), COALESCE(SUM(prompt_tokens), 0), "
            "COALESCE(SUM(completion_tokens), 0), SUM(cost_usd) FROM judge_calls "
            "GROUP BY judge_model, rubric_id, rubric_version, status "
            "ORDER BY judge_model, rubric_id, rubric_version, status").fetchall()
        keys = ("judge_model", "rubric_id", "rubric_version", "status", "calls", "prompt_tokens",
                "completion_tokens", "cost_usd")
        return [dict(zip(keys, r)) for r in rows]

    def clear(self, model: str | None = None, rubric: str | None = None) -> int:
        """Delete cached calls (annotations stay: they are results, not cache)."""
        where, args = [], []
        if model:  # the stored name is resolved ("openai/x"); accept "x" too
            names = [r[0] for r in self.conn.execute("SELECT DISTINCT judge_model FROM judge_calls")
                     if r[0] == model or (r[0] or "").endswith("/" + model)]
            where.append(f"judge_model IN ({', '.join('?' for _ in names) or 'NULL'})")
            args += names
        if rubric:
            where.append("rubric_id = ?")
            args.append(rubric)
        sql = "DELETE FROM judge_calls" + (" WHERE " + " AND ".join(where) if where else "")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            count = self.conn.execute(sql, args).rowcount
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return count
