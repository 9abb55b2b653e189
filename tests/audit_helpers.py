"""Fixture databases for the audit tests: scorecards through the real Store, judge annotations
and ratings as rows following docs/architecture.md."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from evalkit.db import Store
from evalkit.judges.store import JudgeStore
from evalkit.scoring.scorecard import ScoreCard


def card(
    run_id: str,
    *,
    scenario_id: str = "scn-a",
    model: str = "agent-x",
    status: str = "scored",
    all_passed: bool | None = True,
    coverage: float | None = 1.0,
    order: float | None = 1.0,
    extraneous: int | None = 0,
    dangerous: int | None = 0,
    anti: int | None = 0,
    observed: bool = True,
    errored: int = 0,
) -> ScoreCard:
    data: dict[str, Any] = {
        "run_id": run_id,
        "scenario_id": scenario_id,
        "model": model,
        "path": f"runs/{run_id}.jsonl",
        "status": status,
        "vector": {
            "coverage": coverage,
            "order": order,
            "end_state": 1.0 if all_passed else 0.0,
            "all_passed": all_passed,
            "safety_dangerous": dangerous,
            "safety_anti_procedure": anti,
            "extraneous": extraneous,
        },
        "scalar": 0.5,
        "commands": [],
        "checks": {
            "reached_goal": all_passed,
            "used_only_expected_tools": True,
            "correct_order": True,
            "no_redundant_calls": True,
            "approvals_respected": True,
        },
        "informative": {
            "final_reason": "agent_done",
            "tool_calls_used": 3,
            "sim_time_used": None,
            "commands": 2,
            "reads": 1,
            "errored_commands": errored,
            "off_surface_attempts": 0,
            "observed_before_acting": observed,
            "required_actions": 2,
            "reference_steps": 2,
            "efficiency": 1.0,
            "efficiency_grade": 3,
            "unknown_records": 0,
            "extra_fields": 0,
            "dropped_last_line": False,
        },
        "bundle_hash": hashlib.sha256(run_id.encode()).hexdigest(),
        "judge_bundle": {"title": "t", "run_id": run_id},
    }
    return ScoreCard.model_validate(data)


def save_cards(db: Path, cards: list[ScoreCard]) -> None:
    store = Store(db)
    store.save_many(cards)
    store.close()


class Annotator:
    """Insert judge annotations the way docs/architecture.md lays them out."""

    def __init__(self, db: Path):
        JudgeStore(db).close()  # the judge layer's own schema
        self.conn = sqlite3.connect(str(db))
        self.clock = 0

    def add(
        self,
        run_id: str,
        values: dict[str, Any],
        *,
        judge: str = "judge-a",
        rubric: str = "procedure_v1",
        confidence: float | None = None,
        blind: bool = True,
        replicate: int = 0,
        rationale: str = "",
        cost: float | None = 0.001,
        latency: float | None = 100.0,
        status: str = "ok",
        version: int = 1,
    ) -> str:
        self.clock += 1
        ann_id = hashlib.sha256(json.dumps([run_id, judge, rubric, version, blind, replicate]).encode()).hexdigest()[
            :16
        ]
        created = (
            f"2026-01-01T00:00:{self.clock:02d}.000Z"
            if self.clock < 60
            else f"2026-01-01T01:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z"
        )
        doc = dict(values)
        if confidence is not None:
            doc["confidence"] = confidence
        doc["rationale"] = rationale
        # the bundle the run has now (an annotation of another bundle is stale: left out of the audit)
        scored = self.conn.execute("SELECT bundle_hash FROM scorecards WHERE run_id = ?", (run_id,)).fetchone()
        self.conn.execute(
            "INSERT OR REPLACE INTO annotations (annotation_id, run_id, bundle_hash, judge_model, rubric_id, "
            "rubric_version, rubric_hash, blind, replicate, status, annotation, rationale, cost_usd, latency_ms, "
            "prompt_tokens, completion_tokens, cache_key, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                ann_id,
                run_id,
                scored[0] if scored else "h",
                judge,
                rubric,
                version,
                "rh",
                int(blind),
                replicate,
                status,
                json.dumps(doc),
                rationale,
                cost,
                latency,
                10,
                5,
                "ck" + ann_id,
                created,
            ),
        )
        if status == "ok":
            for dim, value in values.items():
                self.conn.execute(
                    "INSERT OR REPLACE INTO annotation_values VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        ann_id,
                        run_id,
                        judge,
                        rubric,
                        dim,
                        json.dumps(value),
                        confidence if dim == "outcome" else None,
                        int(blind),
                        replicate,
                    ),
                )
        self.conn.commit()
        return ann_id

    def close(self) -> None:
        self.conn.close()


def add_ratings(db: Path, rows: list[tuple[str, str, str, str, Any]]) -> None:
    """Rows of (item_id, rater, rater_kind, dimension, value) straight into `ratings`."""
    from evalkit.agreement.ratings import RATINGS_DDL

    conn = sqlite3.connect(str(db))
    conn.executescript(RATINGS_DDL)
    conn.executemany(
        "INSERT OR REPLACE INTO ratings (item_id, rater, rater_kind, dimension, value, confidence, source) VALUES (?,?,?,?,?,?,?)",
        [(i, r, k, d, json.dumps(v), None, "test") for i, r, k, d, v in rows],
    )
    conn.commit()
    conn.close()


def table_dump(db: Path, table: str) -> list[tuple]:
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(f"SELECT * FROM [{table}] ORDER BY 1").fetchall()
    finally:
        conn.close()
