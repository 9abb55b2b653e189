"""Opening a database another process is writing: SQLite decides, under its busy timeout.

A writer that keeps committing and checkpointing its WAL rewrites the file's header (page 1, with
the new page count) before the pages it counts reach the file; a raw read of the header between
the two sees a file "shorter than its header says". Before, evalkit read that header itself and
refused a healthy database (thousands of times in a long trial); a reader must never be refused.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalkit.db import DbError, Store, open_readonly

pytestmark = pytest.mark.slow

# Commits a few pages at a time, each followed by a checkpoint that grows the file, until killed.
WRITER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("CREATE TABLE IF NOT EXISTS filler (x TEXT)")
open(sys.argv[2], "w").close()
i = 0
while True:
    conn.execute("INSERT INTO filler VALUES (?)", ("x" * 400000,))
    i += 1
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)" if i % 2 else "PRAGMA wal_checkpoint(PASSIVE)")
    if i % 20 == 0:
        conn.execute("DELETE FROM filler")  # the file shrinks at the next checkpoint: the race both ways
"""

SECONDS = 2.5


def _start_writer(db: Path, tmp_path: Path) -> subprocess.Popen:
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not ready.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    return proc


def _open_repeatedly(db: Path, tmp_path: Path, opener) -> tuple[int, list[str]]:
    Store(db).close()  # the evalkit schema exists before the writer starts
    writer = _start_writer(db, tmp_path)
    attempts, refused = 0, []
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline:
            attempts += 1
            try:
                opener(db).close()
            except DbError as exc:
                refused.append(str(exc))
    finally:
        writer.kill()
        writer.wait()
    return attempts, refused


def test_reader_opened_while_another_process_checkpoints_is_never_refused(tmp_path):
    attempts, refused = _open_repeatedly(tmp_path / "live.db", tmp_path, open_readonly)
    assert attempts > 50
    assert refused == [], f"{len(refused)} of {attempts} opens refused, first: {refused[0]}"


def test_store_opened_while_another_process_checkpoints_is_never_refused(tmp_path):
    attempts, refused = _open_repeatedly(tmp_path / "live.db", tmp_path, Store)
    assert attempts > 50
    assert refused == [], f"{len(refused)} of {attempts} opens refused, first: {refused[0]}"
