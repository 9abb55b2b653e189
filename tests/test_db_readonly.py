"""Issue #9: the commands that only read work on a read-only database — file 0444, directory not
writable, WAL mode — and give the same output as on a writable copy; nothing is written.

File permissions do not bind root, so when the tests run as root the commands run as `nobody`
through util-linux `setpriv` (a real unprivileged process, not a simulation)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from readonly_helpers import needs_unprivileged, shared_directory
from readonly_helpers import unprivileged as as_nobody
from report_fixtures import build_db

from evalkit.cli import cli

# `judge --dry-run` opens the database the same way (evalkit.db.open_readonly) but imports litellm
# (seconds per process), so it is checked in-process in test_db_hostile.py, not here.
READERS = {
    "audit": ["audit", "--format", "json", "--resamples", "50"],
    "report": ["report", "--markdown", "-"],
    "cache stats": ["cache", "stats", "--format", "json"],
}
# the working tree on the path: otherwise a process run elsewhere imports the installed evalkit
ENV = {**os.environ, "SOURCE_DATE_EPOCH": "1764547200", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}


pytestmark = [pytest.mark.slow, needs_unprivileged]


def _reference(args: list[str], monkeypatch) -> str:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", ENV["SOURCE_DATE_EPOCH"])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _run(args: list[str], cwd: Path, unprivileged: bool) -> subprocess.CompletedProcess:
    prefix = as_nobody() if unprivileged else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "evalkit", *args], cwd=cwd, env=ENV, capture_output=True, text=True
    )


@pytest.fixture()
def shared_dir():
    with shared_directory("evalkit-ro-") as path:
        yield path


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def _with_config(args: list[str], shared_dir: Path) -> list[str]:
    """The audit prints its config file's path; name one file both runs read, since the process run
    as `nobody` may import an installed evalkit whose default config lives elsewhere."""
    if args[0] != "audit":
        return args
    config = shared_dir / "pairings.toml"
    config.write_text("# defaults only\n", encoding="utf-8")
    config.chmod(0o644)
    return [*args, "--pairings", str(config)]


def _make(shared_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(a writable reference database, a read-only copy in a read-only directory), both WAL."""
    reference = build_db(tmp_path, humans=True)
    conn = sqlite3.connect(reference)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    ro_dir = shared_dir / "ro"
    ro_dir.mkdir()
    shutil.copy(reference, ro_dir / "evalkit.db")
    (ro_dir / "evalkit.db").chmod(0o444)
    ro_dir.chmod(0o555)
    return reference, ro_dir / "evalkit.db"


def test_readers_work_on_readonly_file_in_readonly_directory(shared_dir, tmp_path, monkeypatch):
    reference, ro_db = _make(shared_dir, tmp_path)
    before = _digest(ro_db.parent)
    for name, args in READERS.items():
        args = _with_config(args, shared_dir)
        got = _run([*args, "--db", str(ro_db)], shared_dir, unprivileged=True)
        assert got.returncode == 0, (name, got.stderr)
        assert "readonly" not in got.stderr and "Traceback" not in got.stderr, (name, got.stderr)
        assert got.stdout == _reference([*args, "--db", str(reference)], monkeypatch), name
        assert got.stdout.strip(), name
    assert _digest(ro_db.parent) == before  # no -wal / -shm made, nothing changed


def test_readers_work_on_readonly_file_in_writable_directory(shared_dir, tmp_path, monkeypatch):
    reference, ro_db = _make(shared_dir, tmp_path)
    ro_db.parent.chmod(0o777)  # nobody may create the WAL index beside the 0444 file
    args = _with_config(READERS["audit"], shared_dir)
    got = _run([*args, "--db", str(ro_db)], shared_dir, unprivileged=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout == _reference([*args, "--db", str(reference)], monkeypatch)
    assert stat.S_IMODE(ro_db.stat().st_mode) == 0o444


def test_writers_on_readonly_database_fail_with_one_line(shared_dir, tmp_path):
    """`score` into a read-only file is a one-line error naming it, not a traceback."""
    _, ro_db = _make(shared_dir, tmp_path)
    examples = Path(__file__).resolve().parent.parent / "examples" / "a320"
    got = _run(["score", str(examples), "--format", "csv", "--db", str(ro_db)], shared_dir, unprivileged=True)
    assert got.returncode == 1, got.stderr
    errors = [line for line in got.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(ro_db) in errors[0], got.stderr
    assert "Traceback" not in got.stderr
