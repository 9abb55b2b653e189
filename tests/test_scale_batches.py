"""A batched job's results come one object per batch (ScoredBatch), the batches shrink toward the
end (guided_batches), and the parent handles a clean batch whole: the same bytes and the same
warnings, in the same order, as scoring one file at a time."""

from __future__ import annotations

import io
import pickle

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.engines import local as local_engine
from evalkit.engines.job import ScoredBatch, ScoreJob, score_batch
from evalkit.engines.local import SMALLEST_BATCH, guided_batches
from evalkit.present.score_output import ScoreWriter
from evalkit.trajectory.builders import a320_scenario, cmd, dumps_jsonl, read, trajectory, write_jsonl


def sizes(total, size=256, workers=2, known=True):
    return [len(b) for b in guided_batches(range(total), size, workers, total if known else None)]


def test_guided_batches_keep_every_item_in_order():
    items = list(range(3000))
    assert [x for b in guided_batches(items, 256, 2, 3000) for x in b] == items


def test_guided_batches_shrink_toward_the_end():
    got = sizes(3000)
    assert got[0] == 256 and max(got) == 256 and sum(got) == 3000
    assert got == sorted(got, reverse=True)  # never larger than the batch before
    assert got[-2] == SMALLEST_BATCH and got[-1] <= SMALLEST_BATCH  # the last ones are small


def test_guided_batches_give_each_of_many_workers_a_share_from_the_start():
    got = sizes(3000, workers=16)
    assert got[0] == 94 and len(got) >= 32  # 3000 / (2 × 16), rounded up: every worker has work twice over


def test_guided_batches_of_an_unknown_total_are_all_full():
    assert sizes(1000, size=64, known=False) == [64] * 15 + [40]


def test_guided_batches_of_a_small_total():
    assert sizes(10) == [10] and sizes(0) == [] and sizes(40, size=8) == [8] * 5


def test_guided_batches_never_exceed_the_largest_size():
    assert max(sizes(100, size=4)) == 4 and sum(sizes(100, size=4)) == 100


def make_runs(root):
    """Files a–f, named so they sort in this order: a clean run, a half-written one (a reader
    warning), the same scenario id with other content (the aggregate's warning), a run_id read
    again, a bad file, and a clean run."""
    one, two = a320_scenario(), a320_scenario()
    two["ground_truth"]["procedure"][1]["actions"][1]["value"] = 0
    write_jsonl(root / "a.jsonl", trajectory(one, [read(), cmd("ext_pwr", 1)], run_id="r-a"))
    (root / "b.jsonl").write_text(
        dumps_jsonl(trajectory(one, [cmd("ext_pwr", 1)], run_id="r-b")) + '{"type": "final", "re', encoding="utf-8"
    )
    write_jsonl(root / "c.jsonl", trajectory(two, [cmd("ext_pwr", 1)], run_id="r-c"))
    write_jsonl(root / "d.jsonl", trajectory(one, [cmd("apu_gen", 0)], run_id="r-a", model="other"))
    (root / "e.jsonl").write_text("{not json\n", encoding="utf-8")
    write_jsonl(root / "f.jsonl", trajectory(one, [read()], run_id="r-f"))
    return root


