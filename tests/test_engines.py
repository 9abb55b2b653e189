"""`--workers N` and the process pool: the same bytes as one worker, in the same order, with memory bounded."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest
from click.testing import CliRunner
from engine_helpers import make_corpus

from evalkit.cli import cli
from evalkit.engines import local as local_engine
from evalkit.engines.job import ScoreJob
from evalkit.engines.pipeline import score_files

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    """Batches of 4 files: the 63-file corpus becomes 16 tasks, so order across tasks is tested."""
    monkeypatch.setattr(local_engine, "BATCH_FILES", 4)


def score(args, stdin=None):
    result = CliRunner().invoke(cli, ["score", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def db_dump(path):
    conn = sqlite3.connect(path)
    try:
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
            for t in ("runs", "scorecards", "commands", "bundles")
        }
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", ["jsonl", "json", "table", "csv", "markdown"])
def test_two_workers_write_the_same_bytes_as_one(corpus, tmp_path, fmt):
    one = score([str(corpus), "--format", fmt, "--workers", "1", "--db", str(tmp_path / "1.db")])
    two = score([str(corpus), "--format", fmt, "--workers", "2", "--db", str(tmp_path / "2.db")])
    assert one[0] == two[0] == 1  # the bad file
    assert one[1] == two[1] and len(one[1]) > 1000
    assert one[2] == two[2]  # warnings and errors too, in the same order
    assert "half-written" in one[2] and "run-0030a-bad.jsonl:4" in one[2] and "'run-0001' was already read" in one[2]
    assert db_dump(tmp_path / "1.db") == db_dump(tmp_path / "2.db")


def test_aggregates_and_stdin_with_workers(corpus):
    stdin_file = corpus / "part-0" / "run-0002.jsonl"
    args = [str(corpus / "part-1"), "-", "--format", "json", "--aggregate", "--no-db"]
    one = score([*args, "--workers", "1"], stdin=stdin_file.read_text())
    two = score([*args, "--workers", "3"], stdin=stdin_file.read_text())
    assert one == two and '"groups"' in one[1]


def test_the_pool_really_runs_in_other_processes(corpus):
    stream = score_files([corpus], output="jsonl", workers=2)
    first = next(stream)
    assert multiprocessing.active_children(), "two workers must start a process pool"
    rest = list(stream)
    text = lambda items: [i.data if hasattr(i, "data") else str(i) for i in items]  # noqa: E731
    assert "".join(text([first, *rest])) == "".join(text(score_files([corpus], output="jsonl", workers=1)))


def test_in_flight_files_are_bounded(corpus, monkeypatch):
    """A consumer that has read one result has let at most workers × IN_FLIGHT_PER_WORKER batches be
    submitted: the file list is pulled lazily, not all at once."""
    pulled = []

    def sources():
        for i in range(400):
            pulled.append(i)
            yield str(sorted(corpus.rglob("run-00*.jsonl"))[i % 50])

    monkeypatch.setattr(local_engine, "IN_FLIGHT_PER_WORKER", 2)
    stream = local_engine.score_local(ScoreJob(), sources(), workers=2, batch_files=4)
    first = next(stream)
    assert len(pulled) <= 2 * 2 * 4 + 5  # four batches in flight, plus the first look-ahead
    assert len(first.paths) + sum(len(batch.paths) for batch in stream) == 400


def test_few_files_are_scored_in_process(corpus):
    before = len(multiprocessing.active_children())
    got = list(score_files([corpus / "part-0" / "run-0001.jsonl"], workers=2))
    assert len(got) == 1 and got[0].run_id
    assert len(multiprocessing.active_children()) == before


def test_workers_must_be_positive(corpus):
    code, _, err = score([str(corpus), "--workers", "0", "--no-db"])
    assert code == 2 and "--workers" in err


def test_ray_address_without_ray_engine_is_a_usage_error(corpus):
    code, _, err = score([str(corpus), "--ray-address", "127.0.0.1:6379", "--no-db"])
    assert code == 2 and "--engine ray" in err
