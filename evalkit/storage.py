"""SQLite storage of scored runs (sqlite-utils): tables ``runs``, ``scorecards``, ``commands``, ``bundles``.

Everything is upserted by ``run_id``, so re-scoring never duplicates. Each ScoreCard is written in
one transaction (its run, card, commands and bundle land together or not at all). The database is in
WAL mode with a busy timeout, so a judge or audit process can read while scores are written.
Judge output lives in its own tables (see docs/architecture.md); nothing here reads it.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import sqlite_utils

from evalkit.scorecard import ScoreCard
from evalkit.bundle import bundle_json
from evalkit.values import compact_json

DEFAULT_DB = "evalkit.db"

TABLES: dict[str, tuple[dict[str, type], str | tuple[str, ...]]] = {
    "runs": (
        {
            "run_id": str, "path": str, "scenario_id": str, "scenario_title": str, "model": str,
            "provider": str, "ts_utc": str, "final_reason": str, "status": str, "bundle_hash": str,
        },
        "run_id",
    ),
    "scorecards": (
        {
            "run_id": str, "scenario_id": str, "model": str, "status": str, "scalar": float,
            "coverage": float, "order_score": float, "end_state": float, "all_passed": int,
            "safety_dangerous": int, "safety_anti_procedure": int, "extraneous": int,
            "bundle_hash": str, "card": str,
        },
        "run_id",
    ),
    "commands": (
        {
            "run_id": str, "idx": int, "step": int, "call_index": int, "tool": str, "control": str,
            "value": str, "args": str, "class": str, "subtype": str, "severity": str,
        },
        ("run_id", "idx"),
    ),
    "bundles": ({"bundle_hash": str, "bundle": str}, "bundle_hash"),
}


def _insert(conn, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    cols = list(rows[0])
    sql = (
        f"INSERT OR REPLACE INTO [{table}] ({', '.join(f'[{c}]' for c in cols)}) "
        f"VALUES ({', '.join('?' for _ in cols)})"
    )
    conn.executemany(sql, [tuple(r[c] for c in cols) for r in rows])


class Store:
    """A scores database. ``Store(":memory:")`` works for tests."""

    def __init__(self, path: str | Path = DEFAULT_DB):
        self.path = str(path)
        self.db = sqlite_utils.Database(self.path)
        self.db.execute("PRAGMA busy_timeout = 30000")
        if self.path != ":memory:":
            self.db.enable_wal()
        for name, (columns, pk) in TABLES.items():
            self.db[name].create(columns, pk=pk, if_not_exists=True)
        self.db["commands"].create_index(["run_id"], if_not_exists=True)

    def save(self, card: ScoreCard) -> None:
        self.save_many([card])

    def save_many(self, cards: Iterable[ScoreCard]) -> None:
        """Write cards; each batch is one transaction, so nothing is ever half-written."""
        runs, scorecards, commands, bundles, run_ids = [], [], [], [], []
        for card in cards:
            data = card.to_json_dict(with_bundle=False)
            bundle = card.judge_bundle
            v = card.vector
            run_ids.append((card.run_id,))
            runs.append({
                "run_id": card.run_id, "path": card.path, "scenario_id": card.scenario_id,
                "scenario_title": bundle.get("title"), "model": card.model,
                "provider": card.provenance.provider, "ts_utc": card.provenance.ts_utc, "final_reason": card.informative.final_reason,
                "status": card.status, "bundle_hash": card.bundle_hash,
            })
            scorecards.append({
                "run_id": card.run_id, "scenario_id": card.scenario_id, "model": card.model,
                "status": card.status, "scalar": card.scalar, "coverage": v.coverage,
                "order_score": v.order, "end_state": v.end_state,
                "all_passed": None if v.all_passed is None else int(v.all_passed),
                "safety_dangerous": v.safety_dangerous, "safety_anti_procedure": v.safety_anti_procedure,
                "extraneous": v.extraneous, "bundle_hash": card.bundle_hash, "card": compact_json(data),
            })
            bundles.append({"bundle_hash": card.bundle_hash, "bundle": bundle_json(bundle)})
            for row in data["commands"]:
                commands.append({
                    "run_id": card.run_id, "idx": row["index"], "step": row["step"],
                    "call_index": row["call_index"], "tool": row["tool"], "control": row["control"],
                    "value": None if row["value"] is None else compact_json(row["value"]),
                    "args": compact_json(row["args"]), "class": row["class"],
                    "subtype": row["subtype"], "severity": row["severity"],
                })
        conn = self.db.conn
        with conn:
            conn.executemany("DELETE FROM commands WHERE run_id = ?", run_ids)
            for table, rows in (("runs", runs), ("scorecards", scorecards), ("commands", commands), ("bundles", bundles)):
                _insert(conn, table, rows)

    def iter_scorecards(self) -> Iterator[ScoreCard]:
        """Stored ScoreCards with their judge_bundle, ordered by run_id."""
        sql = (
            "SELECT s.card, b.bundle FROM scorecards s JOIN bundles b ON b.bundle_hash = s.bundle_hash "
            "ORDER BY s.run_id"
        )
        for card, bundle in self.db.execute(sql).fetchall():
            data = json.loads(card)
            data["judge_bundle"] = json.loads(bundle)
            yield ScoreCard.model_validate(data)

    def close(self) -> None:
        self.db.close()
