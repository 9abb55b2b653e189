"""odd_cells names every odd column of a table, each with its first odd row in key order and how
many rows hold one, whichever columns of the same table are odd together (the lines are written
out here from the rule in evalkit/db/cells.py's docstring, not from its SQL)."""

from __future__ import annotations

import sqlite3

from evalkit.db import open_readonly, open_write
from evalkit.db.cells import odd_cells

VALUES = (
    "annotation_values (annotation_id, run_id, judge_model, rubric_id, dimension, value, confidence, blind, replicate)"
)
CALLS = "judge_calls (cache_key, run_id, judge_model, rubric_id, status, prompt_tokens, cost_usd, latency_ms, request)"


def _db(tmp_path, values, calls=()):
    path = tmp_path / "odd.db"
    open_write(path).close()
    con = sqlite3.connect(path)
    con.executemany(f"INSERT INTO {VALUES} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
    con.executemany(f"INSERT INTO {CALLS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", calls)
    con.commit()
    con.close()
    with open_readonly(path) as db:
        return odd_cells(db)


def _value(ann, dim, value='"pass"', confidence=0.5, blind=1, replicate=0, run="r1"):
    return (ann, run, "judge-a", "procedure_v1", dim, value, confidence, blind, replicate)


def test_clean_table_has_no_lines(tmp_path):
    assert _db(tmp_path, [_value("a1", "outcome"), _value("a1", "safety", "3", None)]) == []


def test_every_odd_column_of_one_table_is_named(tmp_path):
    rows = [
        _value("a1", "outcome"),
        # stored out of key order: the first odd row named is the first in key order, not in the file
        _value("a9", "outcome", value=b"\x00", confidence="n/a", blind=-1, replicate=1.5),
        _value("a2", "safety", value=b"\xff\xfe", confidence=float("inf"), blind=10**18, replicate="two"),
        _value("a3", "outcome", confidence=float("nan"), run=None),  # NaN is stored as NULL: not odd
        _value("a4", b"dim", run=b"r"),
        _value("a5", "outcome", replicate=2**53),  # the largest integer kept
    ]
    assert _db(tmp_path, rows) == [
        "annotation_values.run_id: row annotation_id='a3', dimension='outcome' holds NULL, not text; "
        "the row is left out (and 1 more rows)",
        "annotation_values.dimension: row annotation_id='a4', dimension=<blob of 3 bytes> holds a blob, not text; "
        "the row is left out",
        "annotation_values.value: row annotation_id='a2', dimension='safety' holds a blob, not text; "
        "read as missing (and 1 more rows)",
        "annotation_values.confidence: row annotation_id='a2', dimension='safety' holds a number out of range, "
        "not a number from 0 to 1; read as missing (and 1 more rows)",
        "annotation_values.blind: row annotation_id='a2', dimension='safety' holds a number out of range, "
        "not an integer from 0 to 2**53; read as missing (and 1 more rows)",
        "annotation_values.replicate: row annotation_id='a2', dimension='safety' holds text, "
        "not an integer from 0 to 2**53; read as missing (and 1 more rows)",
    ]


def test_odd_columns_after_a_large_text_and_in_two_tables(tmp_path):
    big = "x" * 100_000  # a cell kept on overflow pages, before the odd ones
    calls = [
        ("k1", "r1", "judge-a", "procedure_v1", "ok", 10, 0.5, 100.0, big),
        ("k2", "r1", "judge-a", "procedure_v1", "ok", -3, "n/a", -1.0, b"\x01"),
        ("k3", "r1", "judge-a", "procedure_v1", "error", 2.5, 2.0**53 + 2, None, big),
    ]
    assert _db(tmp_path, [_value("a1", "outcome", value=b"")], calls) == [
        "judge_calls.request: row cache_key='k2' holds a blob, not text; read as missing",
        "judge_calls.prompt_tokens: row cache_key='k2' holds a negative number, not an integer from 0 to 2**53; "
        "read as missing (and 1 more rows)",
        "judge_calls.cost_usd: row cache_key='k2' holds text, not a number from 0 to 2**53; "
        "read as missing (and 1 more rows)",
        "judge_calls.latency_ms: row cache_key='k2' holds a negative number, not a number from 0 to 2**53; "
        "read as missing",
        "annotation_values.value: row annotation_id='a1', dimension='outcome' holds a blob, not text; read as missing",
    ]
