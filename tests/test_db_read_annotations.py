"""read_annotations: each value carries its annotation's fields, the annotation JSON backs up an empty
rationale column and an outcome without a confidence column, a value's own run, judge, blind and
replicate columns win over its annotation's, and the order is answer order (created_at, id), then
dimension, whatever order the rows are stored in."""

from __future__ import annotations

import sqlite3

from audit_helpers import Annotator

from evalkit.db import open_readonly, read_annotations


def _read(path, **kw):
    with open_readonly(path) as db:
        return list(read_annotations(db, **kw))


def test_json_backs_up_empty_columns_and_values_keep_their_own(tmp_path):
    path = tmp_path / "a.db"
    ann = Annotator(path)
    first = ann.add("r1", {"outcome": "pass", "safety": 3}, confidence=0.75, rationale="kept")
    second = ann.add("r2", {"safety": 1, "outcome": "fail"}, confidence=0.5, rationale="from json", judge="judge-b")
    third = ann.add("r3", {"outcome": "pass"}, confidence=None, rationale="none")
    ann.close()
    con = sqlite3.connect(path)
    # the confidence column of the first outcome is empty: the annotation JSON's is read
    con.execute("UPDATE annotation_values SET confidence = NULL WHERE annotation_id = ?", (first,))
    # no rationale column on the second: the JSON's; its safety value names its own run and replicate
    con.execute("UPDATE annotations SET rationale = NULL WHERE annotation_id = ?", (second,))
    con.execute(
        "UPDATE annotation_values SET run_id = 'r9', replicate = 4, blind = 0 "
        "WHERE annotation_id = ? AND dimension = 'safety'",
        (second,),
    )
    # an outcome whose column and JSON both lack a confidence, and a value without blind/replicate
    con.execute("UPDATE annotation_values SET blind = NULL, replicate = NULL WHERE annotation_id = ?", (third,))
    con.commit()
    con.close()
    got = [(v.annotation_id, v.run_id, v.judge_model, v.dimension, v.value, v.confidence, v.blind, v.replicate,
            v.rationale) for v in _read(path)]  # fmt: skip
    assert got == [
        (first, "r1", "judge-a", "outcome", "pass", 0.75, True, 0, "kept"),
        (first, "r1", "judge-a", "safety", 3, None, True, 0, "kept"),
        (second, "r2", "judge-b", "outcome", "fail", 0.5, True, 0, "from json"),
        (second, "r9", "judge-b", "safety", 1, None, False, 4, "from json"),
        (third, "r3", "judge-a", "outcome", "pass", None, True, 0, "none"),
    ]
    assert all(type(v.blind) is bool and type(v.replicate) is int for v in _read(path))
    assert [v.dimension for v in _read(path, judge="judge-b")] == ["outcome", "safety"]


def test_answer_order_not_storage_order(tmp_path):
    path = tmp_path / "a.db"
    ann = Annotator(path)
    ids = [ann.add(f"r{i}", {"safety": i, "outcome": "pass", "procedure": 1}) for i in range(4)]
    ann.close()
    con = sqlite3.connect(path)
    # the last answer stored first, and one without a time (it comes first: an empty time)
    con.execute("UPDATE annotations SET created_at = '2025-06-01T00:00:00Z' WHERE annotation_id = ?", (ids[3],))
    con.execute("UPDATE annotations SET created_at = NULL WHERE annotation_id = ?", (ids[2],))
    con.commit()
    con.close()
    got = [(v.annotation_id, v.dimension) for v in _read(path)]
    order = [ids[2], ids[3], ids[0], ids[1]]
    assert got == [(a, d) for a in order for d in ("outcome", "procedure", "safety")]


def test_values_stored_apart_beside_orphans_and_odd_ids_read_as_their_annotations(tmp_path):
    """An annotation's values are read as its own wherever they are stored: split by another
    annotation's, next to values of no annotation (an unknown id, a NULL id, a blob id), and with
    a value that names another run and judge than its neighbours."""
    path = tmp_path / "a.db"
    ann = Annotator(path)
    a = ann.add("r1", {"outcome": "pass", "safety": 3, "procedure": 2}, confidence=0.5)
    b = ann.add("r2", {"outcome": "fail", "safety": 1, "procedure": 0}, judge="judge-b")
    ann.close()
    con = sqlite3.connect(path)
    con.execute("UPDATE annotation_values SET run_id = 'r8', judge_model = 'judge-c' WHERE dimension = 'safety'")
    con.commit()
    before = _read(path)
    rows = {(r[0], r[4]): r for r in con.execute("SELECT * FROM annotation_values")}
    con.execute("DELETE FROM annotation_values")
    orphan = ("zz", "r7", "judge-d", "rubric-x", "outcome", '"pass"', None, 1, 0)
    stored = [
        rows[a, "outcome"],
        orphan,
        (None, *rows[a, "outcome"][1:4], "null-id", "1", None, 1, 0),
        rows[b, "outcome"],
        rows[b, "procedure"],
        rows[a, "procedure"],
        (sqlite3.Binary(a.encode()), *rows[a, "safety"][1:4], "blob-id", "1", None, 1, 0),
        rows[a, "safety"],
        rows[b, "safety"],
    ]
    con.executemany("INSERT INTO annotation_values VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", stored)
    con.commit()
    con.close()
    assert _read(path) == before
    assert [(v.annotation_id, v.run_id, v.judge_model, v.dimension) for v in before] == [
        (a, "r1", "judge-a", "outcome"),
        (a, "r1", "judge-a", "procedure"),
        (a, "r8", "judge-c", "safety"),
        (b, "r2", "judge-b", "outcome"),
        (b, "r2", "judge-b", "procedure"),
        (b, "r8", "judge-c", "safety"),
    ]


def test_columns_code_annotations_in_answer_order_and_names_in_stored_order(tmp_path):
    """JudgeColumns: each value's annotation is its place in answer order, one run per annotation;
    runs, judges and dimensions are listed in the order the stored rows first name them."""
    from evalkit.db import read_judge_columns

    path = tmp_path / "a.db"
    ann = Annotator(path)
    ids = [ann.add(f"r{i}", {"safety": i, "outcome": "pass"}, judge=f"judge-{'ab'[i % 2]}") for i in range(5)]
    ann.close()
    con = sqlite3.connect(path)
    for i, when in enumerate(["2025-06-05", "2025-06-01", "2025-06-04", "2025-06-02", "2025-06-03"]):
        con.execute("UPDATE annotations SET created_at = ? WHERE annotation_id = ?", (when, ids[i]))
    con.commit()
    con.close()
    with open_readonly(path) as db:
        cols = read_judge_columns(db)
    order = [ids[1], ids[3], ids[4], ids[2], ids[0]]
    assert cols.annotation_ids == order
    assert cols.annotation.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert cols.runs == ["r0", "r1", "r2", "r3", "r4"]
    assert cols.judges == ["judge-a", "judge-b"]
    assert [cols.dimensions[d] for d in cols.dimension.tolist()] == ["outcome", "safety"] * 5
    assert [cols.runs[r] for r in cols.run.tolist()] == [f"r{i}" for i in (1, 1, 3, 3, 4, 4, 2, 2, 0, 0)]
