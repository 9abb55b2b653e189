"""Re-scoring runs (same run ids, new transcripts) leaves their judge annotations behind: answers
about transcripts that are gone. Before, the audit paired them with the new scores (agreement went
from 1.0 to 0.0 with no warning). Now such a *stale* annotation (its bundle hash is no longer the
run's) is left out of pairings, raters, drift and the report's judge figures, counted and named by
`evalkit audit`, and asked again by the next `evalkit judge` while the others come from the cache.

The judge is the fake server's ``gullible`` mode: it says "pass" exactly when the transcript ends
with a claim of success, and each run here claims success exactly when it passes, so a current
answer always agrees with the mechanical outcome and a stale one (the run flipped) never does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from judge_helpers import FAST

from evalkit.agreement.audit import build_audit
from evalkit.cli import cli
from evalkit.db import Store, open_readonly, read_annotation_rows, read_primary_values
from evalkit.engines.pipeline import score_files
from evalkit.judges.api import judge_db

pytestmark = pytest.mark.slow

RUNS = 6
RESCORED = ("run-000", "run-001", "run-003")
JUDGE = "openai/judge-a"


def _write(directory: Path, run_ids, *, flipped: bool) -> Path:
    from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

    directory.mkdir(parents=True, exist_ok=True)
    for run_id in run_ids:
        passed = (int(run_id[-3:]) % 2 == 0) != flipped
        claim = "All checks passed." if passed else "I could not restore the generator."
        calls = [
            say(f"{run_id}, {'second' if flipped else 'first'} attempt."),
            read("get_ecam"),
            cmd("apu_gen", 0),
            cmd("apu_gen", 1),
            say(claim),
        ]
        write_jsonl(directory / f"{run_id}.jsonl", trajectory(a320_scenario(), calls, run_id=run_id, passed=passed))
    return directory


def _score(db: Path, runs: Path) -> None:
    store = Store(db)
    try:
        store.save_many(c for c in score_files([runs]) if not isinstance(c, Exception))
    finally:
        store.close()


def _judge(db: Path, server):
    result = judge_db(str(db), [JUDGE], api_base=server.api_base, config=FAST)
    assert result.ok, result.summary.as_dict()
    return result


def _outcome(audit: dict) -> dict:
    return next(p for p in audit["pairings"] if p["pairing"] == "outcome")


def _judged_then_rescored(tmp_path: Path, server) -> Path:
    """RUNS runs scored and judged, then RESCORED scored again from new transcripts."""
    db = tmp_path / "evalkit.db"
    _score(db, _write(tmp_path / "first", [f"run-{i:03d}" for i in range(RUNS)], flipped=False))
    server.mode = "gullible"
    _judge(db, server)
    outcome = _outcome(build_audit(db, n_resamples=0))
    assert outcome["n"] == RUNS and outcome["percent_agreement"]["value"] == 1.0
    _score(db, _write(tmp_path / "second", RESCORED, flipped=True))
    return db


def test_stale_annotations_are_not_paired_with_the_new_scores(tmp_path, server):
    db = _judged_then_rescored(tmp_path, server)
    audit = build_audit(db, n_resamples=0)
    outcome = _outcome(audit)
    assert outcome["n"] == RUNS - len(RESCORED)
    assert outcome["percent_agreement"]["value"] == 1.0  # was 0.5: three old answers on flipped runs
    assert all(d["run_id"] not in RESCORED for d in audit["disagreements"])
    assert audit["counts"]["annotations"] == RUNS - len(RESCORED)


def test_stale_annotations_are_counted_and_named(tmp_path, server):
    db = _judged_then_rescored(tmp_path, server)
    assert build_audit(db, n_resamples=0)["stale"] == {"annotations": len(RESCORED), "run_ids": list(RESCORED)}
    result = CliRunner().invoke(cli, ["audit", "--db", str(db), "--format", "json", "--resamples", "0"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["stale"]["run_ids"] == list(RESCORED)
    assert result.stderr.splitlines() == [
        "warning: 3 stale annotations (runs run-000, run-001, run-003) excluded: re-scored since judged; "
        "run `evalkit judge` to refresh"
    ]


def test_stale_annotations_are_left_out_of_raters_and_the_report_figures(tmp_path, server):
    db = _judged_then_rescored(tmp_path, server)
    with open_readonly(db) as database:
        assert sorted({r["run_id"] for r in read_annotation_rows(database)}) == [
            f"run-{i:03d}" for i in range(RUNS) if f"run-{i:03d}" not in RESCORED
        ]
        outcomes = [v for _, _, dim, v in read_primary_values(database) if dim == "outcome"]
    assert len(outcomes) == RUNS - len(RESCORED)
    audit = build_audit(db, n_resamples=0)
    for entry in audit["raters"]:
        assert entry["n_items"] <= RUNS - len(RESCORED), entry["dimension"]


def test_the_report_reads_the_stale_annotations_once_and_leaves_the_same_out(tmp_path, server):
    from evalkit.db.judge import stale_annotation_ids
    from evalkit.report.data import _annotation_rows, _primary_value_counts

    db = _judged_then_rescored(tmp_path, server)
    with open_readonly(db) as database:
        stale_ids = stale_annotation_ids(database)
        stale_runs = {r["run_id"] for r in database.query("SELECT * FROM annotations")} - {
            r["run_id"] for r in read_annotation_rows(database)
        }
        assert len(stale_ids) == len(RESCORED) and stale_runs == set(RESCORED)
        for judge in (None, JUDGE):
            rows, told = _annotation_rows(database, judge)
            assert sorted(told) == sorted(stale_ids)  # every judge's, whichever judge is kept
            assert [r["annotation_id"] for r in rows] == [
                r["annotation_id"] for r in read_annotation_rows(database, judge)
            ]
            # the stale ids given, or the filter's own subquery: the same counts
            assert _primary_value_counts(database, judge, told) == _primary_value_counts(database, judge)


def test_next_judge_asks_again_for_stale_runs_only(tmp_path, server):
    db = _judged_then_rescored(tmp_path, server)
    before = server.count
    result = _judge(db, server)
    assert server.count - before == len(RESCORED)  # the others: 0 requests
    assert result.summary.calls == len(RESCORED) and result.summary.cache_hits == RUNS - len(RESCORED)
    asked = {a["run_id"] for a in result.annotations if a["source"] == "call"}
    assert asked == set(RESCORED)
    audit = build_audit(db, n_resamples=0)
    assert audit["stale"] == {"annotations": 0, "run_ids": []}
    outcome = _outcome(audit)
    assert outcome["n"] == RUNS and outcome["percent_agreement"]["value"] == 1.0
    result = CliRunner().invoke(cli, ["audit", "--db", str(db), "--format", "json", "--resamples", "0"])
    assert result.exit_code == 0 and result.stderr == ""


def test_resample_draws_only_from_runs_judged_on_their_current_bundle(tmp_path, server):
    """A drift replicate of a stale answer would compare two different transcripts' answers."""
    db = _judged_then_rescored(tmp_path, server)
    result = judge_db(str(db), [JUDGE], api_base=server.api_base, config=FAST, resample=1.0, seed=3)
    assert sorted(a["run_id"] for a in result.annotations) == [
        f"run-{i:03d}" for i in range(RUNS) if f"run-{i:03d}" not in RESCORED
    ]


def test_the_report_says_how_many_annotations_are_stale(tmp_path, server):
    from evalkit.report.data import build_report

    db = _judged_then_rescored(tmp_path, server)
    warnings = build_report(db)["warnings"]
    stale = [w for w in warnings if "stale annotation" in w]
    assert len(stale) == 1 and f"{len(RESCORED)} stale annotations" in stale[0], warnings
