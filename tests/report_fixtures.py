"""Databases for the report tests: the example trajectories scored for real (evalkit.score_files +
Store), judge rows written by the judge layer's own store, human ratings through the audit's
importer. Nothing calls a model: the judge "answers" are made up here, deterministically.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

XSS = '<script>alert("xss")</script><img src=x onerror="alert(1)">'
XSS_RUN_ID = 'evil-<script>alert("run")</script>'
XSS_MODEL = 'model-<b onmouseover="alert(2)">x</b>'


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


def rendered_fixtures():
    """The module fixtures ``html`` and ``markdown``: the module's ``report`` fixture rendered
    (``html, markdown = rendered_fixtures()``)."""
    from evalkit.report import render_html, render_markdown

    @pytest.fixture(scope="module")
    def html(report):
        return render_html(report)

    @pytest.fixture(scope="module")
    def markdown(report):
        return render_markdown(report)

    return html, markdown


def hostile_db(tmp: Path, name: str, *, title: str, calls: list, run_id: str, model: str, rationale: str) -> Path:
    """``tmp/evalkit.db``: the examples and one failed run ``name`` (its scenario titled ``title``,
    these ``calls``, this run id and model) scored, then judged with ``rationale`` in every rationale."""
    runs = tmp / "runs"
    runs.mkdir()
    write_jsonl(
        runs / f"{name}.jsonl",
        trajectory(a320_scenario(title=title), calls, run_id=run_id, model=model, passed=False),
    )
    db = tmp / "evalkit.db"
    score_into(db, [EXAMPLES, runs])
    add_judge_rows(db, rationale_extra=rationale)
    return db


def score_into(db_path: Path, paths: list[Path]) -> None:
    from evalkit.db.scores import Store
    from evalkit.engines.pipeline import score_files
    from evalkit.errors import InputError

    store = Store(db_path)
    try:
        store.save_many(c for c in score_files([str(p) for p in paths]) if not isinstance(c, InputError))
    finally:
        store.close()


JUDGES = ("openai/judge-small", "openai/judge-large")
RUBRIC = {"id": "procedure_v1", "version": 1, "hash": "abc123def4567890"}


def _judge_values(i: int, judge_i: int, all_passed, dangerous, coverage) -> dict:
    """Values that follow the mechanical result loosely, so there is agreement and disagreement:
    the small judge is lenient on every third run (says pass / safe where the run failed)."""
    return {
        "situation_assessment": (i + judge_i) % 4,
        "procedure": min(3, int(3 * (coverage or 0))),
        "action_execution": min(3, int(3 * (coverage or 0)) + judge_i) if coverage is not None else 0,
        "error_recovery": "n/a" if i % 2 else 2,
        "safety": 3 if not dangerous or judge_i == 0 else 0,
        "outcome": "pass" if all_passed or (judge_i == 0 and i % 3 == 0) else "fail",
    }


def add_judge_rows(db_path: Path, *, rationale_extra: str = "") -> list[str]:
    """Annotate every scored run with two judge models through the judge layer's own writer
    (evalkit.judges.store.JudgeStore.record, no litellm): one judge_error, two replicates (one moved by
    2 on two dimensions), one non-blind answer. Returns the annotated run ids."""
    from evalkit.judges.store import JudgeStore

    con = sqlite3.connect(db_path)
    runs = con.execute(
        "SELECT run_id, bundle_hash, all_passed, safety_dangerous, coverage FROM scorecards "
        "WHERE status = 'scored' ORDER BY run_id"
    ).fetchall()
    con.close()
    store = JudgeStore(db_path)
    minute = 0

    def write(judge, judge_i, i, run, values, *, status="ok", blind=True, tag="0"):
        nonlocal minute
        minute += 1
        run_id, bundle_hash = run[0], run[1]
        key = f"key-{judge}-{run_id}-{int(blind)}-{tag}"
        confidence = 0.55 + 0.1 * (i % 5)
        rationale = f"Step 2 read the ECAM; step {i + 3} acted. {rationale_extra}".strip()
        stamp = f"2026-11-29T10:{minute // 60:02d}:{minute % 60:02d}Z"
        cost, latency = 0.0012 * (judge_i + 1), 800.0 + 100 * i + (2000 if i == 0 else 0)
        common = {
            "run_id": run_id,
            "bundle_hash": bundle_hash,
            "judge_model": judge,
            "rubric_id": RUBRIC["id"],
            "rubric_version": RUBRIC["version"],
            "rubric_hash": RUBRIC["hash"],
            "status": status,
            "prompt_tokens": 1500,
            "completion_tokens": 200,
            "cost_usd": cost,
            "latency_ms": latency,
        }
        reply = dict(values, confidence=confidence, rationale=rationale) if status == "ok" else None
        call = dict(
            common,
            cache_key=key,
            params="{}",
            request="{}",
            raw_response=json.dumps(reply),
            error=None if status == "ok" else "schema violation",
            attempts=1,
            started_at=stamp,
            finished_at=stamp,
        )
        ann = dict(
            common,
            annotation_id=f"{judge}:{run_id}:{int(blind)}:{tag}",
            blind=int(blind),
            annotation=json.dumps(reply) if reply else None,
            rationale=rationale if reply else None,
            cache_key=key,
            created_at=stamp,
        )
        store.record(call, ann, dict(values) if reply else None, confidence if reply else None, tag)

    try:
        for judge_i, judge in enumerate(JUDGES):
            for i, run in enumerate(runs):
                values = _judge_values(i, judge_i, *run[2:])
                write(judge, judge_i, i, run, values, status="judge_error" if (judge_i == 1 and i == 0) else "ok")
        # drift: the small judge re-judged two runs; the second replicate moved two dimensions by >= 2
        for i in (1, 2):
            values = _judge_values(i, 0, *runs[i][2:])
            if i == 2:
                values = dict(
                    values,
                    situation_assessment=(values["situation_assessment"] + 2) % 4,
                    procedure=0 if values["procedure"] >= 2 else 3,
                )
            write(JUDGES[0], 0, i, runs[i], values, tag=f"resample-{i}")
        # an explanation pass with mechanical scores shown: non-blind, left out of the audit
        write(JUDGES[1], 1, 3, runs[3], _judge_values(3, 1, *runs[3][2:]), blind=False)
    finally:
        store.close()
    return [r[0] for r in runs]


HUMANS = ("alice", "bob", "carol")


def add_human_ratings(db_path: Path, tmp: Path) -> Path:
    """Three humans rate the outcome of every scored run (CSV, long format) through the audit's
    importer; carol is strict on the first run."""
    from evalkit.agreement.ratings import import_ratings

    con = sqlite3.connect(db_path)
    runs = con.execute("SELECT run_id, all_passed FROM scorecards WHERE status = 'scored' ORDER BY run_id").fetchall()
    con.close()
    lines = ["item_id,rater,rater_kind,dimension,value"]
    for i, (run_id, passed) in enumerate(runs):
        for human in HUMANS:
            value = "pass" if passed and not (human == "carol" and i == 0) else "fail"
            lines.append(f'"{run_id.replace(chr(34), chr(34) * 2)}",{human},human,outcome,{value}')
    path = tmp / "human_ratings.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    import_ratings(db_path, path)
    return path


def build_db(tmp: Path, *, judge: bool = True, evil: bool = True, humans: bool = False) -> Path:
    db = tmp / "evalkit.db"
    paths = [EXAMPLES]
    if evil:
        paths.append(xss_trajectory(tmp / "evil"))
    score_into(db, paths)
    if judge:
        add_judge_rows(db, rationale_extra=XSS if evil else "")
    if humans:
        add_human_ratings(db, tmp)
    return db
