"""The pointwise judge's length bias in `evalkit audit`: the score's slope on the run's length with
the outcome held equal, against statsmodels' OLS; a judge that scores by outcome alone on a corpus
whose passing runs are longer shows no slope once the outcome is controlled, a planted length bias
is found. Judged through the real litellm client by tests/fake_llm_server.py's ``length_scored``."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
import statsmodels.api as sm
from click.testing import CliRunner
from judge_helpers import fast_config

import evalkit.cli

RUNS = 40


def invoke(*args):
    return CliRunner().invoke(evalkit.cli.cli, [str(a) for a in args], catch_exceptions=False)


def write_corpus(directory):
    """A coding-free ops agent: passing runs make 5 more reads than failing ones (length and outcome
    go together), and runs vary in length within each outcome; each run's first message names its
    case, so no two runs are one judge bundle."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

    scenario = a320_scenario(id="length")
    for i in range(RUNS):
        passed = bool(i % 2)
        reads = [read("get_state", result={"k": k}) for k in range((i * 7) % 6 + (4 if passed else 0))]
        calls = [
            say(f"looking at case {i}"),
            *reads,
            cmd("apu_gen", 0),
            cmd("apu_gen", 1),
            say("RESULT ok" if passed else "done"),
        ]
        run_id = f"len-{i:02d}"
        write_jsonl(directory / f"{run_id}.jsonl", trajectory(scenario, calls, run_id=run_id, model="m", passed=passed))
    return directory


