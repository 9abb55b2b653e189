"""`evalkit compare` and `evalkit plan` end to end: on the examples and on imported tau-bench runs."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalkit.cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TAU = EXAMPLES / "taubench" / "tool-calling-example-model-retail.json"


def run(*args: str):
    return CliRunner().invoke(evalkit.cli.cli, list(args))


@pytest.fixture(scope="module")
def examples_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("ex") / "ex.db"
    assert run("score", str(EXAMPLES), "--db", str(db), "--format", "jsonl").exit_code in (0, 1)
    return db


def _tau_file(path: Path, passing: list[int], tasks: int = 6, trials: int = 3) -> Path:
    """A tau-bench result file: ``tasks`` tasks x ``trials`` trials, task t passing in passing[t] trials
    (records copied from the example's passing and failing trials of task 1)."""
    records = json.loads(TAU.read_text())
    good = next(r for r in records if r["task_id"] == 1 and r["reward"] == 1.0)
    bad = next(r for r in records if r["task_id"] == 1 and r["reward"] == 0.0)
    out = []
    for t in range(tasks):
        for trial in range(trials):
            r = copy.deepcopy(good if trial < passing[t] else bad)
            r["task_id"], r["trial"] = 10 + t, trial
            out.append(r)
    path.write_text(json.dumps(out))
    return path


@pytest.fixture(scope="module")
def tau_db(tmp_path_factory):
    base = tmp_path_factory.mktemp("tau")
    db = base / "tau.db"
    for model, passing in (("agent-main", [3, 3, 3, 2, 3, 3]), ("agent-pr", [0, 1, 0, 0, 1, 0])):
        src = _tau_file(base / f"{model}.json", passing)
        res = run("import", "taubench", str(src), "-o", str(base / model), "--model", model)
        assert res.exit_code == 0, res.output
        assert run("score", str(base / model), "--db", str(db), "--format", "jsonl").exit_code == 0
    return db


def test_compare_on_the_examples_has_no_shared_scenario(examples_db):
    res = run("compare", "--db", str(examples_db), "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["models"] == ["gemini-2.5-flash", "gpt-x", "opus-4-8"]
    by_pair = {(r["baseline"], r["candidate"], r["metric"]): r for r in doc["rows"]}
    # gemini and opus share the A320 scenarios; gpt-x ran only the support scenario
    assert by_pair[("gemini-2.5-flash", "gpt-x", "score_mean")]["reason"] == "no scenario in common"
    assert by_pair[("gemini-2.5-flash", "opus-4-8", "score_mean")]["scenarios"] >= 1


def test_compare_table_says_no_detectable_difference(tau_db):
    res = run("compare", "--db", str(tau_db), "--baseline", "agent-main", "--correction", "none")
    assert res.exit_code == 0, res.output
    assert "agent-pr" in res.output and "worse" in res.output
    same = run("compare", "--db", str(tau_db), "--baseline", "agent-main", "--format", "json")
    rows = json.loads(same.stdout)["rows"]
    assert {r["metric"] for r in rows} == {
        "score_mean",
        "pass_rate",
        "safe_pass_rate",
        "unsafe_rate",
    }  # the safety gate adds two metrics


def test_fail_if_worse_exits_3_on_imported_tau_bench_runs(tau_db):
    res = run("compare", "--db", str(tau_db), "--baseline", "agent-main", "--fail-if-worse", "agent-pr")
    assert res.exit_code == 3, res.output
    assert "gate failed: agent-pr is significantly worse than agent-main" in res.stderr
    ok = run("compare", "--db", str(tau_db), "--baseline", "agent-pr", "--fail-if-worse", "agent-main")
    assert ok.exit_code == 0, ok.output


def test_pass_rates_match_tau_bench(tau_db):
    doc = json.loads(run("compare", "--db", str(tau_db), "--format", "json").stdout)
    row = next(r for r in doc["rows"] if r["metric"] == "pass_rate")
    assert row["baseline_mean"] == pytest.approx(17 / 18) and row["candidate_mean"] == pytest.approx(2 / 18)


def test_compare_formats_are_deterministic(tau_db):
    for fmt in ("table", "json", "markdown", "csv"):
        a = run("compare", "--db", str(tau_db), "--format", fmt)
        b = run("compare", "--db", str(tau_db), "--format", fmt)
        assert a.exit_code == 0 and a.output == b.output
    rows = list(csv.reader(io.StringIO(run("compare", "--db", str(tau_db), "--format", "csv").stdout)))
    assert rows[0][:3] == ["baseline", "candidate", "metric"] and len(rows) == 5  # header + 4 metrics


def test_compare_usage_errors(tau_db, tmp_path):
    assert run("compare", "--db", str(tau_db), "--fail-if-worse", "agent-pr").exit_code == 2
    res = run("compare", "--db", str(tau_db), "--baseline", "nope")
    assert res.exit_code == 2 and "unknown baseline model 'nope'" in res.stderr
    assert run("compare", "--db", str(tmp_path / "missing.db")).exit_code == 2
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all" * 100)
    res = run("compare", "--db", str(bad))
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "bad.db" in res.stderr


def test_plan_from_imported_tau_bench_runs(tau_db):
    res = run("plan", "--delta", "0.05", "--db", str(tau_db), "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    pass_rate = next(m for m in doc["metrics"] if m["metric"] == "pass_rate")
    assert pass_rate["sd_within_source"].startswith("measured")
    assert pass_rate["current"]["scenarios"] == 6 and pass_rate["current"]["runs_per_scenario"] == 3
    needed = {r["runs_per_scenario"]: r["scenarios"] for r in pass_rate["needed"]}
    assert needed[1] >= needed[10]  # more runs per scenario never need more scenarios
    text = run("plan", "--delta", "0.05", "--db", str(tau_db))
    assert "scenarios needed" in text.output and "power" in text.output


def test_plan_without_a_database_states_its_assumptions():
    res = run("plan", "--delta", "0.1")
    assert res.exit_code == 0, res.output
    assert "assumed 0.5" in res.output and "assumed 0.3" in res.output
    assert run("plan", "--delta", "0").exit_code == 2


def test_score_aggregate_shows_intervals_at_the_chosen_level():
    table = run("score", str(EXAMPLES), "--no-db", "--aggregate", "--wide")  # every column: the intervals too
    assert "score_mean_ci" in table.output and "pass_rate_ci" in table.output
    opus = next(
        line for line in table.output.splitlines() if line.startswith("elec-apu-gen-fault") and "opus-4-8" in line
    )
    assert "[0.826, 1.000]" in opus  # 0.95 ± t(0.975, 2 df) · 0.05/√3, clipped at 1
    assert "*_ci = 95% interval" in table.output
    doc = json.loads(
        run("score", str(EXAMPLES), "--no-db", "--aggregate", "--format", "json", "--ci-level", "0.8").stdout
    )
    assert doc["uncertainty"]["level"] == 0.8
    group = next(g for g in doc["groups"] if g["model"] == "opus-4-8")
    assert group["score_mean_ci"][0] == pytest.approx(0.95 - 1.8856180831641267 * 0.05 / 3**0.5)  # t(0.9, 2 df)
    assert run("score", str(EXAMPLES), "--no-db", "--ci-level", "95").exit_code == 2


def test_compare_with_one_model_says_there_is_nothing_to_compare(tmp_path):
    db = tmp_path / "one.db"
    src = _tau_file(tmp_path / "one.json", [3, 1, 0], tasks=3)
    assert run("import", "taubench", str(src), "-o", str(tmp_path / "one"), "--model", "solo").exit_code == 0
    assert run("score", str(tmp_path / "one"), "--db", str(db), "--format", "jsonl").exit_code == 0
    res = run("compare", "--db", str(db))
    assert res.exit_code == 0
    assert res.stdout.splitlines() == ["Paired comparison", "(fewer than two models: nothing to compare)"]


def test_fail_if_worse_gate_line_shows_control_characters_escaped(tmp_path):
    """The gate line quotes model names from the database: it goes through the CLI kit's sanitizer
    like every other stderr line (no raw escape sequence reaches the terminal)."""
    db = tmp_path / "hostile.db"
    hostile = "agent-\x1b[31mpr"
    for model, passing in (("agent-main", [3, 3, 3, 2, 3, 3]), (hostile, [0, 1, 0, 0, 1, 0])):
        out = tmp_path / f"runs-{len(model)}"
        src = _tau_file(tmp_path / f"{len(model)}.json", passing)
        assert run("import", "taubench", str(src), "-o", str(out), "--model", model).exit_code == 0
        assert run("score", str(out), "--db", str(db), "--format", "jsonl").exit_code == 0
    res = run("compare", "--db", str(db), "--baseline", "agent-main", "--fail-if-worse", hostile)
    assert res.exit_code == 3, res.output
    assert "\x1b" not in res.stderr
    assert "gate failed: agent-\\x1b[31mpr is significantly worse than agent-main" in res.stderr
