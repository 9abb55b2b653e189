"""The score writer's bulk path (evalkit/db: scores.py, schema.py): the commands table has one
index, its primary key's, which every lookup by run_id uses; a staged batch whose run_id is already
in the file replaces that run's commands."""

from __future__ import annotations

import sqlite3

import pytest
from engine_helpers import make_corpus

from evalkit.db import TABLES
from evalkit.db.scores import STAGE, Store, batch_rows, stage_rows
from evalkit.engines.job import ScoreJob
from evalkit.engines.worker import score_one

SCORE_TABLES = ("runs", "scorecards", "commands", "bundles")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """CardRows of 8 runs (run-0001 twice: the later one, at the end, has fewer commands)."""
    corpus = make_corpus(tmp_path_factory.mktemp("corpus"), n=30)
    files = [corpus / "part-0" / f"run-{i:04d}.jsonl" for i in range(8)] + [corpus / "part-2" / "run-0055a-dup.jsonl"]
    return [score_one(ScoreJob(db_rows=True), str(f)).rows for f in files]


def dump(path) -> dict[str, list[tuple]]:
    """Every row of the score tables in rowid order, each value with its SQLite type."""
    conn = sqlite3.connect(path)
    try:
        return {
            t: [
                tuple((type(v).__name__, v) for v in row)
                for row in conn.execute(f'SELECT rowid, * FROM "{t}" ORDER BY rowid')
            ]
            for t in SCORE_TABLES
        }
    finally:
        conn.close()


def pragma(path, name: str):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchall()
    finally:
        conn.close()


def indexes(path, table: str) -> list[str]:
    return sorted(r[1] for r in pragma(path, f'index_list("{table}")'))


def test_commands_have_only_their_primary_key_index(tmp_path, rows):
    path = tmp_path / "e.db"
    with Store(path) as store:
        store.save_rows(rows)
    assert indexes(path, "commands") == ["sqlite_autoindex_commands_1"]  # (run_id, idx)
    assert TABLES["commands"].indexes == ()
    conn = sqlite3.connect(path)
    conn.execute(f"ATTACH ':memory:' AS {STAGE}")
    conn.execute(f"CREATE TABLE {STAGE}.runs (run_id TEXT)")
    for sql in (
        "SELECT * FROM commands WHERE run_id = 'run-0001' ORDER BY idx",
        "DELETE FROM commands WHERE run_id = 'run-0001'",
        f'DELETE FROM main.commands WHERE run_id IN (SELECT run_id FROM {STAGE}."runs")',
    ):
        plan = " ".join(r[-1] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "USING INDEX sqlite_autoindex_commands_1 (run_id=?)" in plan, (sql, plan)
        assert "SCAN commands" not in plan and "TEMP B-TREE" not in plan, (sql, plan)
    # read_commands: every command in (run_id, idx) order, read along that index without a sort
    plan = " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM commands ORDER BY run_id, idx"))
    assert plan == "SCAN commands USING INDEX sqlite_autoindex_commands_1", plan
    conn.close()


def test_a_staged_batch_whose_run_id_is_already_stored_replaces_its_commands(tmp_path, rows):
    """run-0001 stored by an earlier writer (its 7 commands), then read again in a staged batch with
    fewer: only the later commands remain, as with every card stored one by one."""
    assert rows[1]["runs"][0][0] == rows[-1]["runs"][0][0] == "run-0001"
    assert len(rows[1]["commands"]) > len(rows[-1]["commands"]) > 0
    path = tmp_path / "e.db"
    with Store(path) as store:
        store.save_rows(rows[:-1])
    with Store(path) as store:
        store.save_batches([stage_rows(batch_rows([rows[0], rows[-1]]))])
    reference = tmp_path / "one-by-one.db"
    with Store(reference) as store:
        for r in [*rows[:-1], rows[0], rows[-1]]:
            store.save_rows([r])
    conn = sqlite3.connect(path)
    got = conn.execute("SELECT idx FROM commands WHERE run_id = 'run-0001' ORDER BY idx").fetchall()
    conn.close()
    assert got == [(r[1],) for r in rows[-1]["commands"]]
    assert dump(path) == dump(reference)
