"""Reads beside the caller's thread (evalkit.db.connect.Beside) and the bundles' one-row length read
the audit runs there: same results as the reads in the caller's thread, errors met where the result
is taken, no thread left running."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from audit_helpers import Annotator, card, save_cards

from evalkit.agreement.audit import build_audit
from evalkit.db import DbError, open_readonly
from evalkit.db.cells import odd_cells_by_table
from evalkit.db.connect import Beside, now
from evalkit.db.judge import read_bundle_hashes
from evalkit.db.pairwise import SIZES, read_bundle_sizes, read_judged_lengths


def judged_db(path, n=12):
    runs = [f"r{i:02d}" for i in range(n)]
    save_cards(path, [card(run, all_passed=i % 2 == 0) for i, run in enumerate(runs)])
    ann = Annotator(path)
    for run in runs:
        ann.add(run, {"outcome": "pass", "safety": 1, "procedure": 2}, judge="judge-a")
    ann.close()


def beside_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("evalkit-beside") and t.is_alive()]


def set_hash(path, rowid: int, sql: str) -> None:
    """Bundle ``rowid``'s hash (and its scorecard's) becomes ``sql`` of the old one (``h``), in SQL."""
    con = sqlite3.connect(path)
    con.execute(
        f"UPDATE scorecards SET bundle_hash = (SELECT {sql} FROM (SELECT bundle_hash AS h)) "
        "WHERE bundle_hash = (SELECT bundle_hash FROM bundles WHERE rowid = ?)",
        (rowid,),
    )
    con.execute(
        f"UPDATE bundles SET bundle_hash = (SELECT {sql} FROM (SELECT bundle_hash AS h)) WHERE rowid = ?", (rowid,)
    )
    con.commit()
    con.close()


@pytest.mark.parametrize(
    "sql",
    [
        "h",
        "h || char(0) || 'x'",  # a NUL inside the hash
        "h || '\"\\' || char(8232) || 'é' || char(1)",  # what JSON escapes, a line separator
    ],
)
def test_bundle_sizes_in_one_row_as_row_by_row(tmp_path, sql):
    path = tmp_path / "a.db"
    judged_db(path)
    set_hash(path, 2, sql)
    con = sqlite3.connect(path)
    con.execute("UPDATE bundles SET bundle = X'0102' WHERE rowid = 3")  # a blob bundle has no length
    con.commit()
    con.close()
    with open_readonly(path) as db:
        sizes = read_bundle_sizes(db)
        assert sizes == dict(db.tuples(SIZES)) and len(sizes) == 11
        bundles = read_bundle_hashes(db)
        assert read_judged_lengths(db, bundles, sizes) == read_judged_lengths(db, bundles) != {}


def test_bundle_sizes_none_where_a_hash_is_not_utf8(tmp_path):
    """The caller then reads row by row, and meets that read's own error."""
    path = tmp_path / "a.db"
    judged_db(path)
    set_hash(path, 2, "h || CAST(X'ff41' AS TEXT)")
    with open_readonly(path) as db:
        assert read_bundle_sizes(db) is None
        with pytest.raises(DbError, match="Could not decode to UTF-8 column 'bundle_hash'"):
            read_judged_lengths(db, {}, None)


def test_beside_reads_the_same_file_and_stops(tmp_path):
    path = tmp_path / "a.db"
    judged_db(path)
    with open_readonly(path) as db, Beside(db) as side:
        scans = side.submit(odd_cells_by_table, ["annotation_values"])
        hashes = side.submit(read_bundle_hashes)
        failing = side.submit(lambda other: other.one("SELECT * FROM no_such_table"))
        assert hashes.result() == read_bundle_hashes(db) and len(hashes.result()) == 12
        assert scans.result() == odd_cells_by_table(db, ["annotation_values"]) == {}
        with pytest.raises(DbError, match=r"a\.db: .*no such table: no_such_table"):
            failing.result()
    assert not beside_threads()


def test_beside_left_on_an_error_leaves_nothing_running(tmp_path):
    path = tmp_path / "a.db"
    judged_db(path, 200)
    started = threading.Event()

    def slow(other):
        started.set()
        # a long statement, interrupted when the block is left
        return other.one("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n")

    with pytest.raises(RuntimeError, match="the caller failed"), open_readonly(path) as db, Beside(db) as side:
        running = side.submit(slow)
        never = side.submit(read_bundle_hashes)
        started.wait(10)
        raise RuntimeError("the caller failed")
    assert not beside_threads()
    assert never.cancelled()
    with pytest.raises(DbError, match="interrupted"):
        running.result()


def test_now_raises_where_the_result_is_taken():
    def fail():
        raise DbError("x.db", "broken")

    done = now(fail)
    assert done.done()
    with pytest.raises(DbError, match="x.db: broken"):
        done.result()
    assert now(sorted, [2, 1]).result() == [1, 2]


def test_audit_leaves_no_reader_running(tmp_path):
    path = tmp_path / "a.db"
    judged_db(path)
    audit = build_audit(path, n_resamples=0)
    assert audit["counts"]["annotations"] == 12 and audit["warnings"] == []
    assert not beside_threads()
