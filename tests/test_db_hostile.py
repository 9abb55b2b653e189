"""Issue #9, database rows: a file that is not a usable evalkit database is a one-line error naming
the file (exit 1) for every command that opens one — never a sqlite3 traceback, and nothing
written into it."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "a320"

# Every command that opens the database, as the argument list before `--db FILE`.
COMMANDS = {
    "score": ["score", str(EXAMPLES), "--format", "csv"],
    "judge --dry-run": ["judge", "--model", "openai/judge-x", "--dry-run"],
    "cache stats": ["cache", "stats"],
    "audit": ["audit"],
    "report": ["report", "--markdown", "-"],
}


@pytest.fixture(scope="module")
def good_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("good") / "good.db"
    result = CliRunner().invoke(cli, ["score", str(EXAMPLES), "--db", str(db), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return db


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def assert_one_line_error(db: Path, expected: str, code: int = 1) -> None:
    """Every command: exit ``code``, one stderr line naming the file and saying ``expected``,
    no traceback, and the file left byte for byte as it was."""
    before = _digest(db)
    for name, args in COMMANDS.items():
        result = CliRunner().invoke(cli, [*args, "--db", str(db)])
        assert result.exit_code == code, (name, result.exit_code, result.stderr, result.exception)
        assert isinstance(result.exception, SystemExit), (name, result.exception)
        lines = [line for line in result.stderr.splitlines() if "warning:" not in line]
        assert len(lines) == 1, (name, result.stderr)
        assert str(db) in lines[0] and expected in lines[0], (name, lines[0])
        assert "Traceback" not in result.stderr and "sqlite3." not in result.stderr
        assert _digest(db) == before, name


def altered_copy(good_db: Path, db: Path, script: str) -> Path:
    """``db``: a copy of ``good_db`` with the SQL ``script`` run on it."""
    shutil.copy(good_db, db)
    conn = sqlite3.connect(db)
    try:
        conn.executescript(script)
    finally:
        conn.close()
    return db


def test_truncated_database_is_one_line_error(good_db, tmp_path):
    db = tmp_path / "truncated.db"
    data = good_db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    assert_one_line_error(db, "truncated")


def test_truncated_inside_the_header_is_one_line_error(good_db, tmp_path):
    db = tmp_path / "stub.db"
    db.write_bytes(good_db.read_bytes()[:60])
    assert_one_line_error(db, "not a readable SQLite database")


def test_random_bytes_are_one_line_error(tmp_path):
    db = tmp_path / "random.db"
    db.write_bytes(bytes(range(256)) * 64)
    assert_one_line_error(db, "not a readable SQLite database")


def test_corrupt_pages_are_one_line_error(good_db, tmp_path):
    """The header is intact, pages in the middle are garbage: SQLite notices only when it reads them."""
    db = tmp_path / "corrupt.db"
    data = bytearray(good_db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page * 1 : page * 30] = bytes((i * 151 + 7) % 256 for i in range(page * 29))
    db.write_bytes(bytes(data))
    assert_one_line_error(db, "corrupt")


def test_directory_is_one_line_error(tmp_path):
    db = tmp_path / "a-directory.db"
    db.mkdir()
    assert_one_line_error(db, "is a directory")


def test_missing_parent_directory_is_one_line_error(tmp_path):
    db = tmp_path / "no" / "such" / "dir" / "e.db"
    result = CliRunner().invoke(cli, [*COMMANDS["score"], "--db", str(db)])
    assert result.exit_code == 1, result.stderr
    assert result.stderr.strip() == f"error: {db}: cannot create the database: no such directory {str(db.parent)!r}"
    assert not db.parent.exists()
    # the commands that only read: a missing database is a usage error (exit 2), one line, no file made
    for name in ("judge --dry-run", "cache stats", "audit", "report"):
        result = CliRunner().invoke(cli, [*COMMANDS[name], "--db", str(db)])
        assert result.exit_code == 2, (name, result.stderr)
        assert str(db) in result.stderr and "Traceback" not in result.stderr, name
        assert not db.parent.exists(), name


def test_extra_not_null_column_is_one_line_error(good_db, tmp_path):
    db = altered_copy(
        good_db,
        tmp_path / "extra.db",
        "CREATE TABLE old_runs AS SELECT * FROM runs; DROP TABLE runs;"
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, path TEXT, scenario_id TEXT, scenario_title TEXT, model TEXT,"
        " provider TEXT, ts_utc TEXT, final_reason TEXT, status TEXT, bundle_hash TEXT, owner TEXT NOT NULL);"
        "INSERT INTO runs SELECT *, 'someone' FROM old_runs; DROP TABLE old_runs;",
    )
    assert_one_line_error(db, "table runs has a required column 'owner'")


def test_extra_column_with_default_is_accepted(good_db, tmp_path):
    """A column someone added with a default does not stop inserts: evalkit keeps working."""
    db = altered_copy(
        good_db, tmp_path / "extra-default.db", "ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT 'someone'"
    )
    result = CliRunner().invoke(cli, [*COMMANDS["score"], "--db", str(db)])
    assert result.exit_code == 0, result.stderr
    result = CliRunner().invoke(cli, ["audit", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.stderr


def test_newer_schema_version_is_one_line_error(good_db, tmp_path):
    db = altered_copy(good_db, tmp_path / "newer.db", "PRAGMA user_version = 99")
    assert_one_line_error(db, "made by a newer evalkit (schema version 99")


def test_empty_file_is_a_new_database(tmp_path):
    """A zero-byte file is what `touch` makes: SQLite treats it as a new database, so does evalkit."""
    db = tmp_path / "empty.db"
    db.touch()
    result = CliRunner().invoke(cli, [*COMMANDS["score"], "--db", str(db)])
    assert result.exit_code == 0, result.stderr
    assert os.path.getsize(db) > 0


def test_annotations_import_into_unusable_database_is_one_line_error(tmp_path):
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("item_id,rater,rater_kind,dimension,value\nr1,alice,human,outcome,pass\n", encoding="utf-8")
    random_db = tmp_path / "random.db"
    random_db.write_bytes(bytes(range(256)) * 64)
    directory = tmp_path / "dir.db"
    directory.mkdir()
    for db, expected in (
        (random_db, "not a readable SQLite database"),
        (directory, "is a directory"),
        (tmp_path / "none" / "e.db", "no such directory"),
    ):
        result = CliRunner().invoke(cli, ["annotations", "import", str(ratings), "--db", str(db)])
        assert result.exit_code == 1, (db, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {db}: "), result.stderr
        assert expected in result.stderr and "Traceback" not in result.stderr


def test_judge_dry_run_never_writes_the_database(good_db, tmp_path):
    """`judge --dry-run` opens the database read-only: the file is byte for byte unchanged."""
    db = tmp_path / "copy.db"
    shutil.copy(good_db, db)
    before = _digest(db)
    result = CliRunner().invoke(cli, [*COMMANDS["judge --dry-run"], "--db", str(db)])
    assert result.exit_code == 0, result.stderr
    assert _digest(db) == before
