"""The audit on real data: the example trajectories scored by the real scorer, annotations written
by the judge layer's own store (evalkit.judges.store.JudgeStore.record; no model is called)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from audit_helpers import table_dump
from click.testing import CliRunner

from evalkit.agreement.audit import build_audit
from evalkit.cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "a320"


def build(tmp_path: Path) -> Path:
    from evalkit.db.scores import Store
    from evalkit.engines.pipeline import score_files
    from evalkit.errors import InputError
    from evalkit.judges.store import JudgeStore

    db = tmp_path / "e.db"
    store = Store(db)
    store.save_many(c for c in score_files([str(EXAMPLES)]) if not isinstance(c, InputError))
    store.close()
    conn = sqlite3.connect(db)
    runs = conn.execute("SELECT run_id, bundle_hash, status FROM scorecards ORDER BY run_id").fetchall()
    conn.close()
    js = JudgeStore(db)
    try:
        for n, (run_id, bundle_hash, _status) in enumerate(runs):
            # a judge that always says the run passed and was safe: lenient wherever it was not
            values = {
                "situation_assessment": 3,
                "procedure": 3,
                "action_execution": 3,
                "error_recovery": "n/a",
                "safety": 3,
                "outcome": "pass",
            }
            common = {
                "run_id": run_id,
                "bundle_hash": bundle_hash,
                "judge_model": "openai/optimist",
                "rubric_id": "procedure_v1",
                "rubric_version": 1,
                "rubric_hash": "h",
                "status": "ok",
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "cost_usd": 0.001,
                "latency_ms": 500.0 + n,
            }
            reply = dict(values, confidence=0.9, rationale=f"Step {n} looks right.")
            stamp = f"2026-11-29T10:00:{n:02d}Z"
            call = dict(
                common,
                cache_key=f"k{n}",
                params="{}",
                request="{}",
                raw_response=json.dumps(reply),
                error=None,
                attempts=1,
                started_at=stamp,
                finished_at=stamp,
            )
            ann = dict(
                common,
                annotation_id=f"a{n}",
                blind=1,
                annotation=json.dumps(reply),
                rationale=reply["rationale"],
                cache_key=f"k{n}",
                created_at=stamp,
            )
            js.record(call, ann, dict(values), 0.9, "0")
    finally:
        js.close()
    return db


def test_audit_of_scored_examples_and_judge_store_rows(tmp_path):
    db = build(tmp_path)
    before = {t: table_dump(db, t) for t in ("scorecards", "runs", "commands")}
    report = build_audit(db, n_resamples=100)
    conn = sqlite3.connect(db)
    statuses = dict(conn.execute("SELECT run_id, status FROM scorecards").fetchall())
    cards = {r: json.loads(c) for r, c in conn.execute("SELECT run_id, card FROM scorecards")}
    conn.close()
    comparable = [r for r, s in statuses.items() if s not in ("provider_error", "invalid_scenario")]
    outcome = next(p for p in report["pairings"] if p["pairing"] == "outcome")
    with_end = [r for r in comparable if cards[r]["vector"]["all_passed"] is not None]
    assert outcome["n"] == len(with_end)
    assert outcome["excluded"]["excluded_status"] == len(statuses) - len(comparable)
    failed = [r for r in with_end if not cards[r]["vector"]["all_passed"]]
    assert failed and outcome["lenient"] == len(failed) and outcome["strict"] == 0
    # the constant "pass" judge: kappa undefined with a reason, AC1 still reported
    assert outcome["cohen_kappa"]["value"] is None and outcome["cohen_kappa"]["reason"]
    assert outcome["gwet_ac1"]["value"] is not None
    # the battery-off run took a dangerous forbidden action: the top of the list
    top = report["disagreements"][0]
    assert top["pairing"] == "safety" and top["direction"] == "lenient"
    assert cards[top["run_id"]]["vector"]["safety_dangerous"] >= 1
    assert top["path"].endswith(".jsonl") and top["judge_model"] == "openai/optimist"
    assert report["judge_costs"][0]["source"] == "judge_calls"
    assert report["judge_costs"][0]["n_calls"] == len(statuses)
    assert {t: table_dump(db, t) for t in ("scorecards", "runs", "commands")} == before


def test_cli_audit_table_on_real_data(tmp_path):
    db = build(tmp_path)
    res = CliRunner().invoke(cli, ["audit", "--db", str(db), "--resamples", "50", "--by", "scenario"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("== Disagreements"))
    assert lines[start + 2].split()[:4] == ["rank", "run", "pairing", "direction"]
    assert lines[start + 4].split()[:1] + lines[start + 4].split()[2:4] == ["1", "safety", "lenient"]
    assert "-- Per scenario --" in res.output
