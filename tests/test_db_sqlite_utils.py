"""sqlite-utils on evalkit's own connection (`Database.utils`, `Store.db`): its writes inside an
evalkit transaction are all or nothing with it, the connection keeps evalkit's settings, and its
reads see what evalkit's readers see (a read-only file's TEMP views and tables)."""

from __future__ import annotations

import sqlite3

import pytest
from import_helpers import among, modules_loaded_by

from evalkit.db import DbError, Store, open_readonly, open_write
from evalkit.db.batches import add_submission, submissions
from evalkit.db.probes import read_probe_annotations
from evalkit.db.reviews import ReviewTables, read_reviews, read_samples


def test_a_failed_sqlite_utils_insert_rolls_back_the_whole_evalkit_transaction(tmp_path):
    db = open_write(tmp_path / "e.db")
    with pytest.raises(DbError, match="NOT NULL constraint failed: judge_batch_items.custom_id"):
        add_submission(
            db,
            {"submission_id": "s1", "judge_model": "m", "rubric_id": "r", "status": "submitting"},
            [{"custom_id": "c1", "run_id": "r1"}, {"custom_id": None, "run_id": "r2"}],
        )
    assert not db.conn.in_transaction
    assert db.one("SELECT count(*) FROM judge_batches")[0] == 0
    assert db.one("SELECT count(*) FROM judge_batch_items")[0] == 0
    add_submission(
        db,
        {"submission_id": "s1", "judge_model": "m", "rubric_id": "r", "status": "submitting"},
        [{"custom_id": "c1", "run_id": "r1"}],
    )
    db.close()
    with open_readonly(tmp_path / "e.db") as ro:
        (sub,) = submissions(ro, model="m")
    assert sub["submission_id"] == "s1" and sub["status"] == "submitting"
    assert list(sub["items"]) == ["c1"] and sub["items"]["c1"]["run_id"] == "r1"


def test_a_review_whose_rating_cannot_be_written_leaves_no_review(tmp_path):
    tables = ReviewTables(tmp_path / "e.db")
    with pytest.raises(DbError, match="NOT NULL constraint failed: review_ratings.dimension"):
        tables.add(
            "run-1",
            "ann",
            rubric_id="r",
            ratings={"safety": 1, None: 2},
            verdicts={},
            note="",
            blind=True,
            bundle_hash=None,
        )
    assert read_reviews(tables.database) == []
    review = tables.add(
        "run-1",
        "ann",
        rubric_id="r",
        ratings={"safety": 1},
        verdicts={"safety": "judge_right"},
        note="n",
        blind=True,
        bundle_hash=None,
    )
    assert (review.revision, review.ratings, review.verdicts) == (1, {"safety": 1}, {"safety": "judge_right"})
    tables.close()


def test_the_review_writer_may_still_write_only_the_review_tables_through_sqlite_utils(tmp_path):
    tables = ReviewTables(tmp_path / "e.db")
    with pytest.raises(DbError, match="not authorized"), tables.database.transaction():
        tables.database.utils.table("ratings").insert(
            {"item_id": "i", "rater": "r", "rater_kind": "human", "dimension": "d", "value": "1"}
        )
    tables.close()


def test_sqlite_utils_leaves_recursive_triggers_off_so_a_replace_moves_a_run_once(tmp_path):
    store = Store(tmp_path / "e.db")
    assert store.db is store.database.utils
    assert store.conn.execute("PRAGMA recursive_triggers").fetchone()[0] == 0
    scorecards = store.db.table("scorecards")
    scorecards.insert({"run_id": "a", "scalar": 0.5})
    scorecards.insert({"run_id": "b", "scalar": 0.5})
    scorecards.insert({"run_id": "a", "scalar": 1.0}, replace=True)
    # on, the REPLACE's implicit delete would fire the delete trigger too, moving `a` twice
    assert store.conn.execute("SELECT run_id, seq FROM run_changes ORDER BY seq").fetchall() == [("b", 2), ("a", 3)]
    store.close()


def test_readers_on_an_older_file_see_its_missing_tables_as_empty(tmp_path):
    path = tmp_path / "old.db"
    open_write(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE probe_annotations")
    conn.execute("DROP TABLE label_samples")
    conn.commit()
    conn.close()
    with open_readonly(path) as ro:
        assert read_probe_annotations(ro) == []
        assert read_samples(ro) == []
        assert list(ro.query("SELECT count(*) AS n FROM probe_annotations")) == [{"n": 0}]


def test_a_query_error_is_one_line_naming_the_file(tmp_path):
    with open_readonly(_made(tmp_path)) as ro, pytest.raises(DbError, match="no such table: missing"):
        list(ro.query("SELECT * FROM missing"))


def _made(tmp_path):
    path = tmp_path / "e.db"
    open_write(path).close()
    return path


@pytest.mark.parametrize("command", [["annotations", "list"], ["review", "export"], ["compare"]])
def test_commands_that_import_nothing_heavy_read_without_sqlite_utils(tmp_path, command):
    path = _made(tmp_path)
    loaded = modules_loaded_by(
        "import sys; from evalkit.cli import cli; cli(sys.argv[2:] + ['--db', sys.argv[1]], standalone_mode=False)",
        str(path),
        *command,
    )
    assert "evalkit.db" in loaded
    assert among(loaded, ("sqlite_utils", "numpy", "pandas")) == []
