"""Issue #10 item 6: a judge name means the same everywhere — `audit --judge`, `report --judge`,
`cache clear --model` accept the full model string or the part after the provider prefix; an
unknown name is an error listing the judges present, never an empty audit."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from report_fixtures import JUDGES, build_db

from evalkit.cli import cli
from evalkit.db import JudgeNotStored, resolve_judge

PRESENT = ", ".join(sorted(JUDGES))  # openai/judge-large, openai/judge-small


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return build_db(tmp_path_factory.mktemp("names"), evil=False)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_resolve_judge_full_and_short_names():
    present = ["openai/gpt-x", "anthropic/claude-y", "plugin:thing"]
    assert resolve_judge("openai/gpt-x", present) == "openai/gpt-x"
    assert resolve_judge("gpt-x", present) == "openai/gpt-x"
    assert resolve_judge("claude-y", present) == "anthropic/claude-y"
    assert resolve_judge("plugin:thing", present) == "plugin:thing"
    assert resolve_judge("openai/local", ["local"]) == "local"  # stored without a prefix


def test_resolve_judge_other_provider_is_not_a_match():
    with pytest.raises(JudgeNotStored) as err:
        resolve_judge("azure/gpt-x", ["openai/gpt-x"], "e.db")
    assert str(err.value) == "e.db: no judge 'azure/gpt-x' in this database; judges present: openai/gpt-x"


def test_resolve_judge_ambiguous_short_name_is_an_error():
    with pytest.raises(JudgeNotStored) as err:
        resolve_judge("gpt-x", ["openai/gpt-x", "azure/gpt-x"], "e.db")
    assert "ambiguous" in str(err.value) and "azure/gpt-x, openai/gpt-x" in str(err.value)


def test_resolve_judge_with_no_judges_says_so():
    with pytest.raises(JudgeNotStored) as err:
        resolve_judge("gpt-x", [], "e.db")
    assert "judges present: none" in str(err.value)


def test_audit_judge_short_name_equals_full_name(db):
    full = invoke("audit", "--db", str(db), "--judge", "openai/judge-small", "--format", "json", "--resamples", "20")
    short = invoke("audit", "--db", str(db), "--judge", "judge-small", "--format", "json", "--resamples", "20")
    assert full.exit_code == short.exit_code == 0, (full.stderr, short.stderr)
    assert short.stdout == full.stdout
    assert '"judge": "openai/judge-small"' in full.stdout  # the filter names the stored judge
    counts = json.loads(full.stdout)["counts"]
    assert counts["annotations"] > 0, counts


def test_audit_unknown_judge_lists_judges_present(db):
    result = invoke("audit", "--db", str(db), "--judge", "gpt-nope")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == f"error: {db}: no judge 'gpt-nope' in this database; judges present: {PRESENT}"


def test_report_judge_short_name_equals_full_name(db, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    full = invoke("report", "--db", str(db), "--markdown", "-", "--judge", "openai/judge-large")
    short = invoke("report", "--db", str(db), "--markdown", "-", "--judge", "judge-large")
    assert full.exit_code == short.exit_code == 0, (full.stderr, short.stderr)
    assert short.stdout == full.stdout
    assert "openai/judge-large" in full.stdout and "openai/judge-small" not in full.stdout


def test_report_unknown_judge_lists_judges_present(db):
    result = invoke("report", "--db", str(db), "--markdown", "-", "--judge", "judge-medium")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {db}: no judge 'judge-medium' in this database; judges present: {PRESENT}"


def _calls(db, model: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM judge_calls WHERE judge_model = ?", (model,)).fetchone()[0]
    finally:
        conn.close()


def test_cache_clear_accepts_short_name(tmp_path):
    db = build_db(tmp_path, evil=False)
    small, large = _calls(db, "openai/judge-small"), _calls(db, "openai/judge-large")
    assert small and large
    result = invoke("cache", "clear", "--db", str(db), "--model", "judge-small")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"cleared {small} cached calls"
    assert _calls(db, "openai/judge-small") == 0 and _calls(db, "openai/judge-large") == large
    result = invoke("cache", "clear", "--db", str(db), "--model", "openai/judge-large")
    assert result.stdout.strip() == f"cleared {large} cached calls"


def test_cache_clear_unknown_model_lists_judges_and_deletes_nothing(tmp_path):
    db = build_db(tmp_path, evil=False)
    before = _calls(db, "openai/judge-small")
    result = invoke("cache", "clear", "--db", str(db), "--model", "gpt-nope")
    assert result.exit_code == 1
    assert f"no judge 'gpt-nope' in this database; judges present: {PRESENT}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert _calls(db, "openai/judge-small") == before


def test_an_imported_raters_name_given_as_a_judge_says_what_it_is(db, tmp_path):
    """Ratings imported with ``--kind judge`` are in every audit and estimate, whatever
    --judge says; their rater's name given to --judge was "no judge ... in this database" while
    the estimate showed its rows. The error says what the name is and what --judge chooses among."""
    import shutil

    copy = tmp_path / "r.db"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy)
    item = conn.execute("SELECT run_id FROM scorecards LIMIT 1").fetchone()[0]
    conn.close()
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(
        json.dumps({"item_id": item, "rater": "corr-judge", "dimension": "outcome", "value": "pass"}) + "\n"
    )
    done = invoke("annotations", "import", str(ratings), "--db", str(copy), "--kind", "judge")
    assert done.exit_code == 0, done.output
    for command in (["audit", "--resamples", "0"], ["estimate"]):
        res = invoke(*command, "--db", str(copy), "--judge", "corr-judge")
        assert res.exit_code != 0
        assert "'corr-judge' is an imported rater (evalkit annotations import), not a judge that ran here" in res.output
        assert f"--judge chooses among the judges that ran: {PRESENT}" in res.output
    assert "no judge 'nope' in this database" in invoke("audit", "--db", str(copy), "--judge", "nope").output
