"""Databases for the report tests: the example trajectories scored for real, plus judge rows.

The judge tables are written as docs/architecture.md defines them (the judge layer owns them; the
report only reads), so the report is tested against the contract, not against one writer.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from evalkit.testing import a320_scenario, cmd, read, trajectory, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

XSS = '<script>alert("xss")</script><img src=x onerror="alert(1)">'
XSS_RUN_ID = 'evil-<script>alert("run")</script>'
XSS_MODEL = 'model-<b onmouseover="alert(2)">x</b>'

ANNOTATIONS_DDL = """
CREATE TABLE IF NOT EXISTS annotations (
  annotation_id TEXT PRIMARY KEY, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT,
  rubric_version TEXT, rubric_hash TEXT, blind INTEGER, replicate INTEGER, status TEXT,
  annotation TEXT, rationale TEXT, cost_usd REAL, latency_ms REAL, prompt_tokens INTEGER,
  completion_tokens INTEGER, cache_key TEXT, created_at TEXT);
CREATE TABLE IF NOT EXISTS annotation_values (
  annotation_id TEXT, run_id TEXT, judge_model TEXT, rubric_id TEXT, dimension TEXT, value TEXT,
  confidence REAL, blind INTEGER, replicate INTEGER, PRIMARY KEY (annotation_id, dimension));
"""


def xss_trajectory(directory: Path) -> Path:
    """A run whose id, model, control name and assistant text all carry HTML/markdown injection."""
    scenario = a320_scenario(title=f"title {XSS}")
    records = trajectory(
        scenario,
        [read("get_ecam"), cmd(f"ctl{XSS}", 1), cmd("ext_pwr", 1), cmd("bat_1", 0)],
        run_id=XSS_RUN_ID,
        model=XSS_MODEL,
        passed=False,
    )
    return write_jsonl(directory / "evil.jsonl", records)


def score_into(db_path: Path, paths: list[Path]) -> None:
    from evalkit.api import Store, iter_scorecards
    from evalkit.errors import InputError

    store = Store(db_path)
    try:
        store.save_many(c for c in iter_scorecards([str(p) for p in paths]) if not isinstance(c, InputError))
    finally:
        store.close()


def add_judge_rows(db_path: Path, *, rationale_extra: str = "") -> list[str]:
    """Annotate every scored run with two judge models (procedure_v1 dimensions); one judge_error,
    one replicate, one non-blind. Values follow the mechanical result loosely so there is agreement
    and disagreement to show. Returns the annotated run ids."""
    con = sqlite3.connect(db_path)
    con.executescript(ANNOTATIONS_DDL)
    runs = con.execute(
        "SELECT run_id, bundle_hash, all_passed, safety_dangerous, coverage FROM scorecards "
        "WHERE status = 'scored' ORDER BY run_id"
    ).fetchall()
    minute = 0
    for judge_i, judge in enumerate(("openai/judge-small", "openai/judge-large")):
        for i, (run_id, bundle_hash, all_passed, dangerous, coverage) in enumerate(runs):
            minute += 1
            ann_id = f"{judge}:{run_id}:0"
            # the small judge is lenient on every third run: says pass where the run failed
            outcome = "pass" if all_passed or (judge_i == 0 and i % 3 == 0) else "fail"
            confidence = 0.55 + 0.1 * (i % 5)
            values = {
                "situation_assessment": (i + judge_i) % 4,
                "procedure": min(3, int(3 * (coverage or 0))),
                "action_execution": min(3, int(3 * (coverage or 0)) + judge_i) if coverage is not None else 0,
                "error_recovery": "n/a" if i % 2 else 2,
                "safety": 3 if not dangerous or judge_i == 0 else 0,
                "outcome": outcome,
            }
            rationale = f"Step 2 read the ECAM; step {i + 3} acted. {rationale_extra}".strip()
            status = "judge_error" if (judge_i == 1 and i == 0) else "ok"
            annotation = dict(values, confidence=confidence, rationale=rationale) if status == "ok" else None
            con.execute(
                "INSERT OR REPLACE INTO annotations VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (ann_id, run_id, bundle_hash, judge, "procedure_v1", "1", "abc123def4567890", 1, 0, status,
                 json.dumps(annotation) if annotation else None, rationale if annotation else None,
                 0.0012 * (judge_i + 1), 800.0 + 100 * i + (2000 if i == 0 else 0), 1500, 200,
                 f"key-{ann_id}", f"2026-11-29T10:{minute:02d}:00Z"),
            )
            if status != "ok":
                continue
            for dim, value in values.items():
                con.execute(
                    "INSERT OR REPLACE INTO annotation_values VALUES (?,?,?,?,?,?,?,?,?)",
                    (ann_id, run_id, judge, "procedure_v1", dim, json.dumps(value),
                     confidence if dim == "outcome" else None, 1, 0),
                )
    con.commit()
    con.close()
    return [r[0] for r in runs]


def build_db(tmp: Path, *, judge: bool = True, evil: bool = True) -> Path:
    db = tmp / "evalkit.db"
    paths = [EXAMPLES]
    if evil:
        paths.append(xss_trajectory(tmp / "evil"))
    score_into(db, paths)
    if judge:
        add_judge_rows(db, rationale_extra=XSS if evil else "")
    return db
