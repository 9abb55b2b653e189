"""A private scratch database: SQLite's own temporary file, deleted by SQLite when the connection
closes, whose pages stay in memory only up to its small page cache. For working sets that would
otherwise grow with the number of runs (the judge's results of one run)."""

from __future__ import annotations

import sqlite3


def scratch_connection() -> sqlite3.Connection:
    """A new connection to a private temporary database, autocommit, without a journal (a scratch
    file has nothing to roll back to)."""
    conn = sqlite3.connect("", isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    return conn
