"""Issue #9: 8 `evalkit score --db new.db` processes started together on a NEW database all store
their runs (before, 1–2 of them died "database is locked" while creating the schema).

The processes wait at a barrier — opening a FIFO for reading blocks until the test opens it for
writing, which releases all eight at once — so they really do open the new file together (with
the old code this failed in every trial); no timing is asserted."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest
from judge_helpers import write_runs

WRITERS = 8
RUNS_EACH = 25

PROBE = """
import os, sys
ready, go = sys.argv[1], sys.argv[2]
import evalkit.cli, evalkit.engines.pipeline, evalkit.present.score_output  # imported before the barrier: only the database work races
open(ready, "w").close()
open(go).close()  # blocks until the test opens the FIFO for writing
sys.argv = ["evalkit", "score", sys.argv[3], "--db", sys.argv[4], "--format", "csv", "--out", os.devnull]
evalkit.cli.main()
"""


@pytest.mark.slow
def test_eight_concurrent_first_time_writers_store_every_run(tmp_path):
    db = tmp_path / "new.db"
    go = tmp_path / "go"
    os.mkfifo(go)
    procs = []
    for w in range(WRITERS):
        runs = tmp_path / f"writer-{w}"
        write_runs(runs, RUNS_EACH, start=w * 1000)
        ready = tmp_path / f"ready-{w}"
        procs.append(
            (
                ready,
                subprocess.Popen(
                    [sys.executable, "-c", PROBE, str(ready), str(go), str(runs), str(db)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    try:
        while not all(ready.exists() for ready, _ in procs):
            assert all(p.poll() is None for _, p in procs), [p.communicate() for _, p in procs if p.poll() is not None]
            time.sleep(0.01)
        assert not db.exists()
        time.sleep(0.2)  # let the last one reach its open(): it would pass the barrier anyway, only later
        with open(go, "w"):  # held open until all have finished: a late reader still passes
            results = [(p.wait(timeout=300), p.communicate()) for _, p in procs]
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
    for code, (_, err) in results:
        assert code == 0, err
        assert "Traceback" not in err and "locked" not in err, err
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == WRITERS * RUNS_EACH
        assert conn.execute("SELECT COUNT(*) FROM scorecards").fetchone()[0] == WRITERS * RUNS_EACH
        assert conn.execute("SELECT COUNT(DISTINCT run_id) FROM commands").fetchone()[0] == WRITERS * RUNS_EACH
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
    finally:
        conn.close()
