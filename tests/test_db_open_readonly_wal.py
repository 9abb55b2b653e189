"""A read-only directory after a writer was killed with -9: its committed transactions are still in
the ``-wal`` file, and the readers (``audit``, ``report``) must see every one of them. Before,
they opened the file ``immutable=1`` and silently showed only what the last checkpoint had copied.

File permissions do not bind root, so when the tests run as root the readers run as ``nobody``
through util-linux ``setpriv`` (a real unprivileged process in a really read-only directory, not a
simulation); the working tree is put on its PYTHONPATH so that it is this evalkit that runs.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_helpers import write_runs
from readonly_helpers import needs_unprivileged, shared_directory, unprivileged

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, needs_unprivileged]

COMMITTED = 12
CHECKPOINTED = 4  # the first runs reach the file itself; the others stay in the WAL

# Scores runs one transaction each with automatic checkpoints off, then starts one more
# transaction and waits to be killed inside it.
WRITER = r"""
import sys
from evalkit.engines.pipeline import score_files
from evalkit.db import Store
runs, db, ready, checkpointed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = Store(db)
store.conn.execute("PRAGMA wal_autocheckpoint = 0")
for i, card in enumerate(score_files([runs])):
    store.save(card)
    if i + 1 == checkpointed:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
store.conn.execute("BEGIN IMMEDIATE")
store.conn.execute("INSERT INTO ratings VALUES ('x', 'never', 'human', 'outcome', '1', NULL, NULL)")
open(ready, "w").close()
import time
time.sleep(600)
"""


@pytest.fixture()
def shared_dir():
    with shared_directory("evalkit-wal-") as path:
        yield path


def _crashed_writer_db(shared_dir: Path) -> Path:
    """``shared_dir/data/evalkit.db`` with COMMITTED runs, most of them only in its WAL, left by a
    writer killed with -9 inside a transaction; the directory is then made read-only."""
    runs = write_runs(shared_dir / "runs", COMMITTED)
    data = shared_dir / "data"
    data.mkdir()
    db = data / "evalkit.db"
    ready = shared_dir / "ready"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(runs), str(db), str(ready), str(CHECKPOINTED)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not ready.exists():
            assert writer.poll() is None, writer.communicate()
            time.sleep(0.02)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert (data / "evalkit.db-wal").stat().st_size > 0
    for p in data.iterdir():
        p.chmod(0o644)
    data.chmod(0o555)
    return db


def _in_file_alone(db: Path) -> int:
    """Runs the database file holds without its WAL (what an immutable reader sees)."""
    conn = sqlite3.connect(db.as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM scorecards").fetchone()[0]
    finally:
        conn.close()


def _read(args: list[str], db: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    prefix = unprivileged()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": "1764547200", **(env or {})}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "evalkit", *args, "--db", str(db)],
        cwd=db.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _assert_sees_every_committed_run(db: Path, env: dict | None = None) -> None:
    audit = _read(["audit", "--format", "json", "--resamples", "0"], db, env)
    assert audit.returncode == 0, audit.stderr
    assert json.loads(audit.stdout)["counts"]["scorecards"] == COMMITTED
    report = _read(["report", "--markdown", "-"], db, env)
    assert report.returncode == 0, report.stderr
    assert f"{COMMITTED} runs ({COMMITTED} scored)" in report.stdout


def test_readers_in_read_only_directory_see_runs_a_killed_writer_left_in_the_wal(shared_dir):
    db = _crashed_writer_db(shared_dir)
    assert (db.parent / "evalkit.db-shm").exists()
    assert _in_file_alone(db) == CHECKPOINTED  # the lie the readers used to tell
    before = sorted((p.name, p.read_bytes()) for p in db.parent.iterdir())
    _assert_sees_every_committed_run(db)
    assert sorted((p.name, p.read_bytes()) for p in db.parent.iterdir()) == before


def test_readers_read_the_wal_through_a_copy_when_there_is_no_shm_file(shared_dir):
    """No -shm (e.g. the pair was copied without it): SQLite cannot build the WAL index in the
    read-only directory, so the file and its WAL are read from a temporary copy."""
    db = _crashed_writer_db(shared_dir)
    db.parent.chmod(0o755)
    (db.parent / "evalkit.db-shm").unlink()
    db.parent.chmod(0o555)
    tmp = shared_dir / "tmp"
    tmp.mkdir(mode=0o777)
    tmp.chmod(0o777)
    _assert_sees_every_committed_run(db, {"TMPDIR": str(tmp)})
    assert sorted(p.name for p in db.parent.iterdir()) == ["evalkit.db", "evalkit.db-wal"]
    assert list(tmp.iterdir()) == []  # the copy is gone once the reader closed it


def test_readers_say_what_was_not_read_when_the_wal_cannot_be_read(shared_dir):
    """No -shm and the WAL cannot be copied either (here it is unreadable to the reader): one line
    saying how much was not read and why, never a report on the file alone."""
    db = _crashed_writer_db(shared_dir)
    db.parent.chmod(0o755)
    (db.parent / "evalkit.db-shm").unlink()
    wal = db.parent / "evalkit.db-wal"
    wal.chmod(0o600 if os.geteuid() == 0 else 0o000)
    db.parent.chmod(0o555)
    wal_bytes = wal.stat().st_size
    for args in (["audit", "--format", "json"], ["report", "--markdown", "-"]):
        result = _read(args, db)
        assert result.returncode == 1, (args, result.stdout)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert str(db) in lines[0] and f"evalkit.db-wal holds {wal_bytes} bytes" in lines[0], lines[0]
        assert "the directory is read-only" in lines[0] and "Permission denied" in lines[0], lines[0]
        assert result.stdout == ""


def test_read_only_directory_without_a_wal_is_read_as_before(shared_dir):
    """A cleanly closed database (no -wal): immutable is exact, and nothing is copied."""
    runs = write_runs(shared_dir / "runs", 3)
    data = shared_dir / "data"
    data.mkdir()
    db = data / "evalkit.db"
    score = subprocess.run(
        [sys.executable, "-m", "evalkit", "score", str(runs), "--db", str(db), "--format", "csv", "--out", os.devnull],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert score.returncode == 0, score.stderr
    assert not (data / "evalkit.db-wal").exists()
    data.chmod(0o555)
    audit = _read(["audit", "--format", "json", "--resamples", "0"], db)
    assert audit.returncode == 0, audit.stderr
    assert json.loads(audit.stdout)["counts"]["scorecards"] == 3
