"""A table without an odd cell reads the same from the file as through its view: the audit reads
such an ``annotations`` and ``judge_calls`` table itself (evalkit.db.cells.plain_tables), and an
odd cell or a column without text affinity sends it back through the view."""

from __future__ import annotations

import sqlite3

import pytest
from test_audit_columns_match_reference import random_db

from evalkit.agreement.audit import build_audit
from evalkit.db import open_readonly, read_call_costs, read_judge_columns
from evalkit.db.cells import odd_cells, odd_cells_by_table, odd_lines, plain_tables

TABLES = ("annotations", "judge_calls")


def _plain(path):
    with open_readonly(path) as db:
        by_table = odd_cells_by_table(db)
        return plain_tables(db, by_table, TABLES), odd_lines(by_table) == odd_cells(db)


def _calls(path):
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO judge_calls (cache_key, run_id, judge_model, rubric_id, status, cost_usd, latency_ms, "
        "prompt_tokens, started_at) SELECT annotation_id, run_id, judge_model, rubric_id, status, 0.001 * rowid, "
        "10.0 + rowid % 7, rowid, created_at FROM annotations"
    )
    con.commit()
    con.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_clean_table_reads_the_same_from_the_file(tmp_path, seed):
    path = tmp_path / "a.db"
    random_db(path, seed)
    _calls(path)
    plain, same_lines = _plain(path)
    assert plain == set(TABLES) and same_lines
    with open_readonly(path) as db:
        for judge in (None, "judge-a"):
            viewed, read = read_judge_columns(db, judge), read_judge_columns(db, judge, plain=True)
            assert list(read) == list(viewed) and read.stale == viewed.stale
            assert read_call_costs(db, judge, plain=TABLES) == read_call_costs(db, judge)


def _audit_both_ways(path):
    """The audit as the command reads it, and through the views alone (as the report has it read)."""
    with open_readonly(path) as db:
        lines = odd_cells(db)
    return build_audit(path, n_resamples=20), build_audit(path, n_resamples=20, odd=lines)


def test_an_odd_cell_or_a_column_without_text_affinity_is_read_through_the_view(tmp_path):
    path = tmp_path / "a.db"
    random_db(path, 1)
    _calls(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE judge_calls SET cost_usd = 'n/a' WHERE rowid = 2")
    con.commit()
    con.close()
    plain, same_lines = _plain(path)
    assert plain == {"annotations"} and same_lines
    mine, viewed = _audit_both_ways(path)
    assert mine == viewed
    assert any(w.startswith("judge_calls.cost_usd:") for w in mine["warnings"])

    # a file whose created_at takes numbers as numbers (no text affinity): the view reads them as text
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = 1")
    con.execute(
        "UPDATE sqlite_master SET sql = replace(sql, '\"created_at\" TEXT', '\"created_at\" NUMERIC') "
        "WHERE name = 'annotations'"
    )
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE annotations SET created_at = rowid % 3")
    con.commit()
    con.close()
    plain, _ = _plain(path)
    assert plain == set()
    mine, viewed = _audit_both_ways(path)
    assert mine == viewed