def score(root, workers, *extra):
    result = CliRunner().invoke(
        cli, ["score", str(root), "--format", "jsonl", "--no-db", "--workers", str(workers), *extra]
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def pooled(monkeypatch):
    """Six files make a pool's work: one batch of them all (``one``) or batches of one (``each``)."""

    def batches(size):
        monkeypatch.setattr(local_engine, "POOL_FILES", 1)
        monkeypatch.setattr(local_engine, "SMALLEST_BATCH", 1)
        monkeypatch.setattr(local_engine, "BATCH_FILES", size)

    return batches


def test_warnings_inside_one_batch_come_in_the_one_by_one_order(tmp_path, pooled):
    root = make_runs(tmp_path)
    alone = score(root, 1)
    pooled(6)
    together = score(root, 2)
    assert together == alone and alone[0] == 1
    lines = [
        line for line in alone[2].splitlines() if "b.jsonl" in line or "different content" in line or "r-a" in line
    ]
    assert "b.jsonl" in lines[0] and "different content" in lines[1] and "already read from" in lines[2]


def test_batches_of_one_file_in_a_pool_write_what_one_worker_writes(tmp_path, pooled):
    root = make_runs(tmp_path)
    alone = score(root, 1, "--format", "json")
    pooled(1)
    assert score(root, 2, "--format", "json") == alone


def test_a_clean_batch_with_two_contents_of_a_scenario_warns_as_one_by_one(tmp_path, pooled):
    """A batch without reader warnings, errors or a run_id read again is handled whole: its
    scenarios are noted once each, in the order they first occur."""
    one, two = a320_scenario(), a320_scenario()
    two["ground_truth"]["procedure"][1]["actions"][1]["value"] = 0
    for i, sc in enumerate([one, one, two, one, two]):
        write_jsonl(tmp_path / f"r{i}.jsonl", trajectory(sc, [cmd("ext_pwr", 1)], run_id=f"r{i}"))
    alone = score(tmp_path, 1)
    pooled(5)
    together = score(tmp_path, 2)
    assert together == alone and alone[0] == 0
    assert alone[2].count("occurs with different content") == 1


def test_a_run_id_twice_inside_one_clean_batch_is_still_said(tmp_path, pooled):
    sc = a320_scenario()
    for name, run_id in (("a", "same"), ("b", "other"), ("c", "same")):
        write_jsonl(tmp_path / f"{name}.jsonl", trajectory(sc, [cmd("ext_pwr", 1)], run_id=run_id))
    alone = score(tmp_path, 1)
    pooled(3)
    assert score(tmp_path, 2) == alone and "run_id 'same' was already read from" in alone[2]


def test_a_batch_of_only_bad_files_has_no_pieces(tmp_path):
    (tmp_path / "x.jsonl").write_text("{not json\n", encoding="utf-8")
    (batch,) = score_batch(ScoreJob(output_format="jsonl"), [str(tmp_path / "x.jsonl")] * 2)
    assert batch.pieces is None and sorted(batch.errors) == [0, 1] and batch.good == 0
    assert sorted(batch.errors) == [0, 1] and batch.pieces is None


def test_a_scored_batch_goes_through_pickle_whole(tmp_path):
    make_runs(tmp_path)
    files = sorted(str(p) for p in tmp_path.glob("*.jsonl"))
    (batch,) = score_batch(ScoreJob(output_format="jsonl", encoding="utf-8"), files)
    back = pickle.loads(pickle.dumps(batch))
    assert isinstance(back, ScoredBatch) and back.paths == files and back.run_ids == batch.run_ids
    assert back.warnings.keys() == {1} and back.errors.keys() == {4} and back.pieces.output == batch.pieces.output


def test_a_surrogateescape_stdout_takes_the_workers_bytes():
    """Python's stdout under the C and C.UTF-8 locales (most containers) is UTF-8 with
    surrogateescape: a worker's strictly encoded bytes are what it would write."""
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    assert ScoreWriter(stream, "jsonl").encoding == "utf-8"


def test_text_with_a_lone_surrogate_is_written_by_the_streams_own_handler():
    text = '{"say": "a\udc80b"}\n'
    with pytest.raises(UnicodeEncodeError):
        text.encode("utf-8")  # so the worker sends it as text, not bytes
    streams = [io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape") for _ in range(2)]
    ScoreWriter(streams[0], "jsonl").write_batch(text, 1)
    ScoreWriter(streams[1], "jsonl").write_text(text)
    for s in streams:
        s.flush()
    assert streams[0].buffer.getvalue() == streams[1].buffer.getvalue() == b'{"say": "a\x80b"}\n'


def test_a_database_write_interrupted_by_ctrl_c_is_written_again_on_the_way_out(tmp_path, monkeypatch):
    """The rows of a write that Ctrl-C cut short (rolled back) stay queued: the stream's last
    write stores them, so every card the consumer was given is in the database."""
    import sqlite3

    from evalkit.db.scores import Store
    from evalkit.engines.pipeline import score_files
    from evalkit.errors import InputError

    make_runs(tmp_path / "runs")
    store = Store(tmp_path / "s.db")
    real = store.save_batches
    calls = []

    def cut_once(batches):
        calls.append(len(batches))
        if len(calls) == 1:
            raise KeyboardInterrupt
        real(batches)

    monkeypatch.setattr(store, "save_batches", cut_once)
    given = []
    with pytest.raises(KeyboardInterrupt):
        for card in score_files([tmp_path / "runs"], store=store, batch=1):
            given += [] if isinstance(card, InputError) else [card.run_id]
    store.close()
    stored = {r for (r,) in sqlite3.connect(tmp_path / "s.db").execute("SELECT run_id FROM runs")}
    assert len(calls) == 2 and given and set(given) <= stored


def test_one_process_scores_sixteen_files_a_batch_with_the_one_by_one_result(tmp_path, monkeypatch):
    """With one worker, files are scored LOCAL_FILES at a time (a batch's fixed cost shared): the
    output, the warnings, the errors and the database are those of one file at a time."""
    import sqlite3

    root = make_runs(tmp_path / "runs")
    assert local_engine.LOCAL_FILES == 16
    calls = []
    real = local_engine.score_batch

    def counting(job, sources):
        calls.append(len(sources))
        return real(job, sources)

    monkeypatch.setattr(local_engine, "score_batch", counting)
    results = {}
    for each in (16, 1):
        monkeypatch.setattr(local_engine, "LOCAL_FILES", each)
        db = tmp_path / f"{each}.db"
        results[each] = [score(root, 1, "--format", fmt) for fmt in ("jsonl", "json", "csv")]
        stored = CliRunner().invoke(cli, ["score", str(root), "--format", "jsonl", "--db", str(db), "--workers", "1"])
        results[each].append((stored.exit_code, stored.stdout, stored.stderr.replace(str(db), "DB")))
        with sqlite3.connect(db) as conn:
            results[each].append(
                {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in ("runs", "commands")}
            )
    assert calls[:1] == [6] and set(calls[-5:]) == {1}  # all six files at once, then one at a time
    assert results[16] == results[1]
    assert results[1][0][0] == 1 and "already read from" in results[1][0][2]


def test_a_batch_scored_where_it_is_written_keeps_its_rows_as_they_are(tmp_path):
    """In this process a batch's database rows go to executemany and its Parquet rows stay rows;
    the same batch for another process is staged (a staging database, an Arrow table)."""
    pytest.importorskip("pyarrow")
    from dataclasses import replace

    from evalkit.db.scores import BatchRows, StagedRows, can_stage
    from evalkit.output.parquet import ArrowRows

    root = make_runs(tmp_path)
    files = sorted(str(p) for p in root.glob("*.jsonl"))
    job = ScoreJob(output_format="jsonl", db_rows=True, parquet_rows=True)
    (here,) = score_batch(replace(job, in_process=True), files)
    (sent,) = score_batch(job, files)
    assert isinstance(here.pieces.rows, BatchRows) and isinstance(here.pieces.parquet, list)
    assert isinstance(sent.pieces.parquet, ArrowRows)
    assert isinstance(sent.pieces.rows, StagedRows if can_stage() else BatchRows)
    assert here.pieces.output == sent.pieces.output
