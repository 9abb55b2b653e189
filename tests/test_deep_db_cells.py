"""A database cell holding JSON nested deeper than Python's decoder goes (100,000 levels) is hostile
bytes a shared file can hold (another tool, a hand edit): every page and command that reads such a
cell reads it as no value, never a 500 or a traceback."""

from __future__ import annotations

import sqlite3

import judge_helpers as jh
import pytest
import view_helpers as vh
from click.testing import CliRunner

from evalkit.cli import cli

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def judged(tmp_path):
    """Three scored runs, each with one judge annotation; run-000's card is too deep to decode."""
    db = jh.scored_db(tmp_path, 3)
    conn = sqlite3.connect(db)
    for run_id, bundle_hash in conn.execute("SELECT run_id, bundle_hash FROM scorecards").fetchall():
        conn.execute(
            "INSERT INTO annotations (annotation_id, run_id, bundle_hash, judge_model, rubric_id, rubric_version, "
            "blind, replicate, status, annotation, rationale, created_at) VALUES "
            "(?, ?, ?, 'openai/judge', 'procedure_v1', 1, 1, 0, 'ok', ?, 'why', '2026-01-01T00:00:00.000Z')",
            (f"a-{run_id}", run_id, bundle_hash, DEEP if run_id == "run-001" else '{"outcome": "pass"}'),
        )
        conn.execute(
            "INSERT INTO annotation_values (annotation_id, run_id, judge_model, rubric_id, dimension, value, "
            "confidence, blind, replicate) VALUES (?, ?, 'openai/judge', 'procedure_v1', 'outcome', ?, 0.9, 1, 0)",
            (f"a-{run_id}", run_id, DEEP if run_id == "run-002" else '"pass"'),
        )
    conn.execute("UPDATE scorecards SET card = ? WHERE run_id = 'run-000'", (DEEP,))
    conn.commit()
    conn.close()
    return db


def test_pages_over_cells_nested_too_deep_answer(judged):
    with vh.client(judged) as c:
        for run_id in ("run-000", "run-001", "run-002"):
            for path in (vh.run_url(run_id), "/api" + vh.run_url(run_id)):
                for reveal in ("0", "1"):
                    answer = c.get(path, params={"reveal": reveal})
                    assert answer.status_code == 200, (path, reveal, answer.text[-300:])
        for path in ("/runs", "/api/runs", "/disagreements", "/api/disagreements"):
            assert c.get(path).status_code == 200, path


@pytest.mark.parametrize(
    "command",
    [
        ["audit"],
        ["audit", "--format", "json"],
        ["report", "--html"],
        ["report", "--markdown"],
        ["annotations", "list"],
        ["compare"],
    ],
    ids=" ".join,
)
def test_commands_over_cells_nested_too_deep_give_no_traceback(judged, tmp_path, command):
    out = [str(tmp_path / "out")] if command[0] == "report" else []
    result = CliRunner().invoke(cli, [*command, *out, "--db", judged])
    assert result.exit_code in (0, 1), result.output[-500:]  # written, or one line naming the bad row
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output[-500:]
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    if command[0] == "report":
        assert result.exit_code == 0 and (tmp_path / "out").stat().st_size > 1000, result.output[-500:]