def audit_entry(tmp_path, server, length_bias: bool) -> tuple[dict, str]:
    db = str(tmp_path / "evalkit.db")
    assert invoke("score", write_corpus(tmp_path / "runs"), "--db", db, "--format", "csv").exit_code == 0
    server.mode, server.length_bias = "length_scored", length_bias
    res = invoke(
        "judge", "--db", db, "--model", "openai/judge-l", "--api-base", server.api_base,
        "--judge-config", fast_config(tmp_path),
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(invoke("audit", "--db", db, "--format", "json").stdout)
    (entry,) = [e for e in doc["length_bias"] if e["dimension"] == "procedure"]
    return entry, db


def statsmodels_slope(db: str) -> tuple[float, float, float, int]:
    conn = sqlite3.connect(db)
    rows = conn.execute(  # one row per distinct bundle: runs repeated word for word are one observation
        "SELECT avg(CAST(v.value AS REAL)), length(b.bundle), json_extract(s.card, '$.vector.all_passed') "
        "FROM annotation_values v JOIN scorecards s ON s.run_id = v.run_id "
        "JOIN bundles b ON b.bundle_hash = s.bundle_hash WHERE v.dimension = 'procedure' GROUP BY b.bundle_hash"
    ).fetchall()
    conn.close()
    y = np.array([float(r[0]) for r in rows])
    x = np.column_stack([np.ones(len(rows)), [r[1] / 1000 for r in rows], [float(r[2]) for r in rows]])
    fit = sm.OLS(y, x).fit()
    low, high = fit.conf_int(0.05)[1]
    return float(fit.params[1]), float(low), float(high), len(rows)


@pytest.mark.slow
def test_a_judge_that_scores_by_outcome_has_no_length_slope_once_the_outcome_is_held(tmp_path, server):
    entry, db = audit_entry(tmp_path, server, length_bias=False)
    fig = entry["slope_per_1000_chars"]
    assert entry["judge"] == "openai/judge-l@procedure_v1" and entry["controlled_for"] == ["outcome"]
    slope, low, high, n = statsmodels_slope(db)
    assert fig["n"] == n == RUNS
    assert fig["value"] == pytest.approx(slope, abs=1e-9)
    assert (fig["ci_low"], fig["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    assert fig["ci_low"] < 0 < fig["ci_high"]  # no length bias found
    conn = sqlite3.connect(db)  # while the raw scores do rise with length (longer runs pass more)
    raw = conn.execute(
        "SELECT v.value, length(b.bundle) FROM annotation_values v JOIN scorecards s ON s.run_id = v.run_id "
        "JOIN bundles b ON b.bundle_hash = s.bundle_hash WHERE v.dimension = 'procedure'"
    ).fetchall()
    conn.close()
    assert np.corrcoef([float(json.loads(r[0])) for r in raw], [r[1] for r in raw])[0, 1] > 0.5


def test_a_planted_length_bias_is_found_with_the_outcome_held(tmp_path, server):
    entry, db = audit_entry(tmp_path, server, length_bias=True)
    fig = entry["slope_per_1000_chars"]
    slope, low, high, _ = statsmodels_slope(db)
    assert fig["value"] == pytest.approx(slope, abs=1e-9)
    assert (fig["ci_low"], fig["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    assert fig["ci_low"] > 0  # longer runs scored higher for the same outcome
    table = invoke("audit", "--db", db).stdout
    assert "Pointwise judges: length" in table and "openai/judge-l@procedure_v1" in table
    csv = invoke("audit", "--db", db, "--format", "csv").stdout
    assert "length_bias,openai/judge-l@procedure_v1,dimension,procedure,slope_per_1000_chars_ci_low," in csv


def test_too_few_runs_or_one_length_is_na_with_the_reason():
    from evalkit.agreement.length_bias import slope

    fig, _ = slope([1.0, 2.0, 3.0], [100.0, 200.0, 300.0], None, 0.95)
    assert fig["value"] is None and "at least 4" in fig["reason"]
    fig, controls = slope([1.0, 2.0, 0.0, 1.0, 2.0], [500.0] * 5, [1.0, 0.0, 1.0, 0.0, 1.0], 0.95)
    assert fig["value"] is None and "same length" in fig["reason"] and controls == ["outcome"]
    fig, controls = slope([1.0, 2.0, 0.0, 1.0, 2.0], [100.0, 200.0, 300.0, 400.0, 500.0], [1.0] * 5, 0.95)
    assert fig["value"] is not None and controls == []  # an outcome that does not vary is not a covariate


def _value(run: str, score: int, *, replicate: int = 0, blind: bool = True, at: str = "2026-01-01"):
    from evalkit.db.judge import JudgeValue

    aid = f"{run}-{replicate}-{blind}"
    return JudgeValue(aid, run, "openai/j", "procedure_v1", "procedure", score, None, blind, replicate, "", at)


def test_length_bias_reads_the_primary_blind_answer_not_a_resample_or_a_non_blind_one():
    """`evalkit judge --resample` replicates and `--show-mechanical` answers come later than the
    primary answer; the slope is the primary answers' (as the pairings read them), not theirs."""
    from evalkit.agreement.length_bias import analyse
    from evalkit.db.judge import JudgeColumns

    runs = [f"r{i:02d}" for i in range(12)]
    lengths = {r: 1000 * (i + 1) for i, r in enumerate(runs)}
    outcomes = {r: bool(i % 2) for i, r in enumerate(runs)}
    primary = [_value(r, 1 + (i * 5) % 3 // 2) for i, r in enumerate(runs)]  # unrelated to length
    later = [_value(r, 3 if i >= 6 else 0, replicate=1, at="2026-02-01") for i, r in enumerate(runs)]
    shown = [_value(r, 3 if i >= 6 else 0, blind=False, at="2026-03-01") for i, r in enumerate(runs)]
    want = analyse(JudgeColumns.of(primary), lengths, outcomes)
    assert analyse(JudgeColumns.of([*primary, *later, *shown]), lengths, outcomes) == want
    assert want[0]["slope_per_1000_chars"]["n"] == 12


def test_runs_with_one_judge_bundle_are_one_observation_in_the_length_slope():
    """A deterministic agent repeats its short runs word for word: 8 copies of one bundle, judged
    once (the cache), are one answer, not 8; counted 8 times they narrowed the interval of a judge
    whose noise has nothing to do with length until it excluded 0."""
    from evalkit.agreement.length_bias import analyse
    from evalkit.db.judge import JudgeColumns

    distinct = [f"u{i:02d}" for i in range(10)]
    copies = [f"c{i:02d}" for i in range(8)]
    lengths = {**{r: 2000 + 150 * i for i, r in enumerate(distinct)}, **{r: 900 for r in copies}}
    outcomes = {r: True for r in [*distinct, *copies]}
    scores = {**{r: (0, 3, 3, 0, 3, 0, 0, 3, 0, 3)[i] for i, r in enumerate(distinct)}, **{r: 3 for r in copies}}
    bundles = {**{r: f"h-{r}" for r in distinct}, **{r: "h-short" for r in copies}}
    once = [*distinct, copies[0]]
    want = analyse(JudgeColumns.of([_value(r, scores[r]) for r in once]), {r: lengths[r] for r in once}, outcomes)
    got = analyse(JudgeColumns.of([_value(r, s) for r, s in scores.items()]), lengths, outcomes, bundles=bundles)
    assert got == want and got[0]["slope_per_1000_chars"]["n"] == 11
    # the copies counted one by one give a narrower interval that excludes 0
    naive = analyse(JudgeColumns.of([_value(r, s) for r, s in scores.items()]), lengths, outcomes)
    assert naive[0]["slope_per_1000_chars"]["ci_high"] < 0 < want[0]["slope_per_1000_chars"]["ci_high"]
