"""A pool's workers leave their batches' bytes in files of a private spool directory and the parent
copies them with sendfile: the output is byte-identical to one worker whatever stdout is (a file,
a pipe, a file opened for appending, a stream without a descriptor), and the directory is gone
after the run, after a failure, and (for a run killed with kill -9) after a later run."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from engine_helpers import make_corpus

from evalkit.engines.spool import PREFIX, STALE_S, Spool, Spooled, spool_bytes, sweep

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="the spool is POSIX only")]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"), n=140)  # three batches of 64


def evalkit(args, tmp: Path, **popen) -> subprocess.CompletedProcess:
    """`evalkit ARGS` as a process of this tree, its temporary directory ``tmp``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "evalkit", *map(str, args)], env=env, timeout=120, **popen)


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv"])
def test_output_to_a_file_a_pipe_and_an_appended_file_is_byte_identical(corpus, tmp_path, fmt):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    args = ["score", corpus, "--format", fmt, "--no-db"]
    one = evalkit([*args, "--workers", "1"], tmp, capture_output=True).stdout
    with open(tmp_path / "two.out", "wb") as fh:  # a regular file: sendfile
        evalkit([*args, "--workers", "2"], tmp, stdout=fh, stderr=subprocess.DEVNULL)
    piped = evalkit([*args, "--workers", "2"], tmp, capture_output=True).stdout  # a pipe
    (tmp_path / "appended.out").write_bytes(b"before\n")
    with open(tmp_path / "appended.out", "ab") as fh:  # O_APPEND: sendfile refuses, written as bytes
        evalkit([*args, "--workers", "2"], tmp, stdout=fh, stderr=subprocess.DEVNULL)
    evalkit([*args, "--workers", "2", "--out", tmp_path / "out.file"], tmp, capture_output=True)
    assert one.count(b"\n") > 140
    assert (tmp_path / "two.out").read_bytes() == one and piped == one
    assert (tmp_path / "appended.out").read_bytes() == b"before\n" + one
    assert (tmp_path / "out.file").read_bytes() == one
    assert list(tmp.iterdir()) == [], "the spool directory is left behind"


def test_database_and_parquet_through_the_spool_leave_nothing(corpus, tmp_path):
    pytest.importorskip("pyarrow")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for w in ("1", "2"):
        done = evalkit(
            ["score", corpus, "--format", "jsonl", "--db", tmp_path / f"{w}.db", "--parquet", tmp_path / f"pq{w}"]
            + ["--workers", w],
            tmp,
            capture_output=True,
        )
        assert done.returncode == 1, done.stderr  # the corpus has a bad file
    files = sorted(p.relative_to(tmp_path / "pq1") for p in (tmp_path / "pq1").rglob("*.parquet"))
    assert files and all((tmp_path / "pq1" / f).read_bytes() == (tmp_path / "pq2" / f).read_bytes() for f in files)
    assert list(tmp.iterdir()) == []


def test_the_spool_is_removed_when_storing_fails(corpus, tmp_path, monkeypatch):
    from evalkit.db import DbError
    from evalkit.db.scores import Store
    from evalkit.engines.pipeline import score_files

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    store = Store(tmp_path / "s.db")

    def broken(batches):
        assert any(not isinstance(b.data, bytes) for b in batches)  # staged rows came as files
        raise DbError(str(tmp_path / "s.db"), "disk full")

    monkeypatch.setattr(store, "save_batches", broken)
    with pytest.raises(DbError):
        for _ in score_files([corpus], store=store, output="jsonl", encoding="utf-8", workers=2, batch=10):
            pass
    store.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(PREFIX)] == []


def test_a_spooled_piece_is_taken_once_and_copied_where_there_is_no_descriptor(tmp_path):
    piece = spool_bytes(str(tmp_path), b"finished bytes\n")
    out = io.BytesIO()  # no fileno: written through the stream
    piece.copy_to(out)
    assert out.getvalue() == b"finished bytes\n" and list(tmp_path.iterdir()) == []
    with pytest.raises(FileNotFoundError):
        piece.read()


def test_a_spooled_piece_shorter_than_announced_is_an_error(tmp_path):
    piece = spool_bytes(str(tmp_path), b"12345")
    with pytest.raises(OSError, match="holds 5 bytes, not 9"):
        Spooled(piece.path, 9).read()


def test_a_later_run_sweeps_only_stale_spools_of_processes_that_are_gone(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    old = time.time() - STALE_S - 60
    left = {
        "stale": tmp_path / f"{PREFIX}{dead}-abc",  # removed
        "recent": tmp_path / f"{PREFIX}{dead}-def",  # kept: a live run in another pid namespace?
        "alive": tmp_path / f"{PREFIX}{os.getpid()}-ghi",  # kept: its process runs
        "other": tmp_path / f"{PREFIX}notapid",  # kept: not named by a run
    }
    for name, path in left.items():
        path.mkdir()
        (path / "piece").write_bytes(b"x")
        if name != "recent":
            os.utime(path, (old, old))
    sweep(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for k, p in left.items() if k != "stale")


def test_a_spool_directory_is_private_and_made_only_when_used(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spool = Spool()
    spool.close()
    assert list(tmp_path.iterdir()) == []
    path = Path(spool.path)
    assert path.parent == tmp_path and path.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert path.stat().st_mode & 0o777 == 0o700
    spool_bytes(str(path), b"left")
    spool.close()
    assert list(tmp_path.iterdir()) == []
