"""sqlite-utils on evalkit's own connection (`Database.utils`, `Store.db`): its writes inside an
evalkit transaction are all or nothing with it, the connection keeps evalkit's settings, and its
reads see what evalkit's readers see (a read-only file's TEMP views and tables)."""

from __future__ import annotations

import pytest

from evalkit.db import DbError, Store, open_readonly, open_write


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


def test_a_query_error_is_one_line_naming_the_file(tmp_path):
    with open_readonly(_made(tmp_path)) as ro, pytest.raises(DbError, match="no such table: missing"):
        list(ro.query("SELECT * FROM missing"))


def _made(tmp_path):
    path = tmp_path / "e.db"
    open_write(path).close()
    return path
