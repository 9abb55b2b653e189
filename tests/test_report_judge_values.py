"""The judge section's value counts (evalkit.report.data._primary_value_counts) are the primary
values evalkit.db.read_primary_values yields, counted by label, whatever the cells hold."""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict

import pytest
import report_fixtures as rf

from evalkit.db import judge_models, open_readonly, read_primary_values
from evalkit.report.data import _primary_value_counts, value_label


def _expected(db, judge):
    values = defaultdict(Counter)
    for judge_model, rubric_id, dimension, value in read_primary_values(db, judge):
        values[(judge_model, rubric_id, dimension)][value_label(value)] += 1
    return values


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = rf.build_db(tmp_path_factory.mktemp("values"))
    con = sqlite3.connect(path)
    first = con.execute(
        "SELECT annotation_id, run_id, judge_model, rubric_id FROM annotation_values LIMIT 1"
    ).fetchone()
    odd = [1, 1.0, "1", "1.0", -0.0, 0.0, b"2", "[1, 2]", '{"b": 1, "a": 2}', "not json", "NaN", None, "true", '"x"']
    for i, value in enumerate(odd):  # cells of every kind, alike and not, the primary and a replicate
        for replicate in (0, 1):
            con.execute(
                "INSERT INTO annotation_values (annotation_id, run_id, judge_model, rubric_id, dimension, value, "
                "replicate) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (f"odd-{i}-{replicate}", first[1], first[2], first[3], f"odd{i % 3}", value, replicate),
            )
    # one annotation made stale: its run re-scored with another bundle
    con.execute("UPDATE annotations SET bundle_hash = 'other' WHERE annotation_id = ?", (first[0],))
    con.commit()
    con.close()
    return path


def test_counts_are_read_primary_values_counted(db):
    with open_readonly(db) as conn:
        judges = judge_models(conn)
        assert len(judges) >= 2
        for judge in (None, *judges):
            got = _primary_value_counts(conn, judge)
            want = _expected(conn, judge)
            assert got == want
            assert list(got) == list(want)  # the same keys, first read first
            assert sum(sum(c.values()) for c in got.values()) == sum(1 for _ in read_primary_values(conn, judge))
