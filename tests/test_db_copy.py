"""A writer that closes leaves what it committed in the database file itself, even while another
process (a running ``evalkit view``) keeps the WAL alive: a copy of the file alone, the way people
copy a SQLite file, has every row."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys

from judge_helpers import write_runs


def _count(db, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def test_a_copy_of_the_file_alone_has_what_score_committed_while_a_reader_kept_it_open(tmp_path):
    runs = sorted(write_runs(tmp_path / "runs", 6).glob("*.jsonl"))
    db = tmp_path / "e.db"
    first = [sys.executable, "-m", "evalkit", "score", str(runs[0]), "--db", str(db), "--format", "jsonl"]
    subprocess.run(first, check=True, capture_output=True)
    reader = sqlite3.connect(db)  # a reader, as the view is: it keeps the WAL from being folded in at close
    reader.execute("SELECT count(*) FROM scorecards").fetchone()
    try:
        score = [sys.executable, "-m", "evalkit", "score", *map(str, runs), "--db", str(db), "--format", "jsonl"]
        subprocess.run(score, check=True, capture_output=True)
        assert (tmp_path / "e.db-wal").stat().st_size > 0  # the WAL is still there...
        shutil.copyfile(db, tmp_path / "copy.db")  # ...and the file alone is copied
    finally:
        reader.close()
    assert _count(tmp_path / "copy.db", "scorecards") == len(runs) == _count(db, "scorecards")
