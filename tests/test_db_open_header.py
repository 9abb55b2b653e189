"""A healthy database whose file is shorter than its header says: SQLite reads it (the missing pages
are in the WAL), so evalkit must too. This is what a checkpoint cut short leaves (a full disk:
page 1, with the new page count, is written first, the pages it counts never reach the file).
Before, evalkit read the header itself and refused the file as "truncated" until something else
opened it once: a user could delete a healthy database on the strength of that message.

What SQLite itself refuses stays a one-line error that says why in words.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from judge_helpers import write_runs

from evalkit.cli import cli
from evalkit.db import DbError, Store, open_readonly
from evalkit.engines.pipeline import score_files

RUNS = 6
IN_FILE = 2  # checkpointed before the others were written


def _wal_frames(wal: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    """(page size, [(page number, page)]) of a WAL file, in order."""
    page_size = int.from_bytes(wal[8:12], "big")
    frames, offset = [], 32
    while offset + 24 + page_size <= len(wal):
        frames.append((int.from_bytes(wal[offset : offset + 4], "big"), wal[offset + 24 : offset + 24 + page_size]))
        offset += 24 + page_size
    return page_size, frames


def _checkpoint_cut_short(tmp_path: Path) -> Path:
    """``tmp_path/cut/evalkit.db`` + its WAL (no -shm, nothing has opened them): RUNS runs, IN_FILE
    of them in the file, and page 1 of the file already the WAL's newest page 1."""
    store = Store(tmp_path / "live.db")
    store.conn.execute("PRAGMA wal_autocheckpoint = 0")
    cards = [c for c in score_files([write_runs(tmp_path / "runs", RUNS)])]
    store.save_many(cards[:IN_FILE])
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for card in cards[IN_FILE:]:
        store.save(card)
    cut = tmp_path / "cut"
    cut.mkdir()
    db, wal = cut / "evalkit.db", cut / "evalkit.db-wal"
    shutil.copyfile(tmp_path / "live.db-wal", wal)  # a snapshot as a crash would leave it
    shutil.copyfile(tmp_path / "live.db", db)
    store.close()
    page_size, frames = _wal_frames(wal.read_bytes())
    page_one = [page for number, page in frames if number == 1][-1]
    data = bytearray(db.read_bytes())
    data[:page_size] = page_one
    db.write_bytes(bytes(data))
    header_pages = int.from_bytes(page_one[28:32], "big")
    assert page_one[92:96] == page_one[24:28]  # the header's page count is marked valid
    assert db.stat().st_size < header_pages * page_size  # what the old pre-check called truncated
    return db


def _integrity(db: Path, tmp_path: Path) -> str:
    """sqlite3's integrity_check, on a copy: the file under test must stay unopened."""
    probe = tmp_path / "probe"
    probe.mkdir()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{db}{suffix}", probe / f"evalkit.db{suffix}")
    conn = sqlite3.connect(probe / "evalkit.db")
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_file_shorter_than_its_header_says_is_read_when_sqlite_reads_it(tmp_path):
    db = _checkpoint_cut_short(tmp_path)
    assert _integrity(db, tmp_path) == "ok"
    result = CliRunner().invoke(cli, ["audit", "--db", str(db), "--format", "json", "--resamples", "0"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["counts"]["scorecards"] == RUNS


def test_file_shorter_than_its_header_says_opens_for_writing_and_reading(tmp_path):
    db = _checkpoint_cut_short(tmp_path)
    with open_readonly(db) as database:
        assert database.one("SELECT COUNT(*) FROM scorecards")[0] == RUNS
    store = Store(db)
    try:
        assert len(list(store.iter_scorecards())) == RUNS
    finally:
        store.close()


def test_text_file_is_one_line_error_saying_it_is_not_a_database(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a database\n" * 20)
    for opener in (open_readonly, Store):
        try:
            opener(db).close()
        except DbError as exc:
            assert str(exc) == f"{db}: not a readable SQLite database (corrupt, truncated, or another kind of file)"
        else:
            raise AssertionError(f"{opener.__name__} opened a text file")


def test_truncated_file_sqlite_refuses_is_named_truncated(tmp_path):
    """No WAL holds the missing pages: SQLite refuses the file, and the header says why."""
    db = _checkpoint_cut_short(tmp_path)
    Path(f"{db}-wal").unlink()
    size = db.stat().st_size
    for opener in (open_readonly, Store):
        try:
            opener(db).close()
        except DbError as exc:
            assert str(exc).startswith(f"{db}: the database file is truncated ({size} bytes, its header says "), str(
                exc
            )
        else:
            raise AssertionError(f"{opener.__name__} opened a truncated file")
