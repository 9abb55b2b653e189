"""A pool worker's batch does not make the kernel hand it the same memory again and again: its
output is written into the spool piece by piece (the bytes of the joined text, without holding the
text or its bytes), and the allocator keeps what one batch freed for the next."""

from __future__ import annotations

import codecs
import os
import platform
import resource

import pytest
from engine_helpers import make_corpus

from evalkit.engines import local as local_engine
from evalkit.engines.job import ScoreJob, score_batch
from evalkit.engines.local import map_in_pool, started_pool
from evalkit.engines.spool import Spool, spool_text

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the spool is POSIX only")

TEXTS = ['{"run_id": "r-1", "say": "Grüße"}\n', "", '{"run_id": "r-2", "say": "日本語 ≠ 中文"}\n', "x" * 70_000]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "iso2022_jp_2", "latin-1"])
def test_text_spooled_piece_by_piece_is_the_bytes_of_the_joined_text(tmp_path, encoding):
    """Encoded as one stream: a byte-order mark once (utf-16), a shift state carried from piece to
    piece (ISO-2022)."""
    texts = TEXTS if encoding != "latin-1" else [t for t in TEXTS if t.isascii() or "ü" in t]
    want = "".join(texts).encode(encoding)
    got = spool_text(str(tmp_path), iter(texts), encoding)
    assert got.size == len(want) and got.read() == want
    assert codecs.lookup(encoding).name != "utf-16" or want.count(codecs.BOM_UTF16) == 1


def test_text_that_cannot_be_encoded_leaves_no_file_and_is_sent_as_text(tmp_path):
    assert spool_text(str(tmp_path), iter(["fine\n", "a lone \udc80 surrogate\n"]), "utf-8") is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv"])
def test_a_spooled_batch_is_the_output_of_the_batch_scored_in_process(tmp_path, fmt):
    files = sorted(str(p) for p in make_corpus(tmp_path / "runs", n=40).rglob("*.jsonl"))
    (here,) = score_batch(ScoreJob(output_format=fmt, encoding="utf-8", in_process=True), files)
    spool = Spool()
    try:
        (pooled,) = score_batch(ScoreJob(output_format=fmt, encoding="utf-8", spool=spool.path), files)
        assert pooled.pieces.output.read() == here.pieces.output
    finally:
        spool.close()


def test_a_batch_whose_text_cannot_be_encoded_goes_as_text_and_leaves_no_file(tmp_path):
    """Output text a strict encoder refuses (a lone surrogate) is sent as text, for the parent's
    stream to write with its own error handler."""
    from dataclasses import replace

    from evalkit.engines.job import finish_batch
    from evalkit.engines.worker import score_one

    files = sorted(str(p) for p in make_corpus(tmp_path / "runs", n=4).rglob("*.jsonl"))
    job = ScoreJob(output_format="jsonl", encoding="utf-8")
    scored = [score_one(job, f) for f in files]
    good = [s for s in scored if s.error is None]
    good[-1] = replace(good[-1], parts=('{"say": "a \udc80 b"}\n',))
    spool = Spool()
    try:
        (batch,) = finish_batch(replace(job, spool=spool.path), good)
        assert isinstance(batch.pieces.output, str) and batch.pieces.output.endswith('{"say": "a \udc80 b"}\n')
        assert not os.path.isdir(spool.path) or os.listdir(spool.path) == []
    finally:
        spool.close()


def churn(_: int) -> list[int]:
    """Page faults of three rounds of taking and freeing 20 MB in pieces under the allocator's
    mapping threshold (what a batch of cards does)."""
    rounds = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        held = [bytes(50_000) for _ in range(400)]
        del held
        rounds.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return rounds


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")
def test_a_pool_worker_keeps_the_memory_a_batch_freed_for_the_next(forked):
    with started_pool(2):
        (first, again, third), _ = map_in_pool(2, churn, [0, 1])
    assert first > 2000  # 20 MB is about 4,900 pages
    assert again < first / 4 and third < first / 4, (first, again, third)


@pytest.fixture
def forked(monkeypatch):
    """Workers forked, as in a command's process (no other thread when it starts them), even
    where an earlier test's pool thread is still winding down here."""
    import multiprocessing

    monkeypatch.setattr(local_engine, "_context", lambda: multiprocessing.get_context("fork"))
