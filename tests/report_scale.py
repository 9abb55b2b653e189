"""A large scores database for the report's scale test and benchmark (benchmarks/bench_report.py),
written through evalkit's own writers.

Each run is one of the bundled a320 examples scored by `evalkit.score_files` under a new run
id, model and scenario id, with its own score, pass/fail and transcript line; it is stored by
`evalkit.db.Store.save_many` (scorecards, runs, commands, bundles). A share of the runs is judged by
one judge through the judge layer's write path (`JudgeTables`, one transaction per chunk), so the
disagreement list is long. Deterministic: the same arguments give the same database.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JUDGE = "openai/scale-judge"
CHUNK = 5_000


def templates() -> list[dict]:
    """Each bundled a320 example's scorecard as a dict, with its judge bundle."""
    from evalkit.engines.pipeline import score_files

    out = []
    for card in score_files([ROOT / "examples" / "a320"], warn=lambda message: None):
        if not isinstance(card, Exception):
            out.append(card.model_dump(mode="json", by_alias=True) | {"judge_bundle": card.judge_bundle})
    return out


def run_id(i: int) -> str:
    return f"run-{i:06d}"


def _cards(runs: int, scenarios: int, rnd: random.Random):
    from evalkit.scoring.scorecard import ScoreCard

    base = [json.dumps(t) for t in templates()]
    for i in range(runs):
        data = json.loads(base[i % len(base)])
        rid, scenario = run_id(i), f"scn-{i % scenarios:03d}"
        bundle = data["judge_bundle"]
        bundle["run_id"] = rid
        bundle["scenario_id"] = scenario
        bundle.setdefault("transcript", []).insert(
            0, {"kind": "assistant", "step": 0, "text": f"token{i:06d} starting", "stop_reason": None}
        )
        data.update(
            run_id=rid,
            model=f"agent-{i % 5}",
            scenario_id=scenario,
            path=f"runs/{rid}.jsonl",
            bundle_hash=hashlib.sha256(rid.encode()).hexdigest(),
        )
        if data["status"] == "scored":
            data["scalar"] = round(rnd.random(), 3)
            if data.get("vector") and data["vector"].get("all_passed") is not None:
                data["vector"]["all_passed"] = rnd.random() < 0.6
        yield ScoreCard.model_validate(data)


def _annotate(db: Path, ids: list[str], rnd: random.Random) -> None:
    from evalkit.db.judge import JudgeTables, _write_call
    from evalkit.judges.store import annotation_id

    store = JudgeTables(db)
    try:
        for start in range(0, len(ids), CHUNK):
            with store.database.transaction() as conn:
                for rid in ids[start : start + CHUNK]:
                    bundle_hash = hashlib.sha256(rid.encode()).hexdigest()
                    values = {
                        "outcome": rnd.choice(["pass", "fail"]),
                        "safety": rnd.choice([0, 3, 3, 3]),
                        "procedure": rnd.randint(0, 3),
                        "action_execution": rnd.randint(0, 3),
                        "situation_assessment": rnd.randint(0, 3),
                        "error_recovery": rnd.choice(["n/a", 2, 3]),
                    }
                    confidence = round(rnd.uniform(0.5, 1.0), 2)
                    rationale = f"At step {rnd.randint(1, 9)} the agent {rnd.choice(['checked', 'skipped'])} it."
                    key = hashlib.sha256(f"{JUDGE}/{rid}".encode()).hexdigest()
                    doc = values | {"confidence": confidence, "rationale": rationale}
                    common = {
                        "cache_key": key,
                        "run_id": rid,
                        "bundle_hash": bundle_hash,
                        "judge_model": JUDGE,
                        "rubric_id": "procedure_v1",
                        "rubric_version": 1,
                        "rubric_hash": "rh",
                        "status": "ok",
                        "prompt_tokens": 2000,
                        "completion_tokens": 120,
                        "cost_usd": 0.0012,
                        "output_mode": "json_schema",
                    }
                    _write_call(
                        conn,
                        common
                        | {
                            "params": "{}",
                            "request": "{}",
                            "raw_response": json.dumps(doc),
                            "latency_ms": 800.0 + rnd.random() * 400,
                            "attempts": 1,
                            "started_at": "2026-12-01T00:00:00Z",
                            "finished_at": "2026-12-01T00:00:01Z",
                        },
                    )
                    ann_id = annotation_id(
                        run_id=rid,
                        model=JUDGE,
                        rubric_id="procedure_v1",
                        rubric_version=1,
                        blind=True,
                        replicate_tag="0",
                    )
                    ann = common | {
                        "annotation_id": ann_id,
                        "blind": 1,
                        "annotation": json.dumps(doc),
                        "rationale": rationale,
                        "latency_ms": 900.0,
                        "created_at": f"2026-12-01T00:{int(rid[-6:]) // 60 % 60:02d}:{int(rid[-6:]) % 60:02d}Z",
                    }
                    store._write_annotation(conn, ann, values, confidence, "0")
    finally:
        store.close()


def build(db: Path, runs: int, *, scenarios: int = 100, judged: float = 0.5) -> Path:
    """Write ``runs`` runs over ``scenarios`` scenario ids and five models into ``db``; a share
    ``judged`` of the scored runs judged by :data:`JUDGE`. Returns ``db``."""
    from evalkit.db import Store

    rnd = random.Random(0)
    store = Store(db)
    judged_ids: list[str] = []
    try:
        batch = []
        for card in _cards(runs, scenarios, rnd):
            batch.append(card)
            if card.status == "scored" and rnd.random() < judged:
                judged_ids.append(card.run_id)
            if len(batch) == CHUNK:
                store.save_many(batch)
                batch = []
        store.save_many(batch)
    finally:
        store.close()
    _annotate(db, judged_ids, rnd)
    return db
