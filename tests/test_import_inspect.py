"""`evalkit import inspect`: real inspect_ai logs (written in this session by inspect_ai itself, with
`mockllm/model`, examples/inspect/tiny_task.py) → trajectories and ratings, checked against what
inspect_ai's own reader reports, then scored and audited end to end."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from import_helpers import among, modules_loaded_by
from importer_helpers import import_ok
from judge_helpers import fast_config

from evalkit.agreement.credit import credit
from evalkit.cli import cli
from evalkit.importers import import_files
from evalkit.scoring import score_trajectory
from evalkit.trajectory.reader import read_trajectory

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "inspect"))

import inspect_ai.log as inspect_log  # noqa: E402  (the test extra installs it: never skipped)


@pytest.fixture(scope="session")
def logs(inspect_logs):
    """One .eval and one .json log of the tiny task (conftest.py: shared with test_import_workers.py)."""
    return inspect_logs


@pytest.fixture(scope="session")
def imported(logs, tmp_path_factory):
    out = tmp_path_factory.mktemp("inspect-runs")
    return out, import_ok("inspect", [logs["eval"], logs["json"]], out)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def samples_of(path):
    return inspect_log.read_eval_log(str(path), resolve_attachments=True).samples


def runs_by_key(result, log_path):
    out = {}
    for f in result.written[str(log_path)]:
        traj = read_trajectory(f)
        meta = traj.meta.model_extra["inspect"]
        out[(meta["sample_id"], meta["epoch"])] = (f, traj)
    return out


def sample_runs(result, log_path):
    """Each sample of the log with the (file, trajectory) it was imported as."""
    runs = runs_by_key(result, log_path)
    for s in samples_of(log_path):
        yield s, *runs[(s.id, s.epoch)]


def ratings_of(out_dir):
    return [json.loads(line) for line in (Path(out_dir) / "ratings.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_one_run_per_sample_and_epoch_as_inspect_reads_them(logs, imported, fmt):
    _, result = imported
    samples = samples_of(logs[fmt])
    header = inspect_log.read_eval_log(str(logs[fmt]), header_only=True)
    assert len(samples) == len(header.eval.dataset.sample_ids) * header.eval.config.epochs == 14
    runs = runs_by_key(result, logs[fmt])
    assert set(runs) == {(s.id, s.epoch) for s in samples}
    assert {e for _, e in runs} == {1, 2}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_message_counts_equal_the_log(logs, imported, fmt):
    _, result = imported
    for s, _, traj in sample_runs(result, logs[fmt]):
        kinds = Counter(type(e).__name__ for e in traj.events)
        roles = Counter(m.role for m in s.messages)
        assert kinds["Nudge"] == roles["user"]
        assert kinds["Assistant"] == roles["assistant"]
        assert kinds["ToolCall"] == sum(len(m.tool_calls or []) for m in s.messages if m.role == "assistant")
        answered = [e for e in traj.events if type(e).__name__ == "ToolCall" and e.result is not None]
        assert len(answered) == roles["tool"]


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_every_score_value_becomes_a_rating(logs, imported, fmt):
    out, result = imported
    runs = runs_by_key(result, logs[fmt])
    got = {(r["item_id"], r["rater"]): r for r in ratings_of(out) if r["dimension"] == "value"}
    expected = 0
    for s in samples_of(logs[fmt]):
        run_id = runs[(s.id, s.epoch)][1].meta.run_id
        for name, score in (s.scores or {}).items():
            expected += 1
            row = got[(run_id, name)]
            assert row["value"] == score.value
            assert row["rater_kind"] == ("judge" if name == "model_graded_qa" else "mechanical")
    log_items = {runs[k][1].meta.run_id for k in runs}
    assert expected == sum(1 for (item, _) in got if item in log_items) == 24  # 12 scored samples x 2 scorers


def test_outcome_dimension_follows_the_threshold(imported):
    out, _ = imported
    rows = ratings_of(out)
    values = {(r["item_id"], r["rater"]): r["value"] for r in rows if r["dimension"] == "value"}
    outcomes = {(r["item_id"], r["rater"]): r["value"] for r in rows if r["dimension"] == "outcome"}
    assert outcomes.keys() == values.keys()
    for key, v in values.items():
        assert outcomes[key] == ("pass" if v == "C" else "fail")


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_end_state_from_the_first_deterministic_scorer(logs, imported, fmt):
    _, result = imported
    for s, f, traj in sample_runs(result, logs[fmt]):
        card = score_trajectory(read_trajectory(f))
        if s.scores:
            assert traj.final.success_eval.all_passed is (s.scores["match"].value == "C")
            assert card.status == "scored"
        else:
            assert traj.final.success_eval is None and card.status == "incomplete"


def test_tool_using_sample_keeps_calls_args_results_and_tool_errors(logs, imported):
    _, result = imported
    runs = runs_by_key(result, logs["eval"])
    samples = {(s.id, s.epoch): s for s in samples_of(logs["eval"])}
    for name, tool, error in (("add", "add", False), ("divide", "divide", True)):
        _, traj = runs[(name, 1)]
        calls = [e for e in traj.events if type(e).__name__ == "ToolCall"]
        [call] = calls
        [msg_call] = [c for m in samples[(name, 1)].messages if m.role == "assistant" for c in (m.tool_calls or [])]
        [tool_msg] = [m for m in samples[(name, 1)].messages if m.role == "tool"]
        assert (call.name, call.args) == (tool, msg_call.arguments)
        assert call.is_error is error is (tool_msg.error is not None)
        assert (tool_msg.text in call.result) if not error else (tool_msg.error.message in call.result)
        assert traj.meta.tool_surface == ["add", "divide"]
        assert traj.meta.scenario.commands() == frozenset()  # every call is a read by default
        card = score_trajectory(read_trajectory(runs[(name, 1)][0]))
        assert card.informative.reads == 1 and card.informative.commands == 0


def test_errored_sample_is_a_harness_error_without_end_state(logs, imported):
    _, result = imported
    for fmt in ("eval", "json"):
        [s] = [s for s in samples_of(logs[fmt]) if s.id == "boom" and s.epoch == 2]
        assert s.error is not None and not s.scores
        f, traj = runs_by_key(result, logs[fmt])[("boom", 2)]
        assert traj.final.reason == "harness_error"
        assert traj.final.done_payload["inspect"]["error"] == s.error.message[:500]
        assert score_trajectory(read_trajectory(f)).status == "incomplete"


def test_sample_that_hit_a_limit_is_a_budget_reason_and_still_scored(logs, imported):
    _, result = imported
    for fmt in ("eval", "json"):
        [s] = [s for s in samples_of(logs[fmt]) if s.id == "loop" and s.epoch == 1]
        assert s.limit is not None and s.limit.type == "message" and s.scores
        f, traj = runs_by_key(result, logs[fmt])[("loop", 1)]
        assert traj.final.reason == "budget_messages"
        assert traj.final.done_payload["inspect"]["limit"] == {"type": "message", "limit": s.limit.limit}
        card = score_trajectory(read_trajectory(f))
        assert card.status == "scored" and card.vector.all_passed is (s.scores["match"].value == "C")


def test_scenario_prompt_target_and_bundle(logs, imported):
    _, result = imported
    f, traj = runs_by_key(result, logs["json"])[("capital", 1)]
    sc = traj.meta.scenario
    assert sc.id == "tiny/capital" and sc.task_prompt() == "What is the capital of France?"
    bundle = score_trajectory(read_trajectory(f)).judge_bundle
    assert bundle["ground_truth"]["target"] == "Paris"
    assert bundle["task_prompt"] == "What is the capital of France?"
    assert [e["kind"] for e in bundle["transcript"]] == ["nudge", "assistant"]
    assert "match" not in json.dumps(bundle["transcript"])  # no scorer output reaches the transcript


def test_outcome_scorer_option_and_unknown_scorer(logs, tmp_path):
    res = import_files("inspect", [logs["eval"]], tmp_path / "a", outcome_scorer="model_graded_qa")
    assert not res.errors
    by_sample = {
        read_trajectory(f).meta.model_extra["inspect"]["sample_id"]: read_trajectory(f)
        for f in res.written[str(logs["eval"])]
    }
    assert by_sample["multiply"].final.success_eval.all_passed is True  # the lenient grader passes it
    bad = import_files("inspect", [logs["eval"]], tmp_path / "b", outcome_scorer="nope")
    [err] = bad.errors
    assert str(logs["eval"]) in str(err) and "'nope' is not a scorer of this log" in str(err)
    assert "match, model_graded_qa" in str(err)
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").iterdir())


def test_judge_scorers_option_makes_a_scorer_a_judge(logs, tmp_path):
    res = import_files("inspect", [logs["json"]], tmp_path, judge_scorers="match")
    kinds = {r["rater"]: r["rater_kind"] for r in ratings_of(tmp_path)}
    assert kinds == {"match": "judge", "model_graded_qa": "judge"}
    assert not res.errors
    # no deterministic scorer left: no end state, every run incomplete
    assert all(read_trajectory(f).final.success_eval is None for f in res.written[str(logs["json"])])


def test_outcome_threshold_uses_inspect_credit(logs, tmp_path):
    res = import_files("inspect", [logs["eval"]], tmp_path, outcome_threshold=0.0)
    assert all(
        read_trajectory(f).final.success_eval.all_passed
        for f in res.written[str(logs["eval"])]
        if read_trajectory(f).final.success_eval is not None
    )


def test_credit_matches_inspect_value_to_float():
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    for v in ["C", "I", "P", "N", "yes", "No", "TRUE", "false", "0.25", " 3 ", "1e2", True, False, 0, 1, 0.75, -2]:
        assert credit(v) == to_float(v), v
    for v in ["A", "maybe", "nan", "inf", [1], {"a": 1}, float("nan")]:
        assert credit(v) is None, v


def test_import_is_deterministic(logs, imported, tmp_path):
    first, _ = imported
    again = import_files("inspect", [logs["eval"], logs["json"]], tmp_path)
    assert not again.errors
    a = {p.name: p.read_bytes() for p in Path(first).iterdir()}
    b = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert a == b


def test_corrupt_log_is_an_error_naming_it_while_others_import(logs, tmp_path):
    corrupt_eval = tmp_path / "in" / "2026-01-01T00-00-00-00-00_broken_x.eval"
    corrupt_eval.parent.mkdir()
    corrupt_eval.write_bytes(logs["eval"].read_bytes()[:300])
    garbage_json = tmp_path / "in" / "2026-01-01T00-00-00-00-00_garbage_y.json"
    garbage_json.write_text('{"version": 2, "status": "success", "eval": ')
    shutil.copy(logs["json"], tmp_path / "in" / logs["json"].name)
    res = run("import", "inspect", tmp_path / "in", "-o", tmp_path / "out")
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2
    assert any(str(corrupt_eval.name) in l and "not a readable inspect_ai log" in l for l in lines)
    assert any(str(garbage_json.name) in l and "not a readable inspect_ai log" in l for l in lines)
    assert "Traceback" not in res.output
    assert "14 runs" in res.stdout
    assert len([p for p in (tmp_path / "out").iterdir() if p.name != "ratings.jsonl"]) == 14


def test_a_sample_that_cannot_be_converted_is_an_error_the_others_go_on(logs, tmp_path):
    log = inspect_log.read_eval_log(str(logs["eval"]))
    [bad] = [s for s in log.samples if s.id == "capital" and s.epoch == 1]
    bad.scores["match"].value = {"not": "a grade"}
    edited = tmp_path / logs["eval"].name
    inspect_log.write_eval_log(log, str(edited))
    res = import_files("inspect", [edited], tmp_path / "out")
    [err] = res.errors
    assert str(err).startswith(f"{edited}: sample 'capital' epoch 1: outcome scorer 'match' gave")
    assert len(res.written[str(edited)]) == 13


def test_cli_end_to_end_import_score_audit(logs, tmp_path):
    db = tmp_path / "e.db"
    out = tmp_path / "runs"
    res = run("import", "inspect", logs["eval"].parent, "-o", out, "--db", db)
    assert res.exit_code == 0, res.output
    assert "96 ratings" in res.stdout
    assert run("score", out, "--db", db, "--format", "json").exit_code == 0
    audit = run("audit", "--db", db, "--format", "json", "--resamples", "0")
    assert audit.exit_code == 0, audit.output
    report = json.loads(audit.stdout)
    assert report["counts"]["scorecards"] == 28 and report["counts"]["imported_ratings"] == 96
    [value] = [e for e in report["raters"] if e["dimension"] == "value"]
    assert value["rater_kinds"] == {"match": "mechanical", "model_graded_qa": "judge"}
    # counts straight from inspect_ai's reader
    pairs = [
        (s.scores["model_graded_qa"].value, s.scores["match"].value)
        for p in logs.values()
        for s in samples_of(p)
        if s.scores
    ]
    [cross] = value["judge_vs_mechanical"]
    assert (
        (cross["judge"], cross["mechanical"], cross["n"])
        == ("model_graded_qa", "match", len(pairs))
        == ("model_graded_qa", "match", 24)
    )
    assert cross["agree"] == sum(j == m for j, m in pairs)
    assert cross["lenient"] == sum(credit(j) > credit(m) for j, m in pairs) == 4  # "forty-two" x 4
    assert cross["strict"] == sum(credit(j) < credit(m) for j, m in pairs)
    labels = cross["confusion_matrix"]["labels"]
    assert cross["confusion_matrix"]["matrix"] == [
        [sum(1 for p in pairs if p == (a, b)) for b in labels] for a in labels
    ]
    assert value["alt_test"] == []  # no human raters
    table = run("audit", "--db", db, "--resamples", "0")
    assert "-- Judge against mechanical scorers --" in table.stdout
    assert re.search(r"^value +model_graded_qa +match +24 ", table.stdout, re.M)


def test_alt_test_uses_human_raters_not_mechanical_ones(logs, tmp_path):
    db = tmp_path / "e.db"
    out = tmp_path / "runs"
    assert run("import", "inspect", logs["eval"], "-o", out, "--db", db).exit_code == 0
    items = sorted({r["item_id"] for r in ratings_of(out)})
    humans = tmp_path / "humans.csv"
    humans.write_text(
        "item_id,rater,dimension,value\n" + "".join(f"{i},h{h},value,C\n" for i in items for h in range(3))
    )
    assert run("annotations", "import", humans, "--db", db).exit_code == 0
    report = json.loads(run("audit", "--db", db, "--format", "json", "--resamples", "0").stdout)
    [value] = [e for e in report["raters"] if e["dimension"] == "value"]
    [alt] = value["alt_test"]
    assert alt["judge"] == "model_graded_qa" and alt["humans"] == ["h0", "h1", "h2"]


def test_ratings_file_merges_and_score_skips_it(logs, tmp_path):
    import_files("inspect", [logs["eval"]], tmp_path)
    n_eval = len(ratings_of(tmp_path))
    import_files("inspect", [logs["json"]], tmp_path)
    assert len(ratings_of(tmp_path)) == 2 * n_eval == 96
    res = run("score", tmp_path, "--format", "json", "--no-db")
    assert res.exit_code == 0, res.output
    assert "ratings.jsonl" not in res.output


def test_mechanical_rater_kind_in_annotations_import(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"item_id":"a","rater":"match","rater_kind":"mechanical","dimension":"value","value":"C"}\n')
    res = run("annotations", "import", f, "--db", tmp_path / "e.db")
    assert res.exit_code == 0 and "raters match" in res.stdout


def test_db_option_is_a_usage_error_for_formats_without_ratings(tmp_path):
    fixture = ROOT / "tests" / "fixtures" / "openai_messages" / "transcripts.jsonl"
    res = run("import", "openai-messages", fixture, "-o", tmp_path, "--db", tmp_path / "e.db")
    assert res.exit_code == 2 and "--db is not used by format openai-messages" in res.stderr
    res = run("import", "openai-messages", tmp_path, "-o", tmp_path / "o")
    assert res.exit_code == 2 and "is a directory" in res.stderr
    res = run("import", "openai-messages", fixture, "-o", tmp_path / "o", "--outcome-scorer", "x")
    assert res.exit_code == 2 and "--outcome-scorer is not used by format openai-messages" in res.stderr


def test_listing_formats_does_not_import_inspect_ai():
    loaded = modules_loaded_by(
        "from click.testing import CliRunner\nfrom evalkit.cli import cli\n"
        "r = CliRunner().invoke(cli, ['import', '--list'])\n"
        "assert 'inspect' in r.output, r.output"
    )
    assert among(loaded, ("inspect_ai",)) == []


def test_evalkit_judge_works_on_imported_runs_and_is_audited_with_the_scorers(logs, tmp_path, server):
    db = tmp_path / "e.db"
    out = tmp_path / "runs"
    assert run("import", "inspect", logs["json"], "-o", out, "--db", db).exit_code == 0
    assert run("score", out, "--db", db, "--format", "json").exit_code == 0
    res = run(
        "judge",
        "--db",
        db,
        "--model",
        "openai/judge-a",
        "--api-base",
        server.api_base,
        "--judge-config",
        fast_config(tmp_path),
    )
    assert res.exit_code == 0, res.output
    assert 0 < server.count <= 14  # runs with the same bundle (identical epochs) share one call
    prompts = [r["raw"] for r in server.requests]
    assert any("Paris" in p and "What is the capital of France?" in p for p in prompts)  # prompt and target
    assert not any("model_graded_qa" in p for p in prompts)  # the other scorers' values stay out
    report = json.loads(run("audit", "--db", db, "--format", "json", "--resamples", "0").stdout)
    [outcome] = [e for e in report["raters"] if e["dimension"] == "outcome"]
    assert outcome["rater_kinds"] == {
        "openai/judge-a@procedure_v1": "judge",
        "match": "mechanical",
        "model_graded_qa": "judge",
    }
    assert sorted((c["judge"], c["mechanical"]) for c in outcome["judge_vs_mechanical"]) == [
        ("model_graded_qa", "match"),
        ("openai/judge-a@procedure_v1", "match"),
    ]
    [pairing] = [p for p in report["pairings"] if p["pairing"] == "outcome"]
    assert pairing["n"] == 12  # the evalkit judge against all_passed, on the 12 scored runs


def test_without_inspect_ai_the_format_is_a_usage_error(tmp_path):
    code = (
        "import sys\nsys.modules['inspect_ai'] = None\nsys.modules['inspect_ai.log'] = None\n"
        "from click.testing import CliRunner\nfrom evalkit.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['import', 'inspect', {str(tmp_path)!r}, '-o', {str(tmp_path / 'o')!r}])\n"
        "print(r.exit_code)\nprint(r.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    code, message = out.stdout.split("\n", 1)
    assert code == "2" and "format inspect needs inspect_ai: pip install 'evalkit[inspect]'" in message


def test_hostile_sample_id_in_an_error_line_is_sanitized(logs, tmp_path):
    log = inspect_log.read_eval_log(str(logs["json"]))
    [bad] = [s for s in log.samples if s.id == "capital" and s.epoch == 1]
    bad.id = "capital\x1b[2J\rX"
    bad.scores["match"].value = {"not": "a grade"}
    edited = tmp_path / logs["json"].name
    inspect_log.write_eval_log(log, str(edited))
    res = run("import", "inspect", edited, "-o", tmp_path / "out")
    assert res.exit_code == 1
    [line] = res.stderr.strip().splitlines()
    assert "outcome scorer 'match' gave" in line and "\x1b" not in line and "\r" not in line
